"""The KMS API's repositories on SQLite and PostgreSQL: AWS key pairs (the secret sealed, gone
with its token) and aliases (one name for one key, gone with the key)."""

import contextlib
import threading
from collections.abc import Iterator

import pytest

from app.store import AliasedNameError, KeyExistsError, KeyNotFoundError, KeyStore, TokenRecord
from app.store.aws_credentials import SECRET_TYPE
from tests.app.store.stores import at_once


def test_aws_credentials_sealed_and_revoked_with_their_token(store: KeyStore) -> None:
    record = TokenRecord("0123456789abcdef", b"h" * 32, "", ("*",), ("read",), 1.0, None)
    store.tokens.add(record)
    secret = b"s3cr3t-access-key-of-forty-characters-xx"
    store.aws_credentials.add("AKIAABCDEFGHIJKLMNOP", record.id, secret)
    found = store.aws_credentials.get("AKIAABCDEFGHIJKLMNOP")
    assert found is not None
    assert (found.token, found.secret) == (record, secret)
    assert store.aws_credentials.get("AKIAQQQQQQQQQQQQQQQQ") is None
    with store.database.transaction(write=False) as cursor:
        cursor.execute("SELECT sealed FROM aws_credentials")
        row = cursor.fetchone()
    assert row is not None and secret not in bytes(row[0])
    assert SECRET_TYPE.encode() not in bytes(row[0])
    store.tokens.delete(record.id)
    assert store.aws_credentials.get("AKIAABCDEFGHIJKLMNOP") is None


def test_a_key_pair_for_a_token_revoked_meanwhile_is_not_kept(
    store: KeyStore, store_url: str
) -> None:
    """A token's key pair stored while the token is revoked (with its parent, say): kept and
    gone with the token, or not kept (False), never a foreign-key error."""
    for attempt in range(5):
        record = TokenRecord(f"{attempt:016x}", b"h" * 32, "", ("*",), ("read",), 1.0, None)
        store.tokens.add(record)
        calls = iter(range(8))

        def act(
            on: KeyStore,
            token_id: str = record.id,
            calls: Iterator[int] = calls,
            attempt: int = attempt,
        ) -> bool:
            call = next(calls)
            if call == 0:
                on.tokens.delete(token_id)
                return False
            return on.aws_credentials.add(f"AKIA{attempt}{call:015}", token_id, b"s" * 40)

        at_once(store, store_url, act, processes=8)
        assert all(
            store.aws_credentials.get(f"AKIA{attempt}{call:015}") is None for call in range(8)
        )
    assert not store.aws_credentials.add("AKIAZZZZZZZZZZZZZZZZ", "no-such-token", b"s" * 40)


def test_aliases(store: KeyStore) -> None:
    for name in ("k1", "k2"):
        store.keys.create(name, "hmac", {}, False, b"x" * 64, None)
    store.kms_aliases.add("alias/a", "k1")
    with pytest.raises(KeyExistsError):
        store.kms_aliases.add("alias/a", "k2")
    with pytest.raises(KeyExistsError):  # every key is alias/<its name> already
        store.kms_aliases.add("alias/k2", "k1")
    with pytest.raises(KeyNotFoundError):
        store.kms_aliases.add("alias/b", "none")
    for i in range(3):
        store.kms_aliases.add(f"alias/b{i}", "k2")
    assert store.kms_aliases.point("alias/a", "k2")
    assert not store.kms_aliases.point("alias/none", "k2")
    alias = store.kms_aliases.get("alias/a")
    assert alias is not None and alias.key_name == "k2"
    assert [a.name for a in store.kms_aliases.list(None, 2)] == ["alias/a", "alias/b0"]
    assert [a.name for a in store.kms_aliases.list("alias/b0", 10, "k2")] == [
        "alias/b1",
        "alias/b2",
    ]
    assert store.kms_aliases.delete("alias/b0") and not store.kms_aliases.delete("alias/b0")
    store.keys.delete("k2")
    assert store.kms_aliases.list(None, 10) == []


def test_a_key_may_not_take_an_aliass_name(store: KeyStore) -> None:
    """Every key is also `alias/<its name>`: a key made after an alias of its name would be
    reached through the alias's key instead."""
    store.keys.create("mine", "hmac", {}, False, b"x" * 64, None)
    store.kms_aliases.add("alias/payments", "mine")
    with pytest.raises(AliasedNameError, match="alias/payments"):
        store.keys.create("payments", "hmac", {}, False, b"x" * 64, None)
    with pytest.raises(KeyNotFoundError):
        store.keys.get("payments")
    store.kms_aliases.delete("alias/payments")
    store.keys.create("payments", "hmac", {}, False, b"x" * 64, None)


def test_keys_and_aliases_made_at_once_never_share_a_name(store: KeyStore, store_url: str) -> None:
    """Four processes, each making for every name either the key or the alias, at once: for
    no name are both made."""
    store.keys.create("target", "hmac", {}, False, b"x" * 64, None)
    names = [f"raced-{i}" for i in range(40)]
    counter = iter(range(4))
    lock = threading.Lock()

    def make(opened: KeyStore) -> None:
        with lock:
            process = next(counter)
        for i, name in enumerate(names):
            with contextlib.suppress(KeyExistsError):
                if (process + i) % 2:
                    opened.kms_aliases.add(f"alias/{name}", "target")
                else:
                    opened.keys.create(name, "hmac", {}, False, b"x" * 64, None)

    at_once(store, store_url, make)
    aliased = {a.name.removeprefix("alias/") for a in store.kms_aliases.list(None, 100)}
    keys = {k.name for k in store.keys.list(None, 100)}
    assert aliased | keys >= set(names)
    assert not aliased & keys


def test_aliases_of_the_keys_a_token_matches(store: KeyStore) -> None:
    """A narrow token's listing asks for the aliases of the keys its patterns match (a scope of
    one group, nothing excluded): the other tenants' aliases stay in the database."""
    for name in ("orders-1", "orders-2", "payroll", "other"):
        store.keys.create(name, "hmac", {}, False, b"x" * 64, None)
        store.kms_aliases.add(f"alias/of-{name}", name)

    def listed(patterns: list[str] | None, after: str | None = None) -> list[str]:
        scope = None if patterns is None else [(tuple(patterns), ())]
        return [a.name for a in store.kms_aliases.list(after, 10, None, scope)]

    assert listed(["orders-*", "pay?oll"]) == [
        "alias/of-orders-1",
        "alias/of-orders-2",
        "alias/of-payroll",
    ]
    assert listed(["orders-*"], after="alias/of-orders-1") == ["alias/of-orders-2"]
    assert listed(["[0-9"]) == [] and listed([]) == []  # outside the grammar; no pattern
    assert len(listed(None)) == 4
    assert [a.name for a in store.kms_aliases.list(None, 10, "other", [(("orders-*",), ())])] == []


def test_keys_and_aliases_within_a_scope(store: KeyStore) -> None:
    """A scope's groups are ORed, each its globs less its excluded prefixes: the keys a token
    may read, as the listings of keys and of aliases ask the database for them."""
    names = ("a", "payments.a", "payments.eu.a", "payments.eu.b", "payments.z", "z-1", "z.1")
    for name in names:
        store.keys.create(name, "hmac", {}, False, b"x" * 64, None)
        store.kms_aliases.add(f"alias/of-{name}", name)
    scope = [(("payments.*",), ("payments.eu.", "payments.e[")), (("z*", "[!z]"), ())]
    within = ["a", "payments.a", "payments.z", "z-1", "z.1"]
    assert [key.name for key in store.keys.list(scope=scope)] == within
    assert [key.name for key in store.keys.list("payments.a", 2, scope=scope)] == within[2:4]
    assert [key.name for key in store.keys.list(patterns=["p*"], scope=scope)] == within[1:3]
    aliases = store.kms_aliases.list(None, 10, scope=scope)
    assert [alias.key_name for alias in aliases] == within
    assert [key.name for key in store.keys.list(scope=[])] == []
    assert store.kms_aliases.list(None, 10, scope=[(("[0-9",), ())]) == []  # outside the grammar
