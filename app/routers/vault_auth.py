"""Vault's `sys/auth`: the auth methods mounted, enabled and disabled (the admin operation
`auth`; `app.ops.auth_mounts`), in Vault's shapes."""

from typing import Any

from fastapi import Request, Response
from pydantic import Field

from app.http.deps import audit_note, services
from app.http.vault import (
    mount_reads,
    mount_table,
    no_content,
    read_body,
    vault_admin,
    vault_body,
    vault_router,
)
from app.ops.auth_mounts import auth_entry
from app.ops.grants import AdminOperation
from app.ops.vault_fields import VaultBody
from app.ops.work import in_thread

router = vault_router("/v1/sys", "sys-auth")


@router.get("/auth", summary="The auth methods mounted (Vault's sys/auth)")
async def list_auth_methods(request: Request) -> Response:
    await vault_admin(request, AdminOperation.AUTH)
    table = await in_thread(services(request).auth_mounts.table)
    return mount_table(request, table, auth_entry)


async def _entry(request: Request, path: str) -> dict[str, Any]:
    """The auth method at `path` as `sys/auth` shows it."""
    await vault_admin(request, AdminOperation.AUTH)
    return auth_entry(await in_thread(services(request).auth_mounts.find, path))


mount_reads(
    router, "/auth", _entry, what="An auth method", name="auth_method", token_type="default-service"
)


class VaultAuthEnable(VaultBody):
    type: str = Field(max_length=64)
    description: str | None = Field(None, max_length=1024)
    config: dict[str, Any] | None = None


@router.post(
    "/auth/{path:path}",
    summary="Enable an auth method at a path: approle, jwt (or oidc), cert",
    status_code=204,
    openapi_extra=vault_body(VaultAuthEnable),
)
async def enable_auth_method(request: Request, path: str) -> Response:
    await vault_admin(request, AdminOperation.AUTH, change=True)
    body = await read_body(request, VaultAuthEnable)
    mount = await in_thread(
        services(request).auth_mounts.enable, path, body.type, body.description or "", {}
    )
    audit_note(request.scope).details.update(auth_mount=mount.path, type=mount.type)
    return no_content()


@router.delete(
    "/auth/{path:path}",
    summary="Disable an auth method: every token it issued is revoked",
    status_code=204,
)
async def disable_auth_method(request: Request, path: str) -> Response:
    await vault_admin(request, AdminOperation.AUTH, change=True)
    removed = await in_thread(services(request).auth_mounts.disable, path)
    audit_note(request.scope).details.update(auth_mount=path.strip("/")[:128], found=bool(removed))
    return no_content()
