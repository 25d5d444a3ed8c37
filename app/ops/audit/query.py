"""Reading the trail: pages of stored records, oldest first, as `GET /v1/audit` and `cipherd
audit list` show them."""

import re
from typing import Any

from app.ops.audit.chain import REGISTER
from app.ops.audit.record import record_json
from app.ops.errors import invalid_input
from app.store import AuditQuery, KeyStore

# A record's place in its chain as a `next` writes it: ASCII digits (`str.isdecimal` takes any
# script's), no more than a BIGINT (and SQLite's INTEGER) holds.
_SEQ = re.compile(r"[0-9]{1,19}")
_MAX_SEQ = 2**63 - 1


def listing(store: KeyStore, query: AuditQuery) -> tuple[list[dict[str, Any]], str | None]:
    """A page of records and the `after` of the next one (None on the last page)."""
    # The register of chains is the trail's own bookkeeping, not a record of what was done.
    rows, more = store.audit.records(AuditQuery(**{**query.__dict__, "other_than_chain": REGISTER}))
    next_after = f"{rows[-1].chain}.{rows[-1].seq}" if more else None
    return [record_json(row) for row in rows], next_after


def page_start(store: KeyStore, after: str) -> tuple[float, str, int]:
    """The (time, chain, seq) a page's `next` stands for; 422 if it names no record."""
    chain, _, seq = after.partition(".")
    fits = _SEQ.fullmatch(seq) is not None and int(seq) <= _MAX_SEQ
    row = store.audit.record(chain, int(seq)) if fits else None
    if row is None:
        raise invalid_input(f"after: {after!r} is not the `next` of a page")
    return row.time, row.chain, row.seq
