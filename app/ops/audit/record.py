"""An audit record: what a request (or an action of the service's own) did, as the trail takes
it from the request and as the API, the command line and the audit file show it once stored.

A record holds time, request id, client address, principal (a token's id or `admin`, never a
token), operation, key name and version(s), status and problem type, and details that are never
secret.
"""

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from app.ops.errors import Problem
from app.store import AuditRow

KeyVersion = int | list[int] | None

# Who the trail says did what the service does by itself.
SYSTEM = "system"
# A record's outcome: a success below this status, a failure from it on.
FIRST_FAILURE = 400

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class AuditNote:
    """What a request learns about itself for its record, filled in as it runs: who called,
    which key and version(s), the problem it ended with, and details (never secret); and, for a
    route that stands for the native API's (Vault's Transit paths), the native operation."""

    principal: str | None = None
    key: str | None = None
    key_version: KeyVersion = None
    problem: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    change: bool = False
    room: int = 0  # journal bytes set aside for this change's record (`AuditTrail.admit_change`)
    # Seconds the answer waits once the record is written: a deletion waits out the key caches
    # of the other processes, with its record already on disk.
    answer_after: float = 0.0
    operation: str | None = None

    def versions(self, versions: Sequence[int | None]) -> None:
        """The versions a batch used: one version as a number, several as a sorted list."""
        distinct = sorted({v for v in versions if v is not None})
        self.key_version = distinct[0] if len(distinct) == 1 else (distinct or None)


@dataclass(slots=True)  # not frozen: made for every request, and a frozen one costs more
class AuditRecord:
    time: float
    request_id: str
    client: str | None
    principal: str | None
    operation: str
    key: str | None
    key_version: KeyVersion
    status: int
    problem: str | None
    details: dict[str, Any]
    change: bool = False  # a change to keys, tokens or the FE ledger: on disk before its answer
    room: int = 0  # journal bytes set aside for it before the change was made, given back by it


# One encoder for every record: `json.dumps` with options makes a new one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: object) -> str:
    """`value` as the JSON its record's MAC covers: keys sorted, no spaces, text as it is."""
    if not value and isinstance(value, dict):  # most records: no details
        return "{}"
    if type(value) is int:
        return str(value)
    return _CANONICAL.encode(value)


def audit_unavailable(detail: str) -> Problem:
    return Problem(503, "audit-unavailable", "Audit unavailable", detail)


def moment(seconds: float) -> str:
    """ISO 8601 to the microsecond, rounded down: a record is at or after its listed time, so
    `since` set to it finds it and `until` set to it leaves it out. Exactly: the product in
    floats rounds up past the next microsecond for about one time in 170."""
    micros = math.floor(Fraction(seconds) * 1_000_000)
    return (_EPOCH + timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")


def record_json(row: AuditRow) -> dict[str, Any]:
    """A stored record as the API, the command line and the audit file show it."""
    return {
        "time": moment(row.time),
        "request_id": row.request_id,
        "client": row.client,
        "principal": row.principal,
        "operation": row.operation,
        "key": row.key,
        "key_version": None if row.key_version is None else json.loads(row.key_version),
        "status": row.status,
        "outcome": "success" if row.status < FIRST_FAILURE else "failure",
        "problem": row.problem,
        "details": json.loads(row.details),
        "chain": row.chain,
        "seq": row.seq,
        "mac": row.mac.hex(),
    }
