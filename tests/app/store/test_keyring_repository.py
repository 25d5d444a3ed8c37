"""The keyring repository on SQLite and PostgreSQL: a store opens only under its root key,
keyring terms, the rewrap, root rotation, and the migration of a store made before the keyring
existed (kept in tests/app/store/legacy)."""

import base64
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.store import KeyStore, KeyWrapper, RootKeyMismatchError, UnwrapError, open_store
from app.store.keyring import TERM_TYPE
from tests.app.store.stores import NEW_ROOT_KEY, ROOT_KEY, rows

LEGACY = Path(__file__).parent / "legacy"


def _terms(store: KeyStore) -> dict[tuple[str, int], int]:
    found = rows(store, "SELECT name, version, term FROM key_versions")
    return {(name, version): term for name, version, term in found}


def test_a_store_opens_only_under_its_root_key(store_url: str) -> None:
    first = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    first.keys.create("k", "aez", {}, False, b"k" * 48, None)
    first.close()
    with pytest.raises(RootKeyMismatchError, match="root key does not open this key store"):
        open_store(store_url, lambda: KeyWrapper(bytes(32)))
    again = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        assert again.keys.material("k").secret == b"k" * 48
    finally:
        again.close()


def test_an_empty_store_belongs_to_its_first_root_key(store_url: str) -> None:
    open_store(store_url, lambda: KeyWrapper(ROOT_KEY)).close()
    with pytest.raises(RootKeyMismatchError):
        open_store(store_url, lambda: KeyWrapper(bytes(32)))


@pytest.mark.parametrize("right_key", [True, False])
def test_a_store_from_before_the_check_is_judged_by_its_secrets(
    store_url: str, right_key: bool
) -> None:
    store = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    store.keys.create("k", "aez", {}, False, b"k" * 48, None)
    with store.database.transaction(write=True) as cursor:  # as such a store was made
        cursor.execute("DELETE FROM root_key_check")
        cursor.execute("DELETE FROM keyring")
        cursor.execute(
            "UPDATE key_versions SET term = NULL, wrapped = ?",
            (KeyWrapper(ROOT_KEY).wrap(b"k" * 48, "k", 1, "aez"),),
        )
    store.close()
    if not right_key:
        with pytest.raises(RootKeyMismatchError):
            open_store(store_url, lambda: KeyWrapper(bytes(32)))
        return
    reopened = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))  # now with its check value
    assert reopened.keys.material("k").secret == b"k" * 48
    reopened.close()
    with pytest.raises(RootKeyMismatchError):
        open_store(store_url, lambda: KeyWrapper(bytes(32)))


def test_a_new_store_has_one_term_and_wraps_versions_under_it(store: KeyStore) -> None:
    store.keys.create("k", "aez", {}, False, b"k" * 48, None)
    status = store.keyring.status()
    assert (status.term, status.versions, status.versions_behind) == (1, 1, 0)
    assert _terms(store) == {("k", 1): 1}
    # The version is wrapped under the term's key, not under the root key.
    with store.database.transaction(write=False) as cursor:
        cursor.execute("SELECT wrapped FROM key_versions")
        (wrapped,) = cursor.fetchone()
    with pytest.raises(UnwrapError):
        KeyWrapper(ROOT_KEY).unwrap(bytes(wrapped), "k", 1, "aez")


def test_keyring_rotation_adds_a_term_and_the_rewrap_moves_every_version(
    store: KeyStore,
) -> None:
    for index in range(5):
        store.keys.create(f"k{index}", "aez", {}, False, bytes([index]) * 48, None)
    status = store.keyring.rotate()
    assert (status.term, status.versions, status.versions_behind) == (2, 5, 5)
    created = store.keys.get("k0").created_at
    store.keys.rotate("k0", b"n" * 48, None, created)  # new writes use the new term
    assert _terms(store)[("k0", 2)] == 2
    assert store.keys.material("k0", 1).secret == bytes([0]) * 48  # the old term still unwraps

    moved, status = store.keyring.rewrap(3)
    assert (moved, status.versions_behind) == (3, 2)
    moved, status = store.keyring.rewrap(3)
    assert (moved, status.versions_behind) == (2, 0)
    assert set(_terms(store).values()) == {2}
    for index in range(5):
        assert store.keys.material(f"k{index}", 1).secret == bytes([index]) * 48
    assert store.keyring.rewrap(3)[0] == 0


def test_root_rotation_rewraps_only_the_keyring_and_replicas_take_it_up(
    store_url: str, store: KeyStore
) -> None:
    store.keys.create("k", "aez", {}, False, b"k" * 48, None)
    given = {"root": ROOT_KEY}  # what the replica's root key file holds
    replica = open_store(store_url, lambda: KeyWrapper(given["root"]))
    operator = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        assert replica.keys.material("k").secret == b"k" * 48
        before = _wrapped_versions(store)
        assert operator.keyring.rotate_root(KeyWrapper(NEW_ROOT_KEY)) == 1
        assert _wrapped_versions(store) == before  # the versions are untouched

        # The replica holds the term it unwrapped: it keeps serving, with the old file too.
        assert replica.keys.material("k").secret == b"k" * 48
        with pytest.raises(RootKeyMismatchError):
            replica.keyring.refresh_root()
        # A process given the old root key no longer opens the store.
        with pytest.raises(RootKeyMismatchError, match="cipherd root rotate"):
            open_store(store_url, lambda: KeyWrapper(ROOT_KEY))

        # A term added under the new root (by the operator's process) reaches the replica once
        # its source gives the new root key.
        operator.close()
        operator = open_store(store_url, lambda: KeyWrapper(NEW_ROOT_KEY))
        operator.keyring.rotate()
        operator.keys.rotate("k", b"m" * 48, None, operator.keys.get("k").created_at)
        given["root"] = NEW_ROOT_KEY
        assert replica.keys.material("k", 2).secret == b"m" * 48
        replica.keyring.refresh_root()
        replica.keyring.rotate()  # wrapped under the new root, which every process can open
        fresh = open_store(store_url, lambda: KeyWrapper(NEW_ROOT_KEY))
        assert fresh.keyring.status().term == 3
        fresh.close()
    finally:
        replica.close()
        operator.close()


def _wrapped_versions(store: KeyStore) -> list[tuple[str, int, bytes]]:
    with store.database.transaction(write=False) as cursor:
        cursor.execute("SELECT name, version, wrapped FROM key_versions ORDER BY name, version")
        return [(n, v, bytes(w)) for n, v, w in cursor.fetchall()]


def test_a_process_with_a_stale_root_never_wraps_a_term_under_it(
    store_url: str, store: KeyStore
) -> None:
    stale = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        store.keyring.rotate_root(KeyWrapper(NEW_ROOT_KEY))
        with pytest.raises(RootKeyMismatchError):
            stale.keyring.rotate()
        with pytest.raises(RootKeyMismatchError):
            stale.keyring.rotate_root(KeyWrapper(bytes(32)))
    finally:
        stale.close()
    fresh = open_store(store_url, lambda: KeyWrapper(NEW_ROOT_KEY))
    with fresh.database.transaction(write=False) as cursor:
        cursor.execute("SELECT term, wrapped FROM keyring")
        for term, wrapped in cursor.fetchall():
            KeyWrapper(NEW_ROOT_KEY).unwrap(bytes(wrapped), "", term, TERM_TYPE)
    fresh.close()


def _legacy_copy(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "legacy.sqlite3"
    shutil.copyfile(LEGACY / "store.sqlite3", path)
    root = base64.b64decode((LEGACY / "root-key").read_text().strip())
    return path, root


def test_a_store_from_before_the_keyring_is_migrated_on_first_open(tmp_path: Path) -> None:
    path, root = _legacy_copy(tmp_path)
    expected = json.loads((LEGACY / "expected.json").read_text())
    with sqlite3.connect(path) as raw:
        legacy_rows = raw.execute("SELECT name, version FROM key_versions").fetchall()
        columns = [row[1] for row in raw.execute("PRAGMA table_info(key_versions)")]
    assert "term" not in columns and len(legacy_rows) == 9

    with pytest.raises(RootKeyMismatchError):
        open_store(f"sqlite:///{path}", lambda: KeyWrapper(bytes(32)))
    store = open_store(f"sqlite:///{path}", lambda: KeyWrapper(root))
    try:
        assert set(_terms(store)) == set(legacy_rows)
        assert set(_terms(store).values()) == {1}
        for name, key in expected["keys"].items():
            info = store.keys.get(name)
            assert (info.type, info.latest_version) == (key["type"], key["versions"])
            for version in range(1, key["versions"] + 1):
                assert store.keys.material(name, version).secret
        assert len(store.tokens.page(None, 10)[0]) == 1
    finally:
        store.close()
    # Opened again, nothing is left to move and everything still opens.
    again = open_store(f"sqlite:///{path}", lambda: KeyWrapper(root))
    try:
        assert again.keyring.status().versions_behind == 0
        assert again.keys.material("orders", 1).secret
    finally:
        again.close()
