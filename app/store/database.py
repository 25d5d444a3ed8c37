"""What the repositories run on: a backend's connections, transactions and SQL dialect
(`Database`), and one transaction a caller holds across several repositories (`Transaction`).

A repository takes a `Session` and opens a transaction through it for each call. The backend
is itself a session, whose every call is a transaction of its own; a `Transaction` is one whose
every call joins the transaction the caller opened, so that several repositories' changes are
stored together or not at all. The queries are written once, with `?` placeholders, for both
backends; what differs between them is in their `Dialect` and their overrides here.
"""

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from app.store.errors import KeyStoreError
from app.store.patterns import GlobParts, Scope, prefix_globs, usable

# How long a write waits for a lock another process holds (its rotation of the same key, or for
# SQLite any write) before it gives up with StoreUnavailableError, a 503 the client retries.
LOCK_WAIT_SECONDS = 10.0
# How long one connection attempt to one database host may take (whole seconds, libpq's way)
# unless a setting says otherwise.
CONNECT_TIMEOUT_SECONDS = 3


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses, with `?` placeholders on every backend."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> object: ...
    def fetchone(self) -> tuple[Any, ...] | None: ...
    def fetchall(self) -> list[tuple[Any, ...]]: ...


def delete_expired(
    cursor: Cursor, table: str, key: str, expired: str, params: Sequence[Any], limit: int
) -> list[Any]:
    """Delete up to `limit` rows of `table` for which `expired` holds, those that expired first,
    in one statement; the `key` column of each. The maintenance pass frees rows this way a
    bounded number at a time."""
    cursor.execute(
        f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {expired}"
        f" ORDER BY expires_at LIMIT ?) RETURNING {key}",
        (*params, limit),
    )
    return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class Dialect:
    """Where a backend's SQL differs from the shared queries'."""

    blob: str  # the column type of bytes
    row_lock: str  # appended to a SELECT in a write transaction to hold the rows it reads
    # Appended to a SELECT to keep the rows it reads from changing until the transaction ends,
    # without holding them from other readers that do the same.
    share_lock: str
    # Appended to the SELECT of versions to rewrap: replicas rewrapping at once take different
    # rows instead of queueing on the same ones.
    skip_locked: str
    # A statement that holds, until the transaction ends, a lock on the name it is given, for
    # checks across tables a unique constraint cannot make ("" where writes are serial).
    name_lock: str
    integrity_error: type[Exception]  # what the driver raises when a unique constraint holds
    # The length in bytes of a text expression, `{}` standing for it: what a page of stored
    # text weighs, counted by the database before it ships the rows.
    byte_length: str
    # A condition, and its parameters, that `name` matches one of the token globs.
    name_matches: Callable[[Sequence[GlobParts]], tuple[str, list[str]]]

    def lock_name(self, cursor: "Cursor", name: str) -> None:
        """Hold `name_lock` on `name` in `cursor`'s transaction."""
        if self.name_lock:
            cursor.execute(self.name_lock, (name,))

    def name_matches_any(self, patterns: Sequence[str]) -> tuple[str, list[str]]:
        """`name_matches` of a token's patterns: a stored one outside the grammar matches
        nothing, and so does a token without any."""
        globs = usable(patterns)
        return self.name_matches(globs) if globs else ("FALSE", [])

    def name_within(self, scope: Scope) -> tuple[str, list[str]]:
        """A condition, and its parameters, that `name` is within `scope`: matched by one of
        its groups' globs, and starting with none of that group's excluded prefixes (nothing
        for an empty scope)."""
        conditions: list[str] = []
        params: list[str] = []
        for patterns, excluded in scope:
            condition, args = self.name_matches_any(patterns)
            outside = prefix_globs(excluded)
            if outside:
                excluding, excluded_args = self.name_matches(outside)
                condition, args = f"({condition} AND NOT ({excluding}))", [*args, *excluded_args]
            conditions.append(condition)
            params.extend(args)
        return ("(" + " OR ".join(conditions) + ")", params) if conditions else ("FALSE", [])


class Session(ABC):
    """Where a repository's statements run."""

    dialect: Dialect

    @abstractmethod
    def transaction(self, write: bool) -> AbstractContextManager[Cursor]:
        """A cursor inside a transaction; `write` transactions serialise with each other."""

    @abstractmethod
    def secrets_destroyed(self) -> None:
        """Secrets were destroyed in this session's last transaction: once it has committed,
        leave no copy of them behind."""

    @abstractmethod
    def generation_moved(self) -> None:
        """The auth generation moved in this session's last transaction
        (`app.store.auth_state`): once it has committed, count it in `Database.auth_moves`."""

    def read_row(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row a read gives, in a transaction of its own; None if it gives none."""
        with self.transaction(write=False) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()

    def at_once(self) -> "Session | None":
        """A session for reads that the event loop may make itself because they never wait
        (SQLite's, of a file on this machine); None where a read may wait on a network."""
        return None


class Database(Session):
    """A backend: each call of `transaction` is a transaction of its own."""

    # The auth generation's moves committed through this backend by this process: a reader
    # that finds the count unchanged since it last read the generation knows that no change
    # of this process's came in between (`app.ops.auth`).
    auth_moves = 0
    _moves_lock = threading.Lock()

    def create_schema(self, create: Callable[[Cursor], None]) -> None:
        """Run `create` (tables, migrations, the root key's check) in one write transaction,
        serialised with other processes opening the store at once."""
        with self.transaction(write=True) as cursor:
            create(cursor)

    @abstractmethod
    def has_column(self, cursor: Cursor, table: str, column: str) -> bool:
        """Whether `table` has `column` (stores made by older code lack some)."""

    def secrets_destroyed(self) -> None:
        """Nothing to do where the database keeps no copy of deleted rows."""

    def generation_moved(self) -> None:
        with self._moves_lock:
            self.auth_moves += 1

    def read_clock(self) -> float:
        """The database's time, in seconds since the epoch (`app.store.clock`): on a database
        in a file of this machine, this machine's."""
        return time.time()

    def ping(self) -> None:
        """Raise if the store cannot be reached."""
        self.read_row("SELECT 1")

    @abstractmethod
    def close(self) -> None:
        """Release connections."""


class Transaction(Session):
    """One transaction of `database`, held by a caller: every call joins it."""

    def __init__(self, database: Database, cursor: Cursor, write: bool) -> None:
        self.dialect = database.dialect
        self._cursor = cursor
        self._write = write
        self.destroyed = False
        self.moved = False
        self.ended = False

    def transaction(self, write: bool) -> AbstractContextManager[Cursor]:
        if self.ended:
            raise KeyStoreError("the transaction has ended: open another")
        if write and not self._write:
            raise KeyStoreError("a change inside a read-only transaction")
        return nullcontext(self._cursor)

    def secrets_destroyed(self) -> None:
        self.destroyed = True  # the holder tells the database once the transaction commits

    def generation_moved(self) -> None:
        self.moved = True  # the same
