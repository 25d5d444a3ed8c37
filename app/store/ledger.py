"""The FE ledger: the functions released under each FE key version, and the basis of their span
that the function policy decides on (`app.ops.fe_policy`).

A decision reads the ledger and records what it releases in one write transaction that holds the
version's basis row, so that decisions on one version are serialised on every replica. The
ledger's rows go with their key version: `forget` is called in the transaction that destroys it.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.store.database import Cursor, Session
from app.store.errors import KeyNotFoundError, VersionNotFoundError
from app.store.pages import read_weighed
from app.store.records import FunctionLedger, FunctionPage, FunctionRecord

DecisionT = TypeVar("DecisionT")
# The functions a page lists when its reader reads them all (a backup).
PAGE_ROWS = 1000


class LedgerRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def release(
        self, name: str, version: int, decide: Callable[[FunctionLedger], DecisionT]
    ) -> DecisionT:
        """Run `decide` on the ledger of one key version in one write transaction, serialised
        with every other decision on that version on every replica, and store what it recorded
        (nothing if it raises)."""
        row_lock = self._session.dialect.row_lock
        with self._session.transaction(write=True) as cursor:
            # The key's row is the lock that serialises decisions on the key, on every replica:
            # a quota counts releases under all its versions, and a trim or a destruction,
            # which lock it too, cannot take the version from under the decision.
            cursor.execute(f"SELECT params FROM keys WHERE name = ?{row_lock}", (name,))
            key = cursor.fetchone()
            if key is None:
                raise KeyNotFoundError(name)
            cursor.execute(
                "SELECT 1 FROM key_versions WHERE name = ? AND version = ?", (name, version)
            )
            if cursor.fetchone() is None:
                raise VersionNotFoundError(name, version)
            cursor.execute(
                "INSERT INTO fe_bases (name, version, basis) VALUES (?, ?, '[]')"
                " ON CONFLICT DO NOTHING",
                (name, version),
            )
            cursor.execute(
                "SELECT basis FROM fe_bases WHERE name = ? AND version = ?", (name, version)
            )
            row = cursor.fetchone()
            assert row is not None
            ledger = _Ledger(cursor, name, version, json.loads(row[0]), json.loads(key[0]))
            decision = decide(ledger)
            ledger.write()
            return decision

    def functions(
        self, name: str, version: int, *, after: int = 0, limit: int = PAGE_ROWS
    ) -> FunctionPage:
        """The functions released under one key version after position `after`, oldest first:
        `limit` of them at most, and none past the one whose stored text brings the page to
        `PAGE_BYTES`; and the rank of all the version's functions."""
        with self._session.transaction(write=False) as cursor:
            rows, more = read_weighed(
                cursor,
                self._session.dialect,
                "seq, function, principal, time, rank",
                "function",
                "FROM fe_functions WHERE name = ? AND version = ? AND seq > ? ORDER BY seq",
                (name, version, after),
                limit,
            )
            # The rank after the version's last release: that of all its functions.
            cursor.execute(
                "SELECT rank FROM fe_functions WHERE name = ? AND version = ?"
                " ORDER BY seq DESC LIMIT 1",
                (name, version),
            )
            last = cursor.fetchone()
        records = [
            FunctionRecord(version, seq, json.loads(function), principal, time_, rank)
            for seq, function, principal, time_, rank in rows
        ]
        return FunctionPage(records, records[-1].seq if more else None, int(last[0]) if last else 0)


def forget(cursor: Cursor, name: str, below: int | None = None) -> None:
    """Remove the ledger of a key's versions below `below` (every version when None), in the
    transaction that destroys them."""
    for table in ("fe_functions", "fe_bases"):
        if below is None:
            cursor.execute(f"DELETE FROM {table} WHERE name = ?", (name,))
        else:
            cursor.execute(f"DELETE FROM {table} WHERE name = ? AND version < ?", (name, below))


@dataclass(eq=False)
class _Ledger(FunctionLedger):
    """The function ledger of one key version inside a store transaction: `_read` is the basis
    as read, which a decision that changes `basis` no longer is."""

    _cursor: Cursor
    _name: str
    _version: int
    basis: list[list[int]]
    params: dict[str, Any]
    _records: list[tuple[Any, str, float, int]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._read = self.basis

    def released_since(self, principal: str, since: float) -> int:
        self._cursor.execute(
            "SELECT COUNT(*) FROM fe_functions WHERE name = ? AND principal = ? AND time > ?",
            (self._name, principal, since),
        )
        row = self._cursor.fetchone()
        return (int(row[0]) if row else 0) + sum(
            1 for _, who, when, _ in self._records if who == principal and when > since
        )

    def record(self, function: Any, principal: str, time: float, rank: int) -> None:
        self._records.append((function, principal, time, rank))

    def write(self) -> None:
        """Store what was decided: the records, then the basis they leave if the decision
        replaced it (one that leaves the rank as it was leaves the basis as it was read)."""
        if not self._records:
            return
        self._cursor.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM fe_functions WHERE name = ? AND version = ?",
            (self._name, self._version),
        )
        row = self._cursor.fetchone()
        seq = int(row[0]) if row else 0
        for function, principal, when, rank in self._records:
            seq += 1
            self._cursor.execute(
                "INSERT INTO fe_functions (name, version, seq, function, principal, time, rank)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self._name, self._version, seq, json.dumps(function), principal, when, rank),
            )
        if self.basis is not self._read:
            self._cursor.execute(
                "UPDATE fe_bases SET basis = ? WHERE name = ? AND version = ?",
                (json.dumps(self.basis, separators=(",", ":")), self._name, self._version),
            )
