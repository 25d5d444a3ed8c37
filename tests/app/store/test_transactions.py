"""Several repositories' changes in one transaction, on SQLite and PostgreSQL: stored together
when the block ends, none of them when it raises."""

import time
from pathlib import Path

import pytest

from app.store import (
    AuditHead,
    AuditQuery,
    AuditRow,
    KeyExistsError,
    KeyNotFoundError,
    KeyStore,
    KeyStoreError,
    Repositories,
    TokenRecord,
    open_store,
)
from tests.app.store.stores import root, rows

TOKEN = TokenRecord("t" * 16, b"h" * 32, "ci", ("k",), ("encrypt",), 1.0, None)
RECORD = AuditRow(
    "c1", 1, 1.0, "r1", None, "admin", "keys_create_key", "k", "1", 201, None, "{}", b"m"
)


def _change_everything(held: Repositories) -> None:
    held.keys.create("k", "ipfe-opt", {"dimension": 2}, False, b"f" * 64, b"p")
    held.tokens.add(TOKEN)
    held.audit.append([RECORD], AuditHead("c1", 1, b"h"))
    held.ledger.release("k", 1, lambda ledger: ledger.record([1, 0], "admin", 1.0, 1))


def test_changes_of_several_repositories_are_stored_together(store: KeyStore) -> None:
    with store.transaction() as held:
        _change_everything(held)
        assert held.keys.get("k").latest_version == 1  # seen inside before the end
    assert store.keys.material("k").secret == b"f" * 64
    assert store.tokens.by_hash(TOKEN.token_hash) == TOKEN
    assert store.audit.records(AuditQuery()) == ([RECORD], False)
    assert [r.function for r in store.ledger.functions("k", 1).functions] == [[1, 0]]


def test_a_block_that_raises_stores_none_of_them(store: KeyStore) -> None:
    with pytest.raises(RuntimeError, match="changed my mind"), store.transaction() as held:
        _change_everything(held)
        raise RuntimeError("changed my mind")
    with pytest.raises(KeyNotFoundError):
        store.keys.get("k")
    assert store.tokens.page(None, 10) == ([], False)
    assert store.audit.records(AuditQuery()) == ([], False) and store.audit.heads() == []
    assert rows(store, "SELECT COUNT(*) FROM fe_functions") == [(0,)]


def test_a_store_error_inside_ends_the_transaction_with_nothing_stored(store: KeyStore) -> None:
    store.keys.create("taken", "aez", {}, False, b"a" * 48, None)
    with pytest.raises(KeyExistsError), store.transaction() as held:
        held.tokens.add(TOKEN)
        held.keys.create("taken", "aez", {}, False, b"b" * 48, None)
    assert store.tokens.page(None, 10) == ([], False)
    assert store.keys.material("taken").secret == b"a" * 48


def test_a_read_transaction_refuses_changes(store: KeyStore) -> None:
    store.keys.create("k", "aez", {}, False, b"k" * 48, None)
    with pytest.raises(KeyStoreError, match="read-only"), store.transaction(write=False) as held:
        assert held.keys.material("k").secret == b"k" * 48
        held.tokens.add(TOKEN)
    assert store.tokens.page(None, 10) == ([], False)


def test_the_repositories_of_an_ended_transaction_refuse(store: KeyStore) -> None:
    with store.transaction() as held:
        held.tokens.add(TOKEN)
    with pytest.raises(KeyStoreError, match="ended"):
        held.tokens.page(None, 10)
    assert store.tokens.page(None, 10) == ([TOKEN], False)


def test_a_key_destroyed_in_a_transaction_leaves_no_trace_once_it_ends(tmp_path: Path) -> None:
    """SQLite's checkpoint after a destruction waits for the commit, where it can do its work."""
    path = tmp_path / "store.sqlite3"
    store = open_store(f"sqlite:///{path}", root())
    try:
        store.keys.create("gone", "aez", {}, True, b"g" * 48, None)
        ((wrapped,),) = rows(store, "SELECT wrapped FROM key_versions")
        files = [path, path.with_name(path.name + "-wal")]
        with store.transaction() as held:
            held.keys.schedule_deletion("gone", time.time() - 1)
            assert held.keys.destroy_if_due("gone", time.time(), lambda: None)
        for file in files:
            if file.exists():
                assert bytes(wrapped) not in file.read_bytes(), file
    finally:
        store.close()
