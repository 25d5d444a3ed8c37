"""The audit trail's store side: the records of every chain, each chain's head, and the key of
their MACs. What a record says and how a chain is made and verified is `app.ops.audit`'s; here
records are stored as they come, and read back by query, by position and by chain.
"""

import os
from collections.abc import Callable, Sequence
from typing import Any

from app.store.database import Cursor, Session
from app.store.keyring import Terms
from app.store.pages import read_weighed
from app.store.records import AuditHead, AuditQuery, AuditRow, AuditSummary

COLUMNS = (
    "chain, seq, time, request_id, client, principal, operation, key_name, key_version, status,"
    " problem, details, mac"
)
# The MAC key's wrapping identity: no key has an empty name or version 0.
MAC_KEY_IDENTITY = ("", 0, "audit-mac-key")
# Rows per INSERT: runs of the largest size, the rest in the smaller ones. A few fixed sizes
# make a few statements, which the drivers prepare once and keep; a statement per length would
# fill their caches with dozens of large ones. 64 rows of 13 columns stay under SQLite's oldest
# limit of 999 parameters per statement.
ROWS_PER_INSERT = (64, 16, 4, 1)
_PLACEHOLDERS = "(" + ", ".join(["?"] * 13) + ")"
_INSERTS = {
    size: f"INSERT INTO audit ({COLUMNS}) VALUES "
    + ", ".join([_PLACEHOLDERS] * size)
    + " ON CONFLICT (chain, seq) DO NOTHING"
    for size in ROWS_PER_INSERT
}

# What a caller extending a chain answers: the records that follow, and the new head (None:
# nothing to add).
Extension = tuple[Sequence[AuditRow], AuditHead | None]


class AuditRepository:
    def __init__(self, session: Session, terms: Terms) -> None:
        self._session = session
        self._terms = terms

    def append(self, rows: Sequence[AuditRow], head: AuditHead) -> None:
        """Store audit records of one chain and its new head (unless the stored head is further
        on), in one transaction, on disk when this returns; records already stored (by an
        earlier move of the same journal) are left as they are."""
        with self._session.transaction(write=True) as cursor:
            if not rows:  # a check that the table takes writes: it inserts nothing
                cursor.execute(
                    f"INSERT INTO audit ({COLUMNS}) SELECT {COLUMNS} FROM audit WHERE 1 = 0"
                )
            _insert(cursor, rows, head)

    def extend_chain(self, chain: str, extend: Callable[[Sequence[AuditRow]], Extension]) -> None:
        """Append to a chain that several processes write, one at a time: `extend` is given
        the chain's records so far, under its lock, and answers the records that follow and
        the new head (None: nothing to add)."""
        with self._session.transaction(write=True) as cursor:
            # A head row to lock, the chain's first writer's; replaced below.
            cursor.execute(
                "INSERT INTO audit_heads (chain, seq, tag) VALUES (?, 0, ?)"
                " ON CONFLICT (chain) DO NOTHING",
                (chain, b""),
            )
            row_lock = self._session.dialect.row_lock
            cursor.execute(f"SELECT seq FROM audit_heads WHERE chain = ?{row_lock}", (chain,))
            cursor.fetchone()
            cursor.execute(f"SELECT {COLUMNS} FROM audit WHERE chain = ? ORDER BY seq", (chain,))
            rows, head = extend([_row(row) for row in cursor.fetchall()])
            if head is not None:
                _insert(cursor, rows, head)

    def mac_key(self) -> bytes:
        """The key of the audit trail's MACs: drawn once per store, kept wrapped in it."""
        with self._session.transaction(write=True) as cursor:
            (key,) = self._terms.kept_once(
                cursor, "audit_key", ("wrapped",), MAC_KEY_IDENTITY, lambda: (os.urandom(32),)
            )
        return key

    def records(self, query: AuditQuery) -> tuple[Sequence[AuditRow], bool]:
        """Records matching `query`, oldest first (by time, chain, seq): at most `limit`, and
        none after the one whose details bring them to `PAGE_BYTES`; and whether more match."""
        conditions: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("key_name = ?", query.key),
            ("principal = ?", query.principal),
            ("operation = ?", query.operation),
            ("status >= ?", query.status_from),
            ("status <= ?", query.status_to),
            ("time >= ?", query.since),
            ("time < ?", query.until),
            ("chain != ?", query.other_than_chain),
        ):
            if value is not None:
                conditions.append(column)
                params.append(value)
        if query.after is not None:
            conditions.append("(time, chain, seq) > (?, ?, ?)")
            params.extend(query.after)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        rows, more = self._weighed(f"{where} ORDER BY time, chain, seq", params, query.limit)
        return [_row(row) for row in rows], more

    def newest_of_key(
        self, name: str, since: float, before: tuple[float, str, int] | None, limit: int
    ) -> Sequence[AuditSummary]:
        """Up to `limit` records of the key `name` made at `since` or later and before `before`
        (a record's time, chain and seq; None: up to the newest), newest first: a walk back
        along the index of records by key, without their details."""
        conditions, params = "key_name = ? AND time >= ?", [name, since]
        if before is not None:
            conditions += " AND (time, chain, seq) < (?, ?, ?)"
            params.extend(before)
        with self._session.transaction(write=False) as cursor:
            cursor.execute(
                "SELECT time, chain, seq, operation, status, request_id FROM audit"
                f" WHERE {conditions} ORDER BY time DESC, chain DESC, seq DESC LIMIT ?",
                [*params, limit],
            )
            return [AuditSummary(*row) for row in cursor.fetchall()]

    def record(self, chain: str, seq: int) -> AuditRow | None:
        """One record by its place in its chain."""
        row = self._session.read_row(
            f"SELECT {COLUMNS} FROM audit WHERE chain = ? AND seq = ?", (chain, seq)
        )
        return None if row is None else _row(row)

    def chain(self, chain: str, after_seq: int, limit: int) -> Sequence[tuple[Any, ...]]:
        """The records of `chain` at positions `after_seq` + 1 to `after_seq` + `limit` (fewer
        where some are missing, or where their details reach `PAGE_BYTES`), in chain order,
        as the database gives them: `AuditRow`'s fields in order, the MAC as bytes (verify
        reads millions; an object for each costs a tenth of its time). A window of positions,
        not a count after one: with statistics older than the rows, PostgreSQL sorts a chain's
        whole remainder for `seq > ? ORDER BY seq LIMIT ?`, and a chain read page by page in
        that form costs its length squared."""
        window = (chain, after_seq, after_seq + limit)
        rows, _ = self._weighed(
            " WHERE chain = ? AND seq > ? AND seq <= ? ORDER BY seq", window, limit
        )
        return rows

    def _weighed(
        self, selection: str, params: Sequence[Any], limit: int
    ) -> tuple[Sequence[tuple[Any, ...]], bool]:
        """`read_weighed` of the records `selection` picks, weighed by their details."""
        with self._session.transaction(write=False) as cursor:
            return read_weighed(
                cursor,
                self._session.dialect,
                COLUMNS,
                "details",
                f"FROM audit{selection}",
                params,
                limit,
            )

    def last_seq(self, chain: str) -> int:
        """The highest position stored in `chain` (0: none)."""
        row = self._session.read_row("SELECT max(seq) FROM audit WHERE chain = ?", (chain,))
        return 0 if row is None or row[0] is None else int(row[0])

    def head(self, chain: str) -> AuditHead:
        """The head of one chain (seq 0 if it has none)."""
        row = self._session.read_row("SELECT seq, tag FROM audit_heads WHERE chain = ?", (chain,))
        return AuditHead(chain, 0, b"") if row is None else AuditHead(chain, row[0], bytes(row[1]))

    def heads(self) -> Sequence[AuditHead]:
        """The head of every chain, and a head of seq 0 for a chain with records but no head."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute("SELECT chain, seq, tag FROM audit_heads ORDER BY chain")
            heads = {
                chain: AuditHead(chain, seq, bytes(tag)) for chain, seq, tag in cursor.fetchall()
            }
            cursor.execute("SELECT DISTINCT chain FROM audit")
            for (chain,) in cursor.fetchall():
                heads.setdefault(chain, AuditHead(chain, 0, b""))
        return sorted(heads.values(), key=lambda head: head.chain)


def _insert(cursor: Cursor, rows: Sequence[AuditRow], head: AuditHead) -> None:
    # Many rows per statement: each statement is a trip through the driver, and for the mover
    # thread a wait for the interpreter lock.
    start = 0
    for size in ROWS_PER_INSERT:
        while len(rows) - start >= size:
            chunk, start = rows[start : start + size], start + size
            # A record already there is one a journal was moved with before (or a forgery that
            # `verify` finds): moving a journal again changes nothing.
            cursor.execute(_INSERTS[size], [value for row in chunk for value in row])
    cursor.execute(
        "INSERT INTO audit_heads (chain, seq, tag) VALUES (?, ?, ?)"
        " ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, tag = excluded.tag"
        " WHERE excluded.seq >= audit_heads.seq",
        (head.chain, head.seq, head.tag),
    )


def _row(row: tuple[Any, ...]) -> AuditRow:
    return AuditRow._make(row)  # both drivers give the MAC as bytes
