"""The key hierarchy on SQLite and PostgreSQL: keyring terms, the rewrap, root rotation, and the
migration of a store made before the keyring existed (kept in tests/app/store/legacy)."""

import base64
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store import KeyStore, KeyWrapper, RootKeyMismatchError, UnwrapError, open_store
from app.store.hierarchy import TERM_TYPE
from tests.app.store.test_store import ROOT_KEY

LEGACY = Path(__file__).parent / "legacy"
NEW_ROOT = bytes(range(100, 132))


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url: str) -> Iterator[KeyStore]:
    opened = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    yield opened
    opened.close()


def _terms(store: KeyStore) -> dict[tuple[str, int], int]:
    with store._transaction(write=False) as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT name, version, term FROM key_versions")
        return {(name, version): term for name, version, term in cursor.fetchall()}


def test_a_new_store_has_one_term_and_wraps_versions_under_it(store: KeyStore) -> None:
    store.create("k", "aez", {}, False, b"k" * 48, None)
    status = store.keyring_status()
    assert (status.term, status.versions, status.versions_behind) == (1, 1, 0)
    assert _terms(store) == {("k", 1): 1}
    # The version is wrapped under the term's key, not under the root key.
    with store._transaction(write=False) as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT wrapped FROM key_versions")
        (wrapped,) = cursor.fetchone()
    with pytest.raises(UnwrapError):
        KeyWrapper(ROOT_KEY).unwrap(bytes(wrapped), "k", 1, "aez")


def test_keyring_rotation_adds_a_term_and_the_rewrap_moves_every_version(
    store: KeyStore,
) -> None:
    for index in range(5):
        store.create(f"k{index}", "aez", {}, False, bytes([index]) * 48, None)
    status = store.rotate_keyring()
    assert (status.term, status.versions, status.versions_behind) == (2, 5, 5)
    created = store.get("k0").created_at
    store.rotate("k0", b"n" * 48, None, created)  # new writes use the new term
    assert _terms(store)[("k0", 2)] == 2
    assert store.material("k0", 1).secret == bytes([0]) * 48  # the old term still unwraps

    moved, status = store.rewrap_keyring(3)
    assert (moved, status.versions_behind) == (3, 2)
    moved, status = store.rewrap_keyring(3)
    assert (moved, status.versions_behind) == (2, 0)
    assert set(_terms(store).values()) == {2}
    for index in range(5):
        assert store.material(f"k{index}", 1).secret == bytes([index]) * 48
    assert store.rewrap_keyring(3)[0] == 0


def test_root_rotation_rewraps_only_the_keyring_and_replicas_take_it_up(
    store_url: str, store: KeyStore
) -> None:
    store.create("k", "aez", {}, False, b"k" * 48, None)
    given = {"root": ROOT_KEY}  # what the replica's root key file holds
    replica = open_store(store_url, lambda: KeyWrapper(given["root"]))
    operator = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        assert replica.material("k").secret == b"k" * 48
        before = _wrapped_versions(store)
        assert operator.rotate_root(KeyWrapper(NEW_ROOT)) == 1
        assert _wrapped_versions(store) == before  # the versions are untouched

        # The replica holds the term it unwrapped: it keeps serving, with the old file too.
        assert replica.material("k").secret == b"k" * 48
        with pytest.raises(RootKeyMismatchError):
            replica.refresh_root()
        # A process given the old root key no longer opens the store.
        with pytest.raises(RootKeyMismatchError, match="cipherd root rotate"):
            open_store(store_url, lambda: KeyWrapper(ROOT_KEY))

        # A term added under the new root (by the operator's process) reaches the replica once
        # its source gives the new root key.
        operator.close()
        operator = open_store(store_url, lambda: KeyWrapper(NEW_ROOT))
        operator.rotate_keyring()
        operator.rotate("k", b"m" * 48, None, operator.get("k").created_at)
        given["root"] = NEW_ROOT
        assert replica.material("k", 2).secret == b"m" * 48
        replica.refresh_root()
        replica.rotate_keyring()  # wrapped under the new root, which every process can open
        fresh = open_store(store_url, lambda: KeyWrapper(NEW_ROOT))
        assert fresh.keyring_status().term == 3
        fresh.close()
    finally:
        replica.close()
        operator.close()


def _wrapped_versions(store: KeyStore) -> list[tuple[str, int, bytes]]:
    with store._transaction(write=False) as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT name, version, wrapped FROM key_versions ORDER BY name, version")
        return [(n, v, bytes(w)) for n, v, w in cursor.fetchall()]


def test_a_process_with_a_stale_root_never_wraps_a_term_under_it(
    store_url: str, store: KeyStore
) -> None:
    stale = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        store.rotate_root(KeyWrapper(NEW_ROOT))
        with pytest.raises(RootKeyMismatchError):
            stale.rotate_keyring()
        with pytest.raises(RootKeyMismatchError):
            stale.rotate_root(KeyWrapper(bytes(32)))
    finally:
        stale.close()
    fresh = open_store(store_url, lambda: KeyWrapper(NEW_ROOT))
    with fresh._transaction(write=False) as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT term, wrapped FROM keyring")
        for term, wrapped in cursor.fetchall():
            KeyWrapper(NEW_ROOT).unwrap(bytes(wrapped), "", term, TERM_TYPE)
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
            info = store.get(name)
            assert (info.type, info.latest_version) == (key["type"], key["versions"])
            for version in range(1, key["versions"] + 1):
                assert store.material(name, version).secret
        assert len(store.list_tokens()) == 1
    finally:
        store.close()
    # Opened again, nothing is left to move and everything still opens.
    again = open_store(f"sqlite:///{path}", lambda: KeyWrapper(root))
    try:
        assert again.keyring_status().versions_behind == 0
        assert again.material("orders", 1).secret
    finally:
        again.close()
