"""The key-store suite, run on SQLite and on a real PostgreSQL."""

import fnmatch
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.server.bootstrap import load_admin_token, load_root_key
from app.settings import Settings
from app.store import (
    KeyChangedError,
    KeyExistsError,
    KeyNotFoundError,
    KeyStore,
    KeyStoreError,
    KeyWrapper,
    RootKeyMismatchError,
    StoreUnavailableError,
    TokenRecord,
    UnwrapError,
    VersionNotFoundError,
    open_store,
    sql,
    sqlite,
)
from app.store.base import LOCK_WAIT_SECONDS, AuditHead, AuditQuery, AuditRow
from app.store.postgres import PostgresKeyStore
from tests.conftest import POSTGRES_URL

ROOT_KEY = bytes(range(32))


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


def test_create_get_and_material(store: KeyStore) -> None:
    info = store.create("orders", "aez", {}, False, b"s" * 48, None)
    assert (info.name, info.type, info.latest_version) == ("orders", "aez", 1)
    assert [v.version for v in info.versions] == [1]
    material = store.material("orders")
    assert (material.secret, material.version, material.public) == (b"s" * 48, 1, None)
    assert "s" * 48 not in repr(material)


def test_create_twice_is_refused_and_changes_nothing(store: KeyStore) -> None:
    store.create("orders", "aez", {}, False, b"a" * 48, None)
    with pytest.raises(KeyExistsError):
        store.create("orders", "ecies-x25519", {}, False, b"b" * 32, b"p" * 32)
    assert store.material("orders").secret == b"a" * 48


def test_rotation_keeps_old_versions(store: KeyStore) -> None:
    created = store.create("k", "ecies-x25519", {}, False, b"1" * 32, b"P1")
    info = store.rotate("k", b"2" * 32, b"P2", created.created_at)
    assert info.latest_version == 2
    assert store.material("k").secret == b"2" * 32
    assert store.material("k", 1).secret == b"1" * 32
    assert store.material("k", 1).public == b"P1"
    with pytest.raises(VersionNotFoundError):
        store.material("k", 3)


def test_unknown_key(store: KeyStore) -> None:
    for call in (
        lambda: store.get("nope"),
        lambda: store.material("nope"),
        lambda: store.rotate("nope", b"x", None, 0.0),
        lambda: store.delete("nope"),
    ):
        with pytest.raises(KeyNotFoundError):
            call()


def test_delete_removes_every_version(store: KeyStore) -> None:
    created = store.create("k", "aez", {}, False, b"1" * 48, None)
    store.rotate("k", b"2" * 48, None, created.created_at)
    store.delete("k")
    with pytest.raises(KeyNotFoundError):
        store.material("k", 1)
    assert store.list() == []
    # The name can be used again, starting from version 1.
    assert store.create("k", "aez", {}, False, b"3" * 48, None).latest_version == 1


def test_a_rotation_of_a_key_deleted_meanwhile_stores_nothing(store: KeyStore) -> None:
    """A new version is drawn for the key as it was read; if the name has since been deleted
    and given to a key of another type, the version belongs to neither."""
    old = store.create("k", "ipfe-opt", {"dimension": 3}, False, b"f" * 64, b"p")
    store.delete("k")
    with pytest.raises(KeyNotFoundError):
        store.rotate("k", b"g" * 64, b"q", old.created_at)
    new = store.create("k", "ecies-x25519", {}, True, b"e" * 32, b"E" * 32)
    with pytest.raises(KeyChangedError):
        store.rotate("k", b"g" * 64, b"q", old.created_at)
    assert store.get("k").latest_version == 1
    assert store.material("k").secret == b"e" * 32
    assert store.rotate("k", b"h" * 32, b"H" * 32, new.created_at).latest_version == 2


def test_material_says_whether_its_key_is_exportable(store: KeyStore) -> None:
    store.create("closed", "aez", {}, False, b"c" * 48, None)
    store.create("open", "aez", {}, True, b"o" * 48, None)
    assert store.material("closed").exportable is False
    assert store.material("open").exportable is True


def test_list_is_sorted_and_params_survive(store: KeyStore) -> None:
    store.create("b", "ipfe-opt", {"dimension": 10}, True, b"x", b"y")
    store.create("a", "aez", {}, False, b"x" * 48, None)
    listed = store.list()
    assert [k.name for k in listed] == ["a", "b"]
    assert listed[1].params == {"dimension": 10} and listed[1].exportable


def test_list_pages_by_name(store: KeyStore) -> None:
    names = ["a", "a-1", "b", "c.2", "d"]
    for name in reversed(names):
        store.create(name, "aez", {}, False, b"x" * 48, None)
    ordered = [k.name for k in store.list()]
    assert sorted(ordered) == sorted(names) and len(ordered) == 5
    pages, after = [], None
    while page := [k.name for k in store.list(after, 2)]:
        assert len(page) <= 2
        pages.append(page)
        after = page[-1]
    assert [name for page in pages for name in page] == ordered
    assert [k.name for k in store.list(ordered[1], None)] == ordered[2:]
    assert store.list(ordered[-1], 10) == []


# Token globs as the store matches them, against fnmatch: the same for every pattern tokens may
# now have, and never more for the looser ones issued before patterns were checked.
WELL_FORMED_GLOBS = [
    "*", "orders-*", "a?", "?", "[ab]*", "[!ab]*", "[a-c]?", "*.[0-9]", "x.y", "[.]*",
    "*-*-*", "[!-]*", "a*b", "A*", "[Z-a]*", "*[!0-9]", "orders-[!x]?*", "",
]  # fmt: skip
LOOSE_GLOBS = ["a[", "[*]", "a b*", "[]a]*", "(a)|b", "a\\*", "^a$", "a%", "a_%", "[!]*"]


def test_list_filters_by_token_globs_as_fnmatch_does(store: KeyStore) -> None:
    names = [
        "a", "b", "ab", "a1", "aB", "A", "abc", "a.b", "x.y", "xzy", "orders-1", "orders-x1",
        "orders-", "c-d-e", "v.2", "v.x", "-a", ".b", "Z", "_", "a_b", "a%b", "zz9",
    ]  # fmt: skip
    for name in names:
        store.create(name, "aez", {}, False, b"x" * 48, None)
    ordered = [k.name for k in store.list()]
    for glob in WELL_FORMED_GLOBS + LOOSE_GLOBS:
        listed = [k.name for k in store.list(None, None, [glob])]
        allowed = [n for n in ordered if fnmatch.fnmatchcase(n, glob)]
        if glob in WELL_FORMED_GLOBS:
            assert listed == allowed, glob
        else:
            assert set(listed) <= set(allowed), glob
    both = [k.name for k in store.list("a", 3, ["a*", "x*"])]
    assert both == [n for n in ordered if n > "a" and n[0] in "ax"][:3]
    assert store.list(None, None, []) == []


def test_concurrent_rotations_get_distinct_consecutive_versions(store: KeyStore) -> None:
    created = store.create("hot", "aez", {}, False, b"0" * 48, None)
    errors: list[BaseException] = []

    def rotate(i: int) -> None:
        try:
            store.rotate("hot", bytes([i]) * 48, None, created.created_at)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=rotate, args=(i,)) for i in range(1, 21)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    info = store.get("hot")
    assert info.latest_version == 21
    assert [v.version for v in info.versions] == list(range(1, 22))
    secrets_seen = {store.material("hot", v).secret for v in range(2, 22)}
    assert secrets_seen == {bytes([i]) * 48 for i in range(1, 21)}


def test_secrets_are_stored_wrapped(store: KeyStore, store_url: str) -> None:
    store.create("k", "aez", {}, False, b"S3CRET-MATERIAL" * 3 + b"xxx", None)
    if store_url.startswith("sqlite"):
        raw = Path(store_url.removeprefix("sqlite:///")).read_bytes()
        assert b"S3CRET-MATERIAL" not in raw


def test_wrapped_blob_is_bound_to_its_row(store_url: str) -> None:
    """A blob copied to another key's row does not unwrap: the AAD binds name and version."""
    store = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        store.create("a", "aez", {}, False, b"a" * 48, None)
        store.create("b", "aez", {}, False, b"b" * 48, None)
        with store._transaction(write=True) as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT wrapped FROM key_versions WHERE name = ?", ("a",))
            (blob,) = cursor.fetchone()
            cursor.execute("UPDATE key_versions SET wrapped = ? WHERE name = ?", (blob, "b"))
        with pytest.raises(UnwrapError):
            store.material("b")
    finally:
        store.close()


def test_a_store_opens_only_under_its_root_key(store_url: str) -> None:
    first = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    first.create("k", "aez", {}, False, b"k" * 48, None)
    first.close()
    with pytest.raises(RootKeyMismatchError, match="root key does not open this key store"):
        open_store(store_url, lambda: KeyWrapper(bytes(32)))
    again = open_store(store_url, lambda: KeyWrapper(ROOT_KEY))
    try:
        assert again.material("k").secret == b"k" * 48
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
    store.create("k", "aez", {}, False, b"k" * 48, None)
    with store._transaction(write=True) as cursor:  # as such a store was made
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
    assert reopened.material("k").secret == b"k" * 48
    reopened.close()
    with pytest.raises(RootKeyMismatchError):
        open_store(store_url, lambda: KeyWrapper(bytes(32)))


def test_tokens(store: KeyStore) -> None:
    record = TokenRecord(
        "0123456789abcdef", b"h" * 32, "ci", ("orders-*",), ("encrypt",), 1.0, None
    )
    store.add_token(record)
    assert store.token_by_hash(b"h" * 32) == record
    assert store.token_by_hash(b"x" * 32) is None
    assert store.list_tokens() == [record]
    assert store.delete_token(record.id) is True
    assert store.delete_token(record.id) is False
    assert store.token_by_hash(b"h" * 32) is None


def test_ping(store: KeyStore) -> None:
    store.ping()


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
        PostgresKeyStore(url, lambda: KeyWrapper(ROOT_KEY), connect_seconds=30)
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
        PostgresKeyStore(
            url.format(password=password), lambda: KeyWrapper(ROOT_KEY), connect_seconds=30
        )
    assert str(refused.value).startswith("PostgreSQL refuses the connection: ")
    assert password not in str(refused.value)


def test_a_database_not_answering_yet_is_waited_for() -> None:
    url = "postgresql://postgres@127.0.0.1:1/postgres"  # nothing listens there
    with pytest.raises(KeyStoreError, match=r"no connection to PostgreSQL within 1 s: .*refused"):
        PostgresKeyStore(url, lambda: KeyWrapper(ROOT_KEY), connect_seconds=1)


def test_a_deleted_secret_leaves_no_trace_in_the_sqlite_files(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = open_store(f"sqlite:///{path}", lambda: KeyWrapper(ROOT_KEY))
    try:
        store.create("gone", "aez", {}, True, b"g" * 48, None)
        store.create("kept", "aez", {}, True, b"k" * 48, None)
        with store._transaction(write=False) as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT wrapped FROM key_versions WHERE name = ?", ("gone",))
            (wrapped,) = cursor.fetchone()
        files = [path, path.with_name(path.name + "-wal")]
        assert any(bytes(wrapped) in f.read_bytes() for f in files if f.exists())
        store.delete("gone")
        for file in files:
            if file.exists():
                assert bytes(wrapped) not in file.read_bytes(), file
        assert store.material("kept").secret == b"k" * 48
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
        store.create("k", "aez", {}, False, b"a" * 48, None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM keys").fetchone()
        started = time.monotonic()
        store.delete("k")
        assert time.monotonic() - started < LOCK_WAIT_SECONDS
        with pytest.raises(KeyNotFoundError):
            store.get("k")
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
        created = store.create("k", "aez", {}, False, b"a" * 48, None)
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreUnavailableError, match="retry"):
            store.rotate("k", b"b" * 48, None, created.created_at)
        assert store.material("k").secret == b"a" * 48  # reads go on beside the writer
        holder.execute("ROLLBACK")
        assert store.rotate("k", b"b" * 48, None, created.created_at).latest_version == 2
    finally:
        holder.close()
        store.close()


def test_audit_rows_go_in_with_a_few_fixed_statements(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any number of rows takes statements of the fixed sizes only, so the drivers' caches of
    prepared statements hold a handful, whatever the mover's group sizes."""
    statements: set[str] = set()
    real_insert = sql._insert_audit

    def noting(cursor: Any, rows: Any, head: AuditHead) -> None:
        class Noted:
            def execute(self, query: str, params: Any = ()) -> Any:
                statements.add(query)
                return cursor.execute(query, params)

        real_insert(Noted(), rows, head)

    monkeypatch.setattr(sql, "_insert_audit", noting)
    seq = 0
    for count in (1, 3, 7, 21, 64, 65, 149, 90):
        rows = []
        for _ in range(count):
            seq += 1
            rows.append(
                AuditRow(
                    "c1", seq, 1.0, "r", None, "admin", "op", None, None, 200, None, "{}", b"m"
                )
            )
        store.append_audit(rows, AuditHead("c1", seq, b"t"))
    inserts = [s for s in statements if s.startswith("INSERT INTO audit (")]
    assert sorted(s.count("), (") + 1 for s in inserts) == sorted(sql.AUDIT_ROWS_PER_INSERT)
    stored = store.audit_records(AuditQuery(limit=1000))
    assert [row.seq for row in stored] == list(range(1, seq + 1))
