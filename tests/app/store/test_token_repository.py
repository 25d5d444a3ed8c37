"""The token repository on SQLite and PostgreSQL: tokens kept by their hash, revoked with
their children, renewed, spent use by use."""

import random
import threading
import time

import pytest

from app.ops.token_values import hash_token
from app.store import (
    AuthMount,
    KeyStore,
    MountMigration,
    MountNotFoundError,
    ParentTokenNotFoundError,
    TokenExistsError,
    TokenRecord,
)
from tests.app.store.stores import at_once, rows


def test_tokens(store: KeyStore) -> None:
    record = TokenRecord(
        "0123456789abcdef", b"h" * 32, "ci", ("orders-*",), ("encrypt",), 1.0, None
    )
    store.tokens.add(record)
    assert store.tokens.by_hash(b"h" * 32) == record
    assert store.tokens.by_hash(b"x" * 32) is None
    assert store.tokens.page(None, 10) == ([record], False)
    assert store.tokens.delete(record.id) == [record.id]
    assert store.tokens.delete(record.id) == []
    assert store.tokens.by_hash(b"h" * 32) is None


def test_tokens_are_listed_by_id_a_page_at_a_time_with_their_limits(store: KeyStore) -> None:
    newer = TokenRecord("a" * 16, b"2" * 32, "", ("*",), ("read",), 2.0, 3600.0, 5.0)
    older = TokenRecord("b" * 16, b"1" * 32, "", ("k-[0-9]",), ("encrypt", "decrypt"), 1.0, None)
    for token in (older, newer):
        store.tokens.add(token)
    assert store.tokens.page(None, 10) == ([newer, older], False)
    assert store.tokens.page(None, 1) == ([newer], True)
    assert store.tokens.page(newer.id, 1) == ([older], False)
    assert store.tokens.page(older.id, 1) == ([], False)
    store.tokens.delete(newer.id)  # the cursor's token revoked between two pages
    assert store.tokens.page(newer.id, 1) == ([older], False)
    assert store.tokens.by_hash(b"2" * 32) is None


def test_a_page_of_tokens_ends_at_its_bytes(store: KeyStore) -> None:
    """Each token's metadata, patterns and policies can weigh tens of kilobytes: a page ends at
    PAGE_BYTES of them, the token that crosses it included, whatever its count."""
    heavy = {f"m{index}": "x" * 500 for index in range(64)}  # ~33 KB of JSON each
    for index in range(200):
        token_id = f"{index:016x}"
        store.tokens.add(
            TokenRecord(token_id, token_id.encode() * 2, "", (), (), 1.0, None, metadata=heavy)
        )
    page, more = store.tokens.page(None, 1000)
    assert more and 120 <= len(page) < 130  # 4 MiB / ~33 KB
    assert page[-1].metadata == heavy
    rest, more = store.tokens.page(page[-1].id, 1000)
    assert not more and len(page) + len(rest) == 200


def token(
    token_id: str, parent: str | None = None, expires_at: float | None = None, **life: object
) -> TokenRecord:
    return TokenRecord(
        token_id, token_id.encode() * 2, "", (), (), 1.0, expires_at, parent_id=parent, **life
    )  # type: ignore[arg-type]


def test_revoking_a_token_revokes_its_children_and_theirs(store: KeyStore) -> None:
    for record in (
        token("p" * 16),
        token("c" * 16, "p" * 16),
        token("g" * 16, "c" * 16),
        token("o" * 16),
    ):
        store.tokens.add(record)
    before = store.auth_state.read().generation
    assert sorted(store.tokens.delete("p" * 16)) == ["c" * 16, "g" * 16, "p" * 16]
    assert [r.id for r in store.tokens.page(None, 10)[0]] == ["o" * 16]
    assert store.auth_state.read().generation == before + 1


def test_revoking_orphaning_keeps_the_children(store: KeyStore) -> None:
    store.tokens.add(token("p" * 16))
    store.tokens.add(token("c" * 16, "p" * 16))
    assert store.tokens.delete_orphaning("p" * 16) is True
    child = store.tokens.by_id("c" * 16)
    assert child is not None and child.parent_id is None
    assert store.tokens.delete_orphaning("p" * 16) is False


def test_a_token_is_revoked_with_its_last_use(store: KeyStore) -> None:
    store.tokens.add(token("u" * 16, uses_left=2))
    store.tokens.add(token("c" * 16, "u" * 16))
    assert store.tokens.use("u" * 16) == 1
    spent = store.tokens.by_id("u" * 16)
    assert spent is not None and spent.uses_left == 1
    assert store.tokens.use("u" * 16) == 0
    assert store.tokens.by_id("u" * 16) is None
    assert store.tokens.by_id("c" * 16) is None
    assert store.tokens.use("u" * 16) is None


def test_a_renewal_moves_the_expiry(store: KeyStore) -> None:
    store.tokens.add(token("r" * 16, renewable=True, ttl_seconds=60.0))
    renewed = store.tokens.renew("r" * 16, 500.0, 440.0)
    assert renewed is not None and (renewed.expires_at, renewed.renewed_at) == (500.0, 440.0)
    assert store.tokens.renew("x" * 16, 1.0, 1.0) is None


def test_expired_tokens_are_dropped_their_children_kept_as_orphans(store: KeyStore) -> None:
    store.tokens.add(token("e" * 16, expires_at=10.0))
    store.tokens.add(token("c" * 16, "e" * 16))
    store.tokens.add(token("l" * 16, expires_at=100.0))
    assert store.tokens.delete_expired(50.0, 10) == 1
    assert store.tokens.by_id("e" * 16) is None
    child = store.tokens.by_id("c" * 16)
    assert child is not None and child.parent_id is None
    assert store.tokens.by_id("l" * 16) is not None


def test_one_purge_orphans_the_children_of_every_token_it_drops(store: KeyStore) -> None:
    for parent in ("a" * 16, "b" * 16):
        store.tokens.add(token(parent, expires_at=10.0))
        store.tokens.add(token(parent[0] + "c" * 15, parent))
    assert store.tokens.delete_expired(50.0, 10) == 2
    for child in ("a" + "c" * 15, "b" + "c" * 15):
        record = store.tokens.by_id(child)
        assert record is not None and record.parent_id is None


def test_tokens_are_revoked_by_the_prefix_of_their_path(store: KeyStore) -> None:
    """A prefix ends in '/' and holds the paths under it, the path itself included; a path
    only beginning with its letters (`auth/approle-2/...`) is no part of it. Children go
    with their parents, `limit` roots at a time."""
    made = {
        "a" * 16: "auth/approle/login",
        "b" * 16: "auth/approle/login",
        "c" * 16: "auth/approle-2/login",
        "d" * 16: "auth/token/create",
        "e" * 16: "auth/token/create/ci",
        "f" * 16: "auth/token/created",
    }
    for token_id, path in made.items():
        store.tokens.add(token(token_id, path=path))
    store.tokens.add(token("k" * 16, "c" * 16, path="auth/token/create"))
    before = store.auth_state.read().generation
    assert store.tokens.delete_under("auth/approle/", 1) in (["a" * 16], ["b" * 16])
    assert len(store.tokens.delete_under("auth/approle/", 1)) == 1
    assert store.tokens.delete_under("auth/approle/", 1) == []
    assert store.auth_state.read().generation == before + 2
    assert sorted(store.tokens.delete_under("auth/approle-2/login/", 10)) == ["c" * 16, "k" * 16]
    assert sorted(store.tokens.delete_under("auth/token/create/", 10)) == ["d" * 16, "e" * 16]
    assert [r.id for r in store.tokens.page(None, 10)[0]] == ["f" * 16]


def test_the_store_refuses_a_second_token_of_the_same_hash(store: KeyStore) -> None:
    """On both backends: the unique hash, not a check before the insert, is what holds when
    two makers choose the same value at once."""
    first = TokenRecord("a" * 16, hash_token("same"), "", (), (), 1.0, None)
    store.tokens.add(first)
    with pytest.raises(TokenExistsError):
        store.tokens.add(TokenRecord("b" * 16, hash_token("same"), "", (), (), 1.0, None))
    assert store.tokens.by_hash(hash_token("same")) == first


def test_a_login_s_token_needs_its_method_still_mounted(store: KeyStore) -> None:
    """A token issued by an auth method is stored only while the method is at its path: one
    whose login ran while the method moved or went is refused, not left behind the revocation."""
    store.auth_mounts.add(AuthMount("auth_jwt_1", "ci", "jwt", "", {}, 1.0))
    first = TokenRecord("a" * 16, b"a" * 32, "", (), (), 1.0, None, mount="ci")
    store.tokens.add(first, mounted="ci")
    store.auth_mounts.move("ci", "ci2", MountMigration("m", "auth/ci/", "auth/ci2/", 2.0))
    late = TokenRecord("b" * 16, b"b" * 32, "", (), (), 1.0, None, mount="ci")
    with pytest.raises(MountNotFoundError):
        store.tokens.add(late, mounted="ci")
    assert store.tokens.page(None, 10)[0] == []  # the first went with the move


def test_a_child_is_refused_once_its_parent_is_revoked(store: KeyStore) -> None:
    """The parent is looked up in the transaction that stores the child: a maker revoked
    after it was checked, but before its child was stored, makes none, and neither does a
    token revoked with it."""
    store.tokens.add(token("p" * 16))
    store.tokens.add(token("c" * 16, "p" * 16))
    assert sorted(store.tokens.delete("p" * 16)) == ["c" * 16, "p" * 16]
    for parent in ("p" * 16, "c" * 16):
        with pytest.raises(ParentTokenNotFoundError):
            store.tokens.add(token("g" * 16, parent))
    assert store.tokens.page(None, 10)[0] == []
    store.tokens.add(token("o" * 16))  # an orphan needs no parent
    assert [record.id for record in store.tokens.page(None, 10)[0]] == ["o" * 16]


# The rounds of `test_no_child_outlives_the_revocation_it_raced`, and the children each maker
# adds in one at most (it stops at the first refusal).
RACE_ROUNDS = 15
RACE_CHILDREN = 200


def test_no_child_outlives_the_revocation_it_raced(store: KeyStore, store_url: str) -> None:
    """Makers in three other processes add children and grandchildren to a token's tree as
    fast as they can while it is revoked: what a maker stored before the revocation goes with
    it, and what it tries after is refused. Nothing of the tree is left."""
    barrier = threading.Barrier(4, timeout=60)
    makers = iter(range(1, 4))
    lock = threading.Lock()
    refused = []

    def act(each: KeyStore) -> None:
        revoker = each is store
        with lock:
            maker = 0 if revoker else next(makers)
        pick = random.Random(maker)
        for round_ in range(RACE_ROUNDS):
            root = f"{round_:03}-root"
            if revoker:
                store.tokens.add(token(root))
            barrier.wait()
            if revoker:
                time.sleep(0.001 * (round_ % 5))
                store.tokens.delete(root)
            else:
                parents = [root]
                for index in range(RACE_CHILDREN):
                    child = f"{round_:03}-{maker}-{index:04}"
                    try:
                        each.tokens.add(token(child, pick.choice(parents)))
                    except ParentTokenNotFoundError:
                        with lock:
                            refused.append(child)
                        break
                    parents.append(child)
            barrier.wait()

    at_once(store, store_url, act)
    assert rows(store, "SELECT id, parent_id FROM tokens") == []
    assert refused  # the makers did meet the revocation
