"""The audit trail, read and checked by the admin: `GET /v1/audit` with filters, paged, and
`POST /v1/audit/verify` (`app.ops.audit`)."""

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.http.deps import ServicesDep, admin_of
from app.http.operation import operation_id
from app.http.schemas import PageSize
from app.ops import audit
from app.ops.audit import AuditQuery
from app.ops.errors import invalid_input
from app.ops.grants import AdminOperation, Principal

router = APIRouter(prefix="/v1/audit", tags=["audit"], generate_unique_id_function=operation_id)
Auditor = Annotated[Principal, admin_of(AdminOperation.AUDIT)]
# `outcome`: success (status below 400), failure (400 and above), or one status code.
_OUTCOMES = {
    "success": (None, audit.FIRST_FAILURE - 1),
    "failure": (audit.FIRST_FAILURE, None),
}


class AuditRecordOut(BaseModel):
    time: datetime
    request_id: str
    client: str | None = Field(description="the client's address")
    principal: str | None = Field(
        description="`admin`, a scoped token's id, `system` for the service's own actions, "
        "or null when no valid token was given"
    )
    operation: str = Field(description="the route's operation id, e.g. `aez_encrypt`")
    key: str | None
    key_version: int | list[int] | None
    status: int
    outcome: str = Field(description="`success` (status below 400) or `failure`")
    problem: str | None = Field(description="the problem type's slug of a refusal")
    details: dict[str, Any]
    chain: str
    seq: int
    mac: str = Field(description="HMAC-SHA256 over the record and its chain's previous one, hex")


class AuditPage(BaseModel):
    records: list[AuditRecordOut]
    next: str | None = Field(None, description="pass as `after` for the next page; null at the end")


def _statuses(outcome: str | None) -> tuple[int | None, int | None]:
    if outcome is None:
        return None, None
    if outcome in _OUTCOMES:
        return _OUTCOMES[outcome]
    if outcome.isascii() and outcome.isdecimal() and len(outcome) == 3:
        return int(outcome), int(outcome)
    raise invalid_input("outcome: success, failure or a three-digit status")


def _seconds(moment: datetime) -> float:
    """A query's time in seconds since the epoch; one without an offset is UTC, the service's
    time (not the host's, which could not place year 1)."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@router.get(
    "", response_model=AuditPage, summary="Audit records, oldest first (admin operation audit)"
)
def list_audit(
    services: ServicesDep,
    _: Auditor,
    key: Annotated[str | None, Query(max_length=128)] = None,
    principal: Annotated[str | None, Query(max_length=64)] = None,
    operation: Annotated[str | None, Query(max_length=64)] = None,
    outcome: Annotated[
        str | None, Query(description="success, failure, or a status such as 403")
    ] = None,
    since: Annotated[datetime | None, Query(description="records at or after this time")] = None,
    until: Annotated[datetime | None, Query(description="records before this time")] = None,
    limit: PageSize = 100,
    after: Annotated[str | None, Query(max_length=64, description="a page's `next`")] = None,
) -> AuditPage:
    status_from, status_to = _statuses(outcome)
    services.audit.flush()  # this process's records so far, its caller's included
    query = AuditQuery(
        key=key,
        principal=principal,
        operation=operation,
        status_from=status_from,
        status_to=status_to,
        since=None if since is None else _seconds(since),
        until=None if until is None else _seconds(until),
        after=None if after is None else audit.page_start(services.store, after),
        limit=limit,
    )
    records, next_after = audit.listing(services.store, query)
    return AuditPage(records=[AuditRecordOut(**r) for r in records], next=next_after)


class AuditFault(BaseModel):
    chain: str | None = Field(description="the chain; null: the trail as a whole")
    seq: int | None = Field(description="the first record concerned; null: not about one")
    problem: str = Field(description="what is wrong, in words")


class AuditAnchor(BaseModel):
    source: str = Field(description="where the anchors were read: `file`, `audit-file` or `log`")
    time: datetime = Field(description="when the latest of them was published")
    chains: int = Field(description="the chains they anchor")


class AuditVerification(BaseModel):
    verified: bool
    records: int = Field(description="records checked, in every chain")
    chains: int
    faults: list[AuditFault] = Field(description="each chain's first fault, and the trail's")
    anchor: AuditAnchor | None = Field(
        description="the anchors the store was compared with; null when none was found"
    )


@router.post(
    "/verify",
    response_model=AuditVerification,
    summary="Check every chain against itself and its latest anchor (admin operation audit)",
)
def verify_audit(services: ServicesDep, _: Auditor) -> AuditVerification:
    services.audit.flush()  # this process's records so far, its caller's included
    return AuditVerification(**audit.report(services.store, services.settings))
