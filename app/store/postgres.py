"""PostgreSQL backend: one store shared by several replicas.

A connection pool serves the worker threads. A rotation locks its key row with
SELECT ... FOR UPDATE, so concurrent rotations from any replica get consecutive versions.

A connection is checked before it is used, so one the server dropped (a restart, a
failover, an idle timeout on the way) is replaced rather than failing a request. While the
database does not answer at all, store calls fail after STORE_WAIT_SECONDS with
StoreUnavailableError (503 to the client), and work again once it is back: the pool's attempts
to reconnect back off (1, 2, 4 ... s), and after RECONNECT_SECONDS of them it gives up and the
next request starts afresh, so that a long outage does not leave the service waiting out a
long backoff after the database is back.
"""

import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

import psycopg
from psycopg.errors import IdleInTransactionSessionTimeout
from psycopg_pool import ConnectionPool, PoolTimeout

from app.store.base import LOCK_WAIT_SECONDS, KeyStoreError, StoreUnavailableError
from app.store.hierarchy import RootKeyLoader
from app.store.patterns import GlobParts, postgres_regex
from app.store.sql import Cursor, SqlKeyStore

SCHEMA_LOCK_ID = 0x63697068  # advisory lock taken while creating tables
# How long a start waits for PostgreSQL: long enough for one started beside it (compose).
CONNECT_SECONDS = 30.0
# How long a request waits for a connection before its answer is 503: a database that is down
# is answered for within about a second, and a healthy pool lends one in milliseconds.
STORE_WAIT_SECONDS = 1.0
# How long the pool goes on trying to replace a connection before it leaves that to the next
# request (see the module's docstring).
RECONNECT_SECONDS = 5.0
# How long PostgreSQL lets a session of ours sit idle inside a transaction (a process frozen
# mid-rotation) before it ends it and frees its locks. Without it (and LOCK_WAIT_SECONDS) one
# frozen replica would stall every other replica's writes to that key indefinitely.
IDLE_IN_TRANSACTION_SECONDS = 30.0
# The longest any one statement of ours may run before PostgreSQL cancels it (a 503 to the
# client): longer than LOCK_WAIT_SECONDS, so that a wait for a lock still ends as a lock timeout,
# and short enough that no query can hold a pooled connection for long.
STATEMENT_SECONDS = LOCK_WAIT_SECONDS + 5

# libpq's words for refusals that stay refusals, however long a start waits.
_FINAL_REFUSAL = re.compile(
    r"invalid|missing \"=\"|does not exist|authentication failed|no password supplied"
    r"|no pg_hba\.conf entry|does not support SSL"
)
_RETRY_SECONDS = 0.5

log = logging.getLogger("cipherd.keystore")


class _QmarkCursor:
    """Lets the shared queries keep `?` placeholders."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cursor.execute(sql.replace("?", "%s"), params)

    def fetchone(self) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._cursor.fetchone()
        return row

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._cursor.fetchall()
        return rows


class PostgresKeyStore(SqlKeyStore):
    BLOB_TYPE = "BYTEA"
    ROW_LOCK = " FOR UPDATE"
    SKIP_LOCKED = " FOR UPDATE OF v SKIP LOCKED"
    INTEGRITY_ERROR = psycopg.IntegrityError

    def __init__(
        self,
        url: str,
        load_root: RootKeyLoader,
        pool_size: int = 8,
        connect_seconds: float = CONNECT_SECONDS,
    ) -> None:
        super().__init__(load_root)
        _first_connection(url, connect_seconds)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=True,
            configure=_configure,
            timeout=STORE_WAIT_SECONDS,
            reconnect_timeout=RECONNECT_SECONDS,
        )
        self._create_schema()

    def _name_matches(self, globs: Sequence[GlobParts]) -> tuple[str, list[str]]:
        return "name ~ ?", [postgres_regex(globs)]

    def _lock_schema(self, cursor: Cursor) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK_ID,))

    def _has_column(self, cursor: Cursor, table: str, column: str) -> bool:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = ? AND column_name = ?",
            (table, column),
        )
        return cursor.fetchone() is not None

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection that answers, within STORE_WAIT_SECONDS (else PoolTimeout).

        Checked here rather than by the pool, which sleeps 1 s (then 2, 4 ...) after each
        connection that fails its check: after a restart of the database every pooled
        connection is dead, and the first request would wait out those sleeps.
        """
        deadline = time.monotonic() + STORE_WAIT_SECONDS
        while True:
            with self._pool.connection(timeout=deadline - time.monotonic()) as connection:
                try:
                    ConnectionPool.check_connection(connection)
                except psycopg.OperationalError:
                    continue  # returned broken, the pool replaces it
                yield connection
                return

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Cursor]:
        try:
            with (
                self._connection() as connection,
                connection.transaction(),
                connection.cursor() as cursor,
            ):
                yield _QmarkCursor(cursor)
        except (psycopg.OperationalError, IdleInTransactionSessionTimeout, PoolTimeout) as exc:
            log.warning("PostgreSQL unavailable: %s", _one_line(exc))
            raise StoreUnavailableError("the key store is not answering; retry shortly") from exc

    def close(self) -> None:
        self._pool.close()


def _configure(connection: psycopg.Connection) -> None:
    """Session limits of every pooled connection (see LOCK_WAIT_SECONDS, STATEMENT_SECONDS)."""
    connection.execute(f"SET lock_timeout = {round(LOCK_WAIT_SECONDS * 1000)}")
    connection.execute(f"SET statement_timeout = {round(STATEMENT_SECONDS * 1000)}")
    idle_ms = round(IDLE_IN_TRANSACTION_SECONDS * 1000)
    connection.execute(f"SET idle_in_transaction_session_timeout = {idle_ms}")
    connection.commit()


def _first_connection(url: str, seconds: float) -> None:
    """Wait up to `seconds` for PostgreSQL to accept a connection, before the pool opens (each
    of whose failed attempts would log a warning). A refusal that waiting cannot change (an
    unknown database or role, a wrong password, a malformed URL) ends the wait at once."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if "connect_timeout" in url:  # the URL's own, as the pool will use it
                connection = psycopg.connect(url)
            else:
                connection = psycopg.connect(url, connect_timeout=5)
            connection.close()
            return
        except psycopg.Error as exc:
            reason = _redacted(_one_line(exc), url)
            # A ProgrammingError is libpq refusing the URL itself.
            if isinstance(exc, psycopg.ProgrammingError) or _FINAL_REFUSAL.search(reason):
                raise KeyStoreError(f"PostgreSQL refuses the connection: {reason}") from None
            if time.monotonic() >= deadline:
                raise KeyStoreError(
                    f"no connection to PostgreSQL within {seconds:g} s: {reason}"
                ) from None
        time.sleep(_RETRY_SECONDS)


def _redacted(text: str, url: str) -> str:
    """`text` without the URL's password: libpq quotes a URL it cannot parse whole."""
    passwords = re.findall(r"//[^/@?]*?:([^/@?]*)@", url) + re.findall(r"[?&]password=([^&]*)", url)
    for password in filter(None, passwords):
        text = text.replace(password, "***").replace(unquote(password), "***")
    return text


def _one_line(exc: Exception) -> str:
    """A driver or pool error on one line, in libpq's words (which hold no key data; see
    `_redacted` for the URL's password)."""
    return " ".join(str(exc).split())
