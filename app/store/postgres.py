"""PostgreSQL backend: one store shared by several replicas.

A connection pool serves the worker threads. A rotation locks its key row with
SELECT ... FOR UPDATE, so concurrent rotations from any replica get consecutive versions.

A connection the server dropped (a restart, a failover, an idle timeout on the way) is replaced
rather than failing a request: a transaction's first statement finds it out, before anything
was done on it (`_Statements`). While the database does not answer at all, store calls fail
after STORE_WAIT_SECONDS (then DOWN_WAIT_SECONDS) with StoreUnavailableError (503 to the
client), and work again once it is back: the pool's attempts to reconnect back off (1, 2, 4 ...
s), and after RECONNECT_SECONDS of them it gives up and the next request starts afresh, so that
a long outage does not leave the service waiting out a long backoff after the database is back.

A URL may name several hosts (libpq's multi-host URLs): each connection goes to the first that
answers within the connect timeout and, by default, takes writes; after a failover, connections
to the old primary fail and their replacements find the promoted one.
"""

import contextlib
import json
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.errors import IdleInTransactionSessionTimeout, ReadOnlySqlTransaction
from psycopg_pool import ConnectionPool, PoolTimeout

from app.store.database import (
    CONNECT_TIMEOUT_SECONDS,
    LOCK_WAIT_SECONDS,
    Cursor,
    Database,
    Dialect,
)
from app.store.errors import KeyStoreError, NulInTextError, StoreUnavailableError
from app.store.patterns import GlobParts, postgres_regexes

SCHEMA_LOCK_ID = 0x63697068  # advisory lock taken while creating tables
NAME_LOCK_CLASS = 0x6E616D65  # the first half of the advisory lock on a name (two-key space)
# How long a start waits for PostgreSQL: long enough for one started beside it (compose).
CONNECT_SECONDS = 30.0
# How long a request waits for a connection before its answer is 503: a database that is down
# is answered for within a second, and a healthy pool lends one in milliseconds. Once a call
# found it down, the next ones wait DOWN_WAIT_SECONDS, until one gets an answer again.
STORE_WAIT_SECONDS = 0.75
DOWN_WAIT_SECONDS = 0.25
MIN_WAIT_SECONDS = 0.001
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
# How long a connection whose host has vanished from the network (no answer, not even a
# refusal) takes to fail: by TCP keepalives while it is idle, by the TCP user timeout while it
# waits for its data to be acknowledged.
DEAD_PEER_SECONDS = 10

# libpq's words for refusals that stay refusals, however long a start waits.
_FINAL_REFUSAL = re.compile(
    r"invalid|missing \"=\"|does not exist|authentication failed|no password supplied"
    r"|no pg_hba\.conf entry|does not support SSL"
)
_RETRY_SECONDS = 0.5
DEFAULT_PORT = "5432"
# What a call that cannot reach the database raises: the server gone or not answering, a
# session it ended, no connection to lend; a session on a server that is no longer the primary.
_UNAVAILABLE = (
    psycopg.OperationalError,
    IdleInTransactionSessionTimeout,
    ReadOnlySqlTransaction,
    PoolTimeout,
)

log = logging.getLogger("cipherd.keystore")


class _Statements:
    """The cursor of one transaction on a connection of the pool, with `?` placeholders.

    No statement checks a connection before it is used: the transaction's first statement
    does (a write's BEGIN, a read's first query). If that fails because the connection is
    broken (the server restarted or failed over since it was last used), nothing was done on
    it, and the statement goes to another connection, until `deadline` (monotonic). A read
    runs in autocommit, each statement its own transaction: under READ COMMITTED a transaction
    around reads would add two round trips (BEGIN, COMMIT) and no consistency.
    """

    def __init__(self, pool: ConnectionPool, deadline: float, write: bool) -> None:
        self._pool = pool
        self._deadline = deadline
        self._write = write
        self._connection: psycopg.Connection | None = None
        self._cursor: Any = None
        self._proven = False  # a statement went through on this connection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        if any(type(value) is str and "\x00" in value for value in params):
            raise NulInTextError  # the driver's DataError, before a round trip
        sql = sql.replace("?", "%s")
        if self._proven:
            self._cursor.execute(sql, params)
        else:
            self._first(sql, params)

    def fetchone(self) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._cursor.fetchone()
        return row

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._cursor.fetchall()
        return rows

    def begin(self) -> None:
        if self._write:
            self._first("BEGIN", ())

    def end(self, commit: bool) -> None:
        """COMMIT (or ROLLBACK) a write; give the connection back to the pool."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            if self._write and self._proven and not connection.broken:
                if commit:
                    connection.execute("COMMIT")
                else:
                    # A ROLLBACK that fails leaves the connection for the pool to reset or
                    # replace; the error that called for it is the one to raise.
                    with contextlib.suppress(psycopg.Error):
                        connection.execute("ROLLBACK")
        finally:
            self._pool.putconn(connection)  # a broken one, the pool replaces

    def _first(self, sql: str, params: Sequence[Any]) -> None:
        while True:
            if self._connection is None:
                wait = self._deadline - time.monotonic()
                self._connection = self._pool.getconn(timeout=max(wait, MIN_WAIT_SECONDS))
                # Results in binary: the same Python values, read with half the CPU of
                # their text (an audit page of 10,000 rows: 1.5-2x faster to load).
                self._cursor = self._connection.cursor(binary=True)
            try:
                self._cursor.execute(sql, params)
            except psycopg.OperationalError:
                if not self._connection.broken or time.monotonic() >= self._deadline:
                    raise
                self.end(commit=False)  # dead before this statement: try another
                continue
            self._proven = True
            return


# A token's patterns become regular expressions of at most REGEX_CHARS characters each
# (`postgres_regexes`): one for up to some hundreds of patterns, where one for 10,000 long ones
# was refused as too complex. PostgreSQL keeps 32 compiled expressions per session, so up to
# MOST_REGEXES_ORED of them are ORed and stay compiled from row to row, and a page reads keys in
# name order until it is full. Past that (tens of thousands of patterns) each row would compile
# them all afresh (10,000 patterns over 5,000 keys: 98 s as 34 expressions, 2 s as 10), so each
# is applied to every key in turn instead (OFFSET 0 keeps the planner from nesting them the
# other way round) and the page is cut from the names they matched; the listing of keys is
# this condition's only user.
REGEX_CHARS = 16_000
MOST_REGEXES_ORED = 24


def _name_matches(globs: Sequence[GlobParts]) -> tuple[str, list[str]]:
    regexes = postgres_regexes(globs, REGEX_CHARS)
    if len(regexes) <= MOST_REGEXES_ORED:
        return "(" + " OR ".join(["name ~ ?"] * len(regexes)) + ")", regexes
    return (
        "name IN (SELECT matched.name FROM json_array_elements_text(?::json) AS part(regex)"
        " CROSS JOIN LATERAL (SELECT name FROM keys WHERE name ~ part.regex OFFSET 0) AS matched)",
        [json.dumps(regexes)],
    )


DIALECT = Dialect(
    blob="BYTEA",
    row_lock=" FOR UPDATE",
    share_lock=" FOR SHARE",
    skip_locked=" FOR UPDATE OF v SKIP LOCKED",
    name_lock=f"SELECT pg_advisory_xact_lock({NAME_LOCK_CLASS}, hashtext(?))",
    integrity_error=psycopg.IntegrityError,
    byte_length="octet_length({})",  # read from a stored value's header, not its text
    name_matches=_name_matches,
)


class PostgresDatabase(Database):
    dialect = DIALECT

    def __init__(
        self,
        url: str,
        pool_size: int = 8,
        connect_seconds: float = CONNECT_SECONDS,
        connect_timeout: int = CONNECT_TIMEOUT_SECONDS,
    ) -> None:
        options = connection_options(url, connect_timeout)
        hosts = _Hosts(url)
        hosts.answered(*_first_connection(hosts, options, connect_seconds))
        self._answering = True
        self._pool = ConnectionPool(
            hosts.conninfo,
            kwargs={**options, "autocommit": True},
            min_size=1,
            max_size=pool_size,
            open=True,
            configure=partial(_configure, hosts),
            timeout=STORE_WAIT_SECONDS,
            reconnect_timeout=RECONNECT_SECONDS,
        )
        try:
            # The pool's first connection, before the first request asks for it: a host of the
            # URL that hangs costs each new connection its connect timeout.
            self._pool.wait(timeout=connect_seconds)
        except PoolTimeout:
            raise KeyStoreError(
                f"no connection to PostgreSQL within {connect_seconds:g} s"
            ) from None

    def create_schema(self, create: Callable[[Cursor], None]) -> None:
        with self.transaction(write=True) as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK_ID,))
            create(cursor)

    def has_column(self, cursor: Cursor, table: str, column: str) -> bool:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = ? AND column_name = ?",
            (table, column),
        )
        return cursor.fetchone() is not None

    def read_clock(self) -> float:
        row = self.read_row("SELECT extract(epoch FROM clock_timestamp())")
        assert row is not None
        return float(row[0])

    @contextmanager
    def transaction(self, write: bool) -> Iterator[Cursor]:
        # While the database does not answer, a call waits less for it: the first call to find
        # it down waited the whole STORE_WAIT_SECONDS already.
        wait = STORE_WAIT_SECONDS if self._answering else DOWN_WAIT_SECONDS
        statements = _Statements(self._pool, time.monotonic() + wait, write)
        try:
            try:
                statements.begin()
                yield statements
            except BaseException:
                statements.end(commit=False)
                raise
            statements.end(commit=True)
        except _UNAVAILABLE as exc:
            self._answering = False
            log.warning("PostgreSQL unavailable: %s", _one_line(exc))
            raise StoreUnavailableError("the key store is not answering; retry shortly") from exc
        self._answering = True

    def close(self) -> None:
        self._pool.close()


def _configure(hosts: "_Hosts", connection: psycopg.Connection) -> None:
    """Session limits of every pooled connection (see LOCK_WAIT_SECONDS, STATEMENT_SECONDS),
    in one round trip; and its host, to be tried first by the next connection."""
    hosts.answered(connection.info.host, connection.info.port)
    idle_ms = round(IDLE_IN_TRANSACTION_SECONDS * 1000)
    connection.execute(
        f"SET lock_timeout = {round(LOCK_WAIT_SECONDS * 1000)};"
        f" SET statement_timeout = {round(STATEMENT_SECONDS * 1000)};"
        f" SET idle_in_transaction_session_timeout = {idle_ms}"
    )


class _Hosts:
    """The hosts of a URL, tried from the one that answered last: libpq tries them in order,
    and with a host that vanished from the network first in the URL (an old primary, say) every
    new connection would first wait out its connect timeout there."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._params = conninfo_to_dict(url)
        hosts = str(self._params.get("host") or "").split(",")
        ports = str(self._params.get("port") or "").split(",")
        if len(ports) == 1:
            ports *= len(hosts)
        self._hosts = [
            (host, port or DEFAULT_PORT) for host, port in zip(hosts, ports, strict=False)
        ]
        self._first = 0

    def conninfo(self) -> str:
        first = self._first
        if first == 0:
            return self.url
        order = self._hosts[first:] + self._hosts[:first]
        params = {**self._params}
        params["host"] = ",".join(host for host, _ in order)
        params["port"] = ",".join(port for _, port in order)
        addresses = str(params.get("hostaddr") or "").split(",")
        if len(addresses) == len(order):
            params["hostaddr"] = ",".join(addresses[first:] + addresses[:first])
        return make_conninfo("", **params)

    def first_to_answer(self, options: dict[str, Any]) -> tuple[str, int]:
        """Connect to every host at once (a start need not wait out a silent host's timeout
        before it tries the next): the host and port of the first to take the connection (as
        `options` ask), or the error of the last to refuse."""
        if len(self._hosts) < 2:
            with psycopg.connect(self.url, **options) as connection:
                return connection.info.host, connection.info.port
        answers: queue.Queue[tuple[str, int] | psycopg.Error] = queue.Queue()

        def attempt(host: str, port: str) -> None:
            try:
                with psycopg.connect(self.url, **{**options, "host": host, "port": port}):
                    answers.put((host, int(port)))
            except psycopg.Error as exc:
                answers.put(exc)

        for host, port in self._hosts:
            threading.Thread(target=attempt, args=(host, port), daemon=True).start()
        failure = None
        for _ in self._hosts:
            answer = answers.get()
            if not isinstance(answer, psycopg.Error):
                return answer
            failure = answer
        assert failure is not None
        raise failure

    def answered(self, host: str, port: int) -> None:
        """A connection to `host`:`port` was made: the next ones try it first."""
        answered = (host, str(port))
        if len(self._hosts) > 1 and answered in self._hosts:
            self._first = self._hosts.index(answered)


def connection_options(url: str, connect_timeout: int) -> dict[str, Any]:
    """What every connection adds to `url`: `connect_timeout` per host unless the URL has its
    own; with several hosts, `target_session_attrs=read-write` unless the URL says otherwise,
    so that the one connected to is the primary (a standby would refuse every write); and TCP
    keepalives and a user timeout, so that a connection to a host that vanished from the network
    fails within DEAD_PEER_SECONDS rather than the system's minutes."""
    try:
        given = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:  # libpq refusing the URL itself
        reason = _redacted(_one_line(exc), url)
        raise KeyStoreError(f"PostgreSQL refuses the connection: {reason}") from None
    options: dict[str, Any] = {
        "application_name": "cipherd",  # in pg_stat_activity
        "keepalives": 1,
        "keepalives_idle": DEAD_PEER_SECONDS // 2,
        "keepalives_interval": 1,
        "keepalives_count": DEAD_PEER_SECONDS // 2,
        "tcp_user_timeout": DEAD_PEER_SECONDS * 1000,
    }
    if "connect_timeout" not in given:
        options["connect_timeout"] = connect_timeout
    if "," in str(given.get("host", "")) and "target_session_attrs" not in given:
        options["target_session_attrs"] = "read-write"
    return {name: value for name, value in options.items() if name not in given}


def _first_connection(hosts: "_Hosts", options: dict[str, Any], seconds: float) -> tuple[str, int]:
    """Wait up to `seconds` for PostgreSQL to accept a connection, before the pool opens (each
    of whose failed attempts would log a warning): the host and port that took it. A refusal
    that waiting cannot change (an unknown database or role, a wrong password, a malformed URL)
    ends the wait at once."""
    deadline = time.monotonic() + seconds
    url = hosts.url
    while True:
        try:
            return hosts.first_to_answer(options)
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
