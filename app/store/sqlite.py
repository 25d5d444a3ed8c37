"""SQLite backend: the embedded default, one file in the data directory.

WAL lets readers run beside a writer, so several worker processes share one file. A process
keeps at most POOL_SIZE connections, lent to one thread at a time and kept when it is done
with them: the thread pool retires idle threads and starts new ones, and a connection per
thread would leave one behind (a file descriptor and a page cache) with every thread it
outlived. Write transactions start with BEGIN IMMEDIATE, which takes the database's write lock,
so concurrent rotations queue on it instead of failing half-way; a write that waits
LOCK_WAIT_SECONDS (another process frozen while holding the lock) fails with
StoreUnavailableError. `synchronous=FULL` makes a write that has returned survive a crash.
`secure_delete` zeroes what a deletion frees, and a deletion is checkpointed at once (unless
another connection still reads an older snapshot), so a deleted key's wrapped secret does not
stay behind in the database or its write-ahead log.

A full disk fails writes with StorageFullError and nothing else: reads go on, and writes work
again once there is space. The log is checkpointed every WAL_CHECKPOINT_PAGES pages and cut
back to that size, so the store's own files do not grow without its data growing.
"""

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from app.store.database import LOCK_WAIT_SECONDS, Cursor, Database, Dialect, Session
from app.store.errors import KeyStoreError, StorageFullError, StoreUnavailableError
from app.store.patterns import GlobParts, sqlite_glob

# Connections per process: more threads than this wait for one (reads take microseconds).
POOL_SIZE = 8
# Write-ahead log pages between checkpoints (SQLite's default is 1000, 4 MiB).
WAL_CHECKPOINT_PAGES = 100
# Page cache per connection (SQLite's default is 2 MiB): the file is in the system's cache
# anyway, and a connection's own cache grows with the database up to this, per connection.
CACHE_KIB = 256
# How long a readiness probe waits for the write lock before it settles for a read.
PROBE_LOCK_WAIT_SECONDS = 0.2
_PAGE_BYTES = 4096

# SQLite's primary result codes: a lock held elsewhere, a failed read or write, a full disk.
_BUSY, _LOCKED, _IOERR, _FULL = 5, 6, 10, 13

log = logging.getLogger("cipherd.keystore")


class _LockedError(StoreUnavailableError):
    """The write lock stayed with another connection for the whole wait."""


# A token's patterns, each bound to a parameter, ORed in a balanced tree: SQLite refuses an
# expression nested more than 1,000 deep (a chain of 1,000 ORs was), and keeps planning a GLOB
# with a literal start as a range of the name index. Past MOST_BOUND_GLOBS (a build takes at
# least 32,766 parameters, and a statement's size grows with them) they are one JSON array,
# read into a table once per query, that each name is matched against: any number of them, at
# about half the speed per row (10,000 patterns over 20,000 keys: 17 s rather than 8).
MOST_BOUND_GLOBS = 10_000


def _name_matches(globs: Sequence[GlobParts]) -> tuple[str, list[str]]:
    patterns = list(map(sqlite_glob, globs))
    if len(patterns) <= MOST_BOUND_GLOBS:
        return _any_glob(len(patterns)), patterns
    return (
        "EXISTS (WITH wanted(pattern) AS MATERIALIZED (SELECT value FROM json_each(?))"
        " SELECT 1 FROM wanted WHERE name GLOB wanted.pattern)",
        [json.dumps(patterns)],
    )


def _any_glob(count: int) -> str:
    """`name GLOB ?` `count` times (at least once), ORed in a tree log2(`count`) deep."""
    if count <= 1:
        return "name GLOB ?"
    half = count // 2
    return f"({_any_glob(half)} OR {_any_glob(count - half)})"


DIALECT = Dialect(
    blob="BLOB",
    row_lock="",  # a write transaction holds the whole database
    share_lock="",
    skip_locked="",
    name_lock="",
    integrity_error=sqlite3.IntegrityError,
    byte_length="length(CAST({} AS BLOB))",  # octet_length() is SQLite 3.43's
    name_matches=_name_matches,
)


class SqliteDatabase(Database):
    dialect = DIALECT

    def __init__(self, path: Path, pool_size: int = POOL_SIZE) -> None:
        self._path = path
        self._slots = threading.BoundedSemaphore(pool_size)
        self._idle: list[sqlite3.Connection] = []  # most recently used last
        self._idle_lock = threading.Lock()
        self._closed = False
        self._at_once = _ReadsAtOnce(self)

    def create_schema(self, create: Callable[[Cursor], None]) -> None:
        def create_with_probe(cursor: Cursor) -> None:
            create(cursor)
            # One row that readiness probes overwrite (see `ping`).
            cursor.execute(
                "CREATE TABLE IF NOT EXISTS store_probe"
                " (id INTEGER PRIMARY KEY, written_at DOUBLE PRECISION NOT NULL)"
            )

        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            super().create_schema(create_with_probe)
        except (OSError, sqlite3.DatabaseError, StoreUnavailableError) as exc:
            raise KeyStoreError(f"cannot open the SQLite store {self._path}: {exc}") from exc

    def has_column(self, cursor: Cursor, table: str, column: str) -> bool:
        cursor.execute(f"PRAGMA table_info({table})")
        return any(row[1] == column for row in cursor.fetchall())

    def _connect(self, lock_wait_seconds: float = LOCK_WAIT_SECONDS) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self._path,
            isolation_level=None,
            check_same_thread=False,  # lent to one thread at a time, by `_connection`
            timeout=lock_wait_seconds,
        )
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("PRAGMA secure_delete = ON")
        connection.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        connection.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        connection.execute(f"PRAGMA journal_size_limit = {WAL_CHECKPOINT_PAGES * _PAGE_BYTES}")
        return connection

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection of the pool, for this thread alone until the block ends."""
        if not self._slots.acquire(timeout=LOCK_WAIT_SECONDS):
            raise StoreUnavailableError(
                f"every SQLite connection of this process stayed busy for {LOCK_WAIT_SECONDS:g} s;"
                " retry"
            )
        try:
            with self._idle_lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                connection = self._connect()
            try:
                yield connection
            finally:
                # One left inside a transaction (a ROLLBACK that failed) is not lent again.
                if self._closed or connection.in_transaction:
                    connection.close()
                else:
                    with self._idle_lock:
                        self._idle.append(connection)
        finally:
            self._slots.release()

    @contextmanager
    def transaction(
        self, write: bool, lock_wait_seconds: float = LOCK_WAIT_SECONDS
    ) -> Iterator[Cursor]:
        wait = None if lock_wait_seconds == LOCK_WAIT_SECONDS else lock_wait_seconds
        with self._connection() as connection, _transaction(connection, write, wait) as cursor:
            yield cursor

    def at_once(self) -> Session:
        return self._at_once

    def secrets_destroyed(self) -> None:
        """Leave no destroyed secret behind in the database or its write-ahead log."""
        # Move the zeroed pages into the database and empty the log, which still holds the
        # pages as they were. Without waiting: a reader holding an old snapshot (a backup, a
        # frozen worker) makes it give up at once rather than hold the delete for the busy
        # timeout; a later checkpoint then completes it. The delete itself is durable by now,
        # so a checkpoint that fails (a full disk) is only logged.
        with self._connection() as connection:
            connection.execute("PRAGMA busy_timeout = 0")
            try:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError as exc:
                log.warning("SQLite checkpoint after a delete failed: %s", exc)
            finally:
                connection.execute(f"PRAGMA busy_timeout = {round(LOCK_WAIT_SECONDS * 1000)}")

    def ping(self) -> None:
        """A read, then a write of the probe row: a full disk fails writes while reads go on,
        and a store that cannot write is not ready. A write lock held elsewhere for the whole
        probe wait means another connection is writing, which is enough."""
        super().ping()
        try:
            with self.transaction(True, PROBE_LOCK_WAIT_SECONDS) as cursor:
                cursor.execute(
                    "INSERT OR REPLACE INTO store_probe (id, written_at) VALUES (1, ?)",
                    (time.time(),),
                )
        except _LockedError:
            pass

    def close(self) -> None:
        self._closed = True
        with self._idle_lock:
            for connection in self._idle:
                connection.close()
            self._idle.clear()
        self._at_once.close()


class _ReadsAtOnce(Session):
    """Read transactions for the event loop, which must not wait: on a connection of the
    calling thread's own rather than the pool's (which threads may all hold, waiting for the
    write lock), and a file that is busy (SQLite's recovery of a crashed writer's log, say) is
    StoreUnavailableError at once rather than after the busy timeout."""

    dialect = DIALECT

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database
        self._mine = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Cursor]:
        if write:
            raise ValueError("a session for reads")
        if self._database._closed:
            raise StoreUnavailableError("the key store is closed")
        connection: sqlite3.Connection | None = getattr(self._mine, "connection", None)
        if connection is None:
            try:
                connection = self._database._connect(lock_wait_seconds=0)
            except sqlite3.Error as exc:  # busy while it set the connection up, or gone
                raise StoreUnavailableError(
                    f"the SQLite store did not open at once: {exc}"
                ) from None
            with self._opened_lock:
                self._opened.append(connection)
            self._mine.connection = connection
        with _transaction(connection, False) as cursor:
            yield cursor

    def secrets_destroyed(self) -> None:
        """Nothing: a read destroys nothing."""

    def generation_moved(self) -> None:
        """Nothing: a read moves nothing."""

    def close(self) -> None:
        with self._opened_lock:
            for connection in self._opened:
                connection.close()
            self._opened.clear()


@contextmanager
def _transaction(
    connection: sqlite3.Connection, write: bool, lock_wait_seconds: float | None = None
) -> Iterator[Cursor]:
    """A transaction on `connection`, waiting `lock_wait_seconds` for a lock held elsewhere
    (None: the wait the connection was opened with)."""
    cursor = connection.cursor()
    try:
        if lock_wait_seconds is not None:
            cursor.execute(f"PRAGMA busy_timeout = {round(lock_wait_seconds * 1000)}")
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cursor
            cursor.execute("COMMIT")
        finally:
            # An error in the block, or a COMMIT that failed (SQLite may already have rolled
            # back on its own after a full disk).
            if connection.in_transaction:
                cursor.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        raise _unavailable(exc, write) from None
    finally:
        if lock_wait_seconds is not None:
            cursor.execute(f"PRAGMA busy_timeout = {round(LOCK_WAIT_SECONDS * 1000)}")
        cursor.close()


def _unavailable(exc: sqlite3.OperationalError, write: bool) -> Exception:
    """The store error an SQLite failure stands for, or `exc` itself (a bug)."""
    code = exc.sqlite_errorcode & 0xFF
    if code in (_BUSY, _LOCKED):
        return _LockedError(
            f"the SQLite store stayed locked by another process for {LOCK_WAIT_SECONDS:g} s; retry"
        )
    if code in (_FULL, _IOERR):
        log.warning("SQLite %s failed: %s", "write" if write else "read", exc)
        if code == _FULL:
            return StorageFullError("the key store's disk is full; retry once space is freed")
        return StoreUnavailableError("the key store could not read or write its files; retry")
    return exc
