"""Vault's `sys/policies/acl`: named policies written and read as Vault's HCL, in the subset
that maps onto cipherd's rules (`app.ops.hcl_policy`; the admin operation `policies`)."""

from datetime import UTC, datetime

from fastapi import Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app.http.deps import audit_note, services
from app.http.vault import (
    answer,
    keys_of,
    listing,
    no_content,
    read_body,
    vault_admin,
    vault_router,
    written,
)
from app.ops import hcl_policy, policies
from app.ops.auth import AdminOperation
from app.ops.errors import Problem
from app.ops.work import in_thread

router = vault_router("/v1/sys/policies", "sys-policies")


class VaultPolicy(BaseModel):
    model_config = ConfigDict(extra="ignore")

    policy: str = Field(max_length=hcl_policy.MAX_HCL_BYTES)


async def _write(request: Request, name: str) -> Response:
    await vault_admin(request, AdminOperation.POLICIES, change=True)
    body = await read_body(request, VaultPolicy)
    document = hcl_policy.parse(body.policy)
    written = await in_thread(policies.put, services(request).store, name, document)
    audit_note(request.scope).details.update(policy=name, version=written.version)
    return no_content()


written(
    router,
    "/acl/{name}",
    _write,
    methods=("PUT", "POST"),
    summary="Create or replace a policy written in Vault's HCL (the subset that maps)",
    name="write_acl_policy",
    body=VaultPolicy,
)


@listing(router, "/acl", "The policies' names")
async def list_acl_policies(request: Request) -> Response:
    await vault_admin(request, AdminOperation.POLICIES)
    return await answer(request, keys_of(await in_thread(policies.names, services(request).store)))


@router.get("/acl/{name}", summary="A policy as Vault's HCL")
async def read_acl_policy(request: Request, name: str) -> Response:
    await vault_admin(request, AdminOperation.POLICIES)
    store = services(request).store
    try:
        policy = await in_thread(policies.get, store, name)
    except Problem as problem:
        if problem.status == 404:
            raise Problem(404, "not-found", "Not found", "") from None
        raise
    modified = policy.updated_at or datetime.fromtimestamp(0, UTC)
    data = {
        "allow_slashes_in_identity_templates": False,
        "allow_wildcards_in_identity_templates": False,
        "cas_required": False,
        "modified": modified.isoformat().replace("+00:00", "Z"),
        "name": policy.name,
        "policy": hcl_policy.render(policy.model_dump(mode="json")),
        "version": policy.version,
    }
    return await answer(request, data)


@router.delete("/acl/{name}", summary="Delete a policy", status_code=204)
async def delete_acl_policy(request: Request, name: str) -> Response:
    await vault_admin(request, AdminOperation.POLICIES, change=True)
    store = services(request).store
    try:
        await in_thread(policies.delete, store, name)
    except Problem as problem:
        if problem.status != 404:  # Vault answers a missing policy's deletion 204 too
            raise
    audit_note(request.scope).details.update(policy=name[:128])
    return no_content()
