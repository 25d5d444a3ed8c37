"""The audit trail: who did what with which key, allowed or refused, in hash chains.

Every request that names a key or a token or needs a token gets one record (`app.http` builds it
from what the request's `AuditNote` learned on the way); actions outside a request (the CLI,
scheduled deletions, automatic rotations) are recorded with `AuditTrail.record`.

In parts, each depending only on those before it:
- `record`: what a record holds, and how it is shown;
- `chain`: the MAC chains, the register of chains, and `verify`;
- `anchor`: each chain's head, published where the database's writer cannot roll it back;
- `mover`: the thread that takes records from the process's journal into the store, adopts
  the journals of processes that have ended, and publishes the anchors;
- `writer`: `AuditTrail`, which appends records to the journal by group commit, fail closed;
- `query`: pages of stored records;
- `report`: `audit verify`'s report, in words.
"""

from app.ops.audit.chain import REGISTER, ChainFault, verify
from app.ops.audit.mover import adopt_orphans
from app.ops.audit.query import listing, page_start
from app.ops.audit.record import FIRST_FAILURE, SYSTEM, AuditNote, AuditRecord
from app.ops.audit.report import report
from app.ops.audit.writer import CHANGE_ROOM_BYTES, AuditTrail
from app.store import AuditQuery

__all__ = [
    "CHANGE_ROOM_BYTES",
    "FIRST_FAILURE",
    "REGISTER",
    "SYSTEM",
    "AuditNote",
    "AuditQuery",
    "AuditRecord",
    "AuditTrail",
    "ChainFault",
    "adopt_orphans",
    "listing",
    "page_start",
    "report",
    "verify",
]
