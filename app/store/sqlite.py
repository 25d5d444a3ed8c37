"""SQLite backend: the embedded default, one file in the data directory.

WAL lets readers run beside a writer, so several worker processes share one file. Every
thread gets its own connection (sqlite3 connections are not shared across threads), and write
transactions start with BEGIN IMMEDIATE, which takes the database's write lock, so concurrent
rotations queue on it instead of failing half-way; a write that waits LOCK_WAIT_SECONDS (another
process frozen while holding the lock) fails with StoreUnavailableError. `synchronous=FULL`
makes a write that has returned survive a crash. `secure_delete` zeroes what a deletion frees,
and a deletion is checkpointed at once (unless another connection still reads an older snapshot),
so a deleted key's wrapped secret does not stay behind in the database or its write-ahead log.
"""

import builtins
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from app.store.base import (
    LOCK_WAIT_SECONDS,
    AuditHead,
    AuditRow,
    KeyInfo,
    KeyStoreError,
    StoreUnavailableError,
)
from app.store.hierarchy import RootKeyLoader
from app.store.patterns import GlobParts, sqlite_glob
from app.store.sql import Cursor, SqlKeyStore

_BUSY, _LOCKED = 5, 6  # SQLite's primary result codes for a lock held elsewhere


class SqliteKeyStore(SqlKeyStore):
    INTEGRITY_ERROR = sqlite3.IntegrityError

    def __init__(self, path: Path, load_root: RootKeyLoader) -> None:
        super().__init__(load_root)
        self._path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._create_schema()
        except (OSError, sqlite3.DatabaseError) as exc:
            raise KeyStoreError(f"cannot open the SQLite store {path}: {exc}") from exc

    def _name_matches(self, globs: Sequence[GlobParts]) -> tuple[str, list[str]]:
        return "(" + " OR ".join(["name GLOB ?"] * len(globs)) + ")", list(map(sqlite_glob, globs))

    def _has_column(self, cursor: Cursor, table: str, column: str) -> bool:
        cursor.execute(f"PRAGMA table_info({table})")
        return any(row[1] == column for row in cursor.fetchall())

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self._path,
                isolation_level=None,
                check_same_thread=False,
                timeout=LOCK_WAIT_SECONDS,
            )
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA secure_delete = ON")
            self._local.connection = connection
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Cursor]:
        connection = self._connection()
        cursor = connection.cursor()
        try:
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cursor
            except BaseException:
                cursor.execute("ROLLBACK")
                raise
            else:
                cursor.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in (_BUSY, _LOCKED):
                raise
            raise StoreUnavailableError(
                f"the SQLite store stayed locked by another process for {LOCK_WAIT_SECONDS:g} s;"
                " retry"
            ) from None
        finally:
            cursor.close()

    def append_audit(self, rows: Sequence[AuditRow], head: AuditHead, sync: bool = True) -> None:
        if sync:
            super().append_audit(rows, head)
            return
        # In WAL mode, NORMAL commits to the log without waiting for the disk.
        connection = self._connection()
        connection.execute("PRAGMA synchronous = NORMAL")
        try:
            super().append_audit(rows, head, sync=False)
        finally:
            connection.execute("PRAGMA synchronous = FULL")

    def delete(self, name: str) -> None:
        super().delete(name)
        self._checkpoint()

    def destroy_due(self, now: float) -> builtins.list[str]:
        destroyed = super().destroy_due(now)
        if destroyed:
            self._checkpoint()
        return destroyed

    def trim(self, name: str) -> tuple[KeyInfo, builtins.list[int]]:
        trimmed = super().trim(name)
        if trimmed[1]:
            self._checkpoint()
        return trimmed

    def _checkpoint(self) -> None:
        """Leave no destroyed secret behind in the database or its write-ahead log."""
        # Move the zeroed pages into the database and empty the log, which still holds the
        # pages as they were. Without waiting: a reader holding an old snapshot (a backup, a
        # frozen worker) makes it give up at once rather than hold the delete for the busy
        # timeout; a later checkpoint then completes it.
        connection = self._connection()
        connection.execute("PRAGMA busy_timeout = 0")
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.execute(f"PRAGMA busy_timeout = {round(LOCK_WAIT_SECONDS * 1000)}")

    def close(self) -> None:
        with self._connections_lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()
