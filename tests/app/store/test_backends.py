"""The backends: opening a store (the URL, the root key and admin token of the embedded
default), PostgreSQL's refusals at connection time, SQLite's deleted secrets and its write
lock; the readiness probe on both."""

import logging
import os
import stat
import time
from pathlib import Path

import pytest

from app.server.bootstrap import load_admin_token, load_root_key
from app.settings import Settings
from app.store import (
    KeyNotFoundError,
    KeyStore,
    KeyStoreError,
    KeyWrapper,
    NulInTextError,
    StoreUnavailableError,
    open_store,
    sqlite,
)
from app.store.database import LOCK_WAIT_SECONDS
from app.store.postgres import PostgresDatabase
from tests.app.store.stores import ROOT_KEY
from tests.conftest import POSTGRES_URL


def test_ping(store: KeyStore) -> None:
    store.ping()


def test_text_with_a_nul_finds_nothing_or_is_refused_before_the_query(
    store: KeyStore, store_url: str
) -> None:
    """PostgreSQL's text holds no NUL: its backend refuses such text itself (the driver's
    DataError would be a 500), and the connection goes on serving; SQLite finds nothing."""
    if store_url.startswith("postgresql"):
        with pytest.raises(NulInTextError):
            store.policies.get("a\x00b")
    else:
        assert store.policies.get("a\x00b") is None
    assert store.policies.get("ab") is None


def test_embedded_default_generates_secrets_once_with_mode_0600(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    root_key = load_root_key(settings)
    token = load_admin_token(settings)
    assert len(root_key) == 32 and token.startswith("cda_")
    assert load_root_key(settings) == root_key and load_admin_token(settings) == token
    for path in (settings.generated_root_key_file, settings.admin_token_file):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_root_key_from_environment_must_be_32_bytes(tmp_path: Path) -> None:
    from app.server.bootstrap import BootstrapError

    with pytest.raises(BootstrapError, match="32"):
        load_root_key(Settings(data_dir=tmp_path, root_key="AAAA"))
    with pytest.raises(BootstrapError, match="base64"):
        load_root_key(Settings(data_dir=tmp_path, root_key="not base64!"))


def test_an_unknown_database_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyStoreError, match="must start with sqlite:/// or postgresql://"):
        open_store(f"mysql://{tmp_path}", lambda: KeyWrapper(ROOT_KEY))


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("/cipherd_no_such_database", 'database "cipherd_no_such_database" does not exist'),
        ("/postgres?sslmode=sometimes", 'invalid sslmode value: "sometimes"'),
    ],
)
def test_a_database_that_refuses_for_good_is_one_error_at_once(
    where: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Waiting would not change these: the start fails at once (else after the 30 s given),
    with one message, no warning per attempt, and never the password."""
    password = "pw-" + os.urandom(8).hex()
    url = f"{POSTGRES_URL.rsplit('/', 1)[0]}{where}"
    url += ("&" if "?" in url else "?") + f"password={password}"
    with pytest.raises(KeyStoreError) as refused:
        PostgresDatabase(url, connect_seconds=30)
    assert str(refused.value).startswith("PostgreSQL refuses the connection: ")
    assert reason in str(refused.value)
    assert password not in str(refused.value)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres:{password}@[::1/cipherd",  # an IPv6 host left open
        "postgresql://postgres:{password}%zz@127.0.0.1/cipherd",  # a broken %-escape
        "postgresql://postgres@127.0.0.1/cipherd?password={password}&connect_timeout=x",
    ],
)
def test_a_malformed_url_is_refused_at_once_without_its_password(url: str) -> None:
    password = "pw-" + os.urandom(8).hex()
    with pytest.raises(KeyStoreError) as refused:
        PostgresDatabase(url.format(password=password), connect_seconds=30)
    assert str(refused.value).startswith("PostgreSQL refuses the connection: ")
    assert password not in str(refused.value)


def test_a_database_not_answering_yet_is_waited_for() -> None:
    url = "postgresql://postgres@127.0.0.1:1/postgres"  # nothing listens there
    with pytest.raises(KeyStoreError, match=r"no connection to PostgreSQL within 1 s: .*refused"):
        PostgresDatabase(url, connect_seconds=1)


def test_a_deleted_secret_leaves_no_trace_in_the_sqlite_files(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = open_store(f"sqlite:///{path}", lambda: KeyWrapper(ROOT_KEY))
    try:
        store.keys.create("gone", "aez", {}, True, b"g" * 48, None)
        store.keys.create("kept", "aez", {}, True, b"k" * 48, None)
        with store.database.transaction(write=False) as cursor:
            cursor.execute("SELECT wrapped FROM key_versions WHERE name = ?", ("gone",))
            (wrapped,) = cursor.fetchone()
        files = [path, path.with_name(path.name + "-wal")]
        assert any(bytes(wrapped) in f.read_bytes() for f in files if f.exists())
        store.keys.delete("gone")
        for file in files:
            if file.exists():
                assert bytes(wrapped) not in file.read_bytes(), file
        assert store.keys.material("kept").secret == b"k" * 48
    finally:
        store.close()


def test_a_delete_does_not_wait_for_a_reader_of_an_older_snapshot(tmp_path: Path) -> None:
    """A backup or a frozen worker in the middle of a read: the delete still returns at once
    (its checkpoint gives up), and the key is gone."""
    import sqlite3

    path = tmp_path / "store.sqlite3"
    store = open_store(f"sqlite:///{path}", lambda: KeyWrapper(ROOT_KEY))
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        store.keys.create("k", "aez", {}, False, b"a" * 48, None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM keys").fetchone()
        started = time.monotonic()
        store.keys.delete("k")
        assert time.monotonic() - started < LOCK_WAIT_SECONDS
        with pytest.raises(KeyNotFoundError):
            store.keys.get("k")
    finally:
        reader.close()
        store.close()


def test_a_write_lock_held_elsewhere_is_store_unavailable_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process frozen while it holds SQLite's write lock: writes give up with the 503
    of an unavailable store (retry) instead of a 500, and work again once the lock is free."""
    import sqlite3

    monkeypatch.setattr(sqlite, "LOCK_WAIT_SECONDS", 0.5)
    path = tmp_path / "store.sqlite3"
    store = open_store(f"sqlite:///{path}", lambda: KeyWrapper(ROOT_KEY))
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        created = store.keys.create("k", "aez", {}, False, b"a" * 48, None)
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreUnavailableError, match="retry"):
            store.keys.rotate("k", b"b" * 48, None, created.created_at)
        assert store.keys.material("k").secret == b"a" * 48  # reads go on beside the writer
        holder.execute("ROLLBACK")
        assert store.keys.rotate("k", b"b" * 48, None, created.created_at).latest_version == 2
    finally:
        holder.close()
        store.close()
