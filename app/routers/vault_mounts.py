"""Vault's `sys/mounts` (the Transit engines and their paths), `sys/remount` (a mount or an auth
method moved), `sys/health` and `sys/seal-status`, in Vault's shapes: what Vault's clients read
before they use Transit."""

import time
from typing import Annotated, Any

from fastapi import Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, create_model

from app.http.body import JsonAnswer
from app.http.deps import audit_note, require_admin_operation, services
from app.http.framework import takes_any_query
from app.http.transit import transit_call
from app.http.vault import (
    answer,
    doubled,
    mount_reads,
    mount_table,
    no_content,
    read_body,
    vault_admin,
    vault_body,
    vault_router,
)
from app.ops import health, keys, remount, transit
from app.ops.errors import Problem
from app.ops.grants import AdminOperation
from app.ops.transit.mounts import OPENBAO_RELEASE, mount_entry
from app.ops.vault_fields import VaultBody
from app.ops.work import in_thread

router = vault_router("/v1/sys", "sys-mounts")
health_router = vault_router("/v1/sys", "sys-mounts", token=False)
CLUSTER = {"cluster_name": "cipherd", "cluster_id": "00000000-0000-0000-0000-000000000000"}


@router.get("/mounts", summary="The secrets engines mounted (Vault's sys/mounts)")
async def list_mounts(request: Request) -> Response:
    call = await transit_call(request, "sys_list_mounts", AdminOperation.SYS)
    table = await in_thread(call.services.mounts.table)
    return mount_table(request, table, mount_entry)


async def _entry(request: Request, path: str) -> dict[str, Any]:
    """The mount at `path` as `sys/mounts` shows it."""
    call = await transit_call(request, "sys_read_mount", AdminOperation.SYS)
    table = await in_thread(call.services.mounts.table)
    mount = table.get(path.strip("/"))
    if mount is None:
        raise transit.mounts.not_mounted(path)
    return mount_entry(mount)


mount_reads(router, "/mounts", _entry, what="A mount", name="mount")


class VaultMountRequest(VaultBody):
    type: str
    description: str | None = None


@router.post(
    "/mounts/{path:path}",
    summary="Enable a Transit engine at a path",
    status_code=204,
    openapi_extra=vault_body(VaultMountRequest),
)
async def enable_mount(request: Request, path: str) -> Response:
    call = await transit_call(request, "sys_enable_mount", AdminOperation.SYS, change=True)
    body = await read_body(request, VaultMountRequest)
    mount = await in_thread(
        call.services.mounts.enable, path, body.type, (body.description or "")[:1024]
    )
    audit_note(request.scope).details.update(mount=mount.path, key_prefix=mount.key_prefix)
    return no_content()


@router.delete(
    "/mounts/{path:path}",
    summary="Disable a mount: its keys go to pending deletion, its path is free at once",
    status_code=204,
)
async def disable_mount(request: Request, path: str) -> Response:
    call = await transit_call(request, "sys_disable_mount", AdminOperation.SYS, change=True)
    services = call.services
    scheduled = await in_thread(
        transit.mounts.disable, services.mounts, services.keyring, path, services.settings
    )
    audit_note(request.scope).details.update(mount=path.strip("/")[:128], keys=len(scheduled))
    if scheduled:  # as a deletion: no process still uses them once answered
        keys.answer_waits_for_caches(audit_note(request.scope), services.settings)
    return no_content()


# Made so, its field `from` is named as Vault's clients send it (a keyword in Python); a Vault
# body's fields have no aliases (`read_body`).
VaultRemount = create_model(
    "VaultRemount",
    __config__=ConfigDict(extra="ignore"),
    **{name: (str, Field("", max_length=1024)) for name in ("from", "to")},  # type: ignore[call-overload]
)


# A move's id: a UUID's 36 characters (Vault's too).
MIGRATION_ID_LENGTH = 36
# Either table's admin may move a mount of it (`sys` for Transit mounts, `auth` for methods).
MOVERS = (AdminOperation.SYS, AdminOperation.AUTH)


@router.post(
    "/remount",
    summary="Move a Transit mount or an auth method (`auth/...`) to another path; done when "
    "answered",
    openapi_extra=vault_body(VaultRemount),
)
async def move_mount(request: Request) -> Response:
    note = audit_note(request.scope)
    note.operation = "sys_remount"  # as the mount routes name theirs
    principal = await vault_admin(request, MOVERS, change=True)
    body = await read_body(request, VaultRemount)
    fields = body.model_dump()
    # What was asked, refused or not.
    note.details.update(source=fields["from"][:128], target=fields["to"][:128])
    asked = remount.planned(fields["from"], fields["to"])
    require_admin_operation(principal, asked.needs)
    service = services(request)
    migration = await in_thread(remount.move, service.mounts, service.auth_mounts, asked)
    note.details.update(source=migration.source, target=migration.target, migration_id=migration.id)
    if not asked.auth:
        # Done when answered: every process's mount table (kept as long as a key) has then
        # been read again. An auth method's move moves the auth generation instead.
        note.answer_after = service.settings.key_cache_seconds
    return doubled(request, {"migration_id": migration.id})


@router.get("/remount/status/{migration_id}", summary="A move's status: `success` once answered")
async def read_move_status(request: Request, migration_id: str) -> Response:
    audit_note(request.scope).operation = "sys_remount_status"
    await vault_admin(request, MOVERS)
    status = None
    if len(migration_id) <= MIGRATION_ID_LENGTH:  # a longer one is no id: unknown, unasked
        status = await in_thread(remount.status, services(request).store, migration_id)
    if status is None:
        raise Problem(404, "not-found", "Not found", "")  # as Vault: no error words
    return await answer(request, status)


async def _ready(request: Request) -> bool:
    return await health.ready(services(request).store)


class VaultHealthQuery(BaseModel):
    """Vault's health options: the status codes a load balancer asks for. This service is
    always active, initialized and unsealed, so only `activecode` changes the answer."""

    model_config = ConfigDict(extra="ignore")  # as Vault: a probe's own parameters pass

    standbyok: bool = False
    perfstandbyok: bool = False
    activecode: int = Field(
        200,
        ge=200,
        le=299,
        description="a 2xx status for a ready service; 204 and 205 without a body",
    )
    standbycode: int = 429
    drsecondarycode: int = 472
    haunhealthycode: int = 474
    performancestandbycode: int = 473
    removedcode: int = 530
    sealedcode: int = 503
    uninitcode: int = 501


@health_router.get(
    "/health",
    summary="Health as Vault answers it (no token): `activecode` (200) ready, 503 not",
    responses={
        "2XX": {"description": "ready: the status `activecode` asks for (200 by default)"},
        503: {"description": "not ready: the key store does not answer"},
    },
)
@takes_any_query
async def vault_health(request: Request, query: Annotated[VaultHealthQuery, Query()]) -> Response:
    ready = await _ready(request)
    body = {
        "initialized": True,
        "sealed": False,
        "standby": False,
        "replication_performance_mode": "disabled",
        "replication_dr_mode": "disabled",
        "server_time_utc": int(time.time()),
        "version": OPENBAO_RELEASE,
        **CLUSTER,
    }
    if not ready:
        return JsonAnswer(body, status_code=503)
    if query.activecode in (204, 205):  # statuses that carry no body
        return Response(status_code=query.activecode)
    return JsonAnswer(body, status_code=query.activecode)


@health_router.get("/leader", summary="High availability as Vault answers it (no token): none")
async def leader() -> Response:
    return JsonAnswer({"ha_enabled": False})


@health_router.get("/init", summary="Initialization as Vault answers it (no token): done")
async def init_status() -> Response:
    return JsonAnswer({"initialized": True})


@health_router.get("/seal-status", summary="Seal status as Vault answers it (no token): unsealed")
async def seal_status(request: Request) -> Response:
    body = {
        "type": "shamir",
        "initialized": True,
        "sealed": False,
        "t": 1,
        "n": 1,
        "progress": 0,
        "nonce": "",
        "recovery_seal": False,
        "version": OPENBAO_RELEASE,
        "migration": False,
        **CLUSTER,
        "storage_type": services(request).settings.resolved_database_url.split(":", 1)[0],
    }
    return JsonAnswer(body)
