"""Vault's `sys/policies/acl`, and the older `sys/policy` that hvac's policy calls use: named
policies written and read as Vault's HCL, in the subset that maps onto cipherd's rules
(`app.ops.hcl_policy`; the admin operation `policies`); and `sys/capabilities...`, what a token
may do on Vault's paths, as those rules give it. A name keeps its case, as the native
API's and tokens' do (Vault lowercases it; the `bao` command lowercases it before sending)."""

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import Request, Response
from pydantic import Field

from app.http.deps import arrival, audit_note, services
from app.http.vault import (
    answer,
    caller,
    doubled,
    keys_of,
    listing,
    no_content,
    read_body,
    vault_admin,
    vault_body,
    vault_router,
    written,
)
from app.ops import Services, hcl_policy, policies
from app.ops.capabilities import capabilities, named_by_accessor, named_by_token
from app.ops.errors import Problem, invalid_input
from app.ops.grants import AdminOperation, Principal
from app.ops.vault_fields import Strings, VaultBody
from app.ops.work import in_thread

router = vault_router("/v1/sys", "sys-policies")


class VaultPolicy(VaultBody):
    policy: str = Field("", max_length=hcl_policy.MAX_HCL_BYTES)
    # `sys/policy`'s older name for it.
    rules: str = Field("", max_length=hcl_policy.MAX_HCL_BYTES)


async def _write(request: Request, name: str) -> Response:
    await vault_admin(request, AdminOperation.POLICIES, change=True)
    body = await read_body(request, VaultPolicy)
    text = body.policy or body.rules
    if not text.strip():
        raise invalid_input("'policy' parameter not supplied or empty")
    document = hcl_policy.parse(text)
    written = await in_thread(policies.put, services(request).store, name, document)
    audit_note(request.scope).details.update(policy=written.name, version=written.version)
    return no_content()


async def _names(request: Request) -> list[str]:
    """The policies' names, for a caller with the admin operation `policies`."""
    await vault_admin(request, AdminOperation.POLICIES)
    return list(await in_thread(policies.names, services(request).store))


async def _read(request: Request, name: str) -> dict[str, Any]:
    """The policy's fields as `sys/policies/acl` gives them (404 with no error if none)."""
    await vault_admin(request, AdminOperation.POLICIES)
    try:
        policy = await in_thread(policies.get, services(request).store, name)
    except Problem as problem:
        if problem.status == 404:
            raise Problem(404, "not-found", "Not found", "") from None
        raise
    modified = policy.updated_at or datetime.fromtimestamp(0, UTC)
    return {
        "allow_slashes_in_identity_templates": False,
        "allow_wildcards_in_identity_templates": False,
        "cas_required": False,
        "modified": modified.isoformat().replace("+00:00", "Z"),
        "name": policy.name,
        "policy": hcl_policy.render(policy.model_dump(mode="json")),
        "version": policy.version,
    }


async def _delete(request: Request, name: str) -> Response:
    await vault_admin(request, AdminOperation.POLICIES, change=True)
    try:
        await in_thread(policies.delete, services(request).store, name)
    except Problem as problem:
        if problem.status != 404:  # Vault answers a missing policy's deletion 204 too
            raise
    audit_note(request.scope).details.update(policy=name[:128])
    return no_content()


for _path in ("/policies/acl/{name}", "/policy/{name}"):
    written(
        router,
        _path,
        _write,
        methods=("PUT", "POST"),
        summary="Create or replace a policy written in Vault's HCL (the subset that maps)",
        name="write_acl_policy" if "acl" in _path else "write_policy",
        body=VaultPolicy,
    )
    router.add_api_route(
        _path,
        _delete,
        methods=["DELETE"],
        status_code=204,
        summary="Delete a policy",
        name="delete_acl_policy" if "acl" in _path else "delete_policy",
    )


@listing(router, "/policies/acl", "The policies' names")
async def list_acl_policies(request: Request) -> Response:
    return await answer(request, keys_of(await _names(request)))


@router.get("/policies/acl/{name}", summary="A policy as Vault's HCL")
async def read_acl_policy(request: Request, name: str) -> Response:
    return await answer(request, await _read(request, name))


@router.get("/policy", summary="The policies' names (Vault's older path)")
async def list_policies(request: Request) -> Response:
    names = await _names(request)
    return doubled(request, {"keys": names, "policies": names})


@router.get("/policy/{name}", summary="A policy as Vault's HCL (Vault's older path)")
async def read_policy(request: Request, name: str) -> Response:
    fields = await _read(request, name)
    fields["rules"] = fields.pop("policy")
    return doubled(request, fields)


# The paths one capabilities request may ask about.
MAX_CAPABILITY_PATHS = 100


class VaultCapabilities(VaultBody):
    paths: Strings = Field(default_factory=list, max_length=MAX_CAPABILITY_PATHS)
    path: Strings = Field(  # Vault's older name for it
        default_factory=list, max_length=MAX_CAPABILITY_PATHS
    )
    token: str = Field("", max_length=512)
    accessor: str = Field("", max_length=64)


async def _capabilities(
    request: Request, principal: Principal, body: VaultCapabilities
) -> Response:
    """Each path's capabilities (`app.ops.capabilities`), and for one path also under
    `capabilities`, at the top level and under `data` as Vault answers."""
    paths = body.paths or body.path
    if not paths:
        raise invalid_input("paths must be supplied")
    if any(len(path) > 512 for path in paths):
        raise invalid_input("a path has at most 512 characters")
    mounts = await services(request).mounts.current_table()
    data: dict[str, Any] = {path: capabilities(principal, path, mounts) for path in paths}
    if len(paths) == 1:
        data["capabilities"] = data[paths[0]]
    return doubled(request, data)


CAPABILITIES = vault_body(VaultCapabilities)


@router.post(
    "/capabilities-self",
    summary="The calling token's capabilities on Vault paths",
    openapi_extra=CAPABILITIES,
)
async def capabilities_self(request: Request) -> Response:
    principal = await caller(request)
    return await _capabilities(request, principal, await read_body(request, VaultCapabilities))


def _of_named_token(
    named: Callable[[Services, str, Any], Principal | None], field: str
) -> Callable[[Request], Awaitable[Response]]:
    """`sys/capabilities` and `-accessor`: those of the token the body names by `field` (its
    value, the admin token's too, or its accessor), for a caller with the admin operation
    `tokens`; Vault's 400 if it names none."""

    async def endpoint(request: Request) -> Response:
        await vault_admin(request, AdminOperation.TOKENS)
        body = await read_body(request, VaultCapabilities)
        service = services(request)
        state = await service.auth.current_state(arrival(request.scope))
        principal = await in_thread(named, service, getattr(body, field), state)
        if principal is None:
            raise invalid_input(f"invalid {field}")  # Vault's words
        return await _capabilities(request, principal, body)

    return endpoint


for _path, _named, _field, _how in (
    ("/capabilities", named_by_token, "token", "given the token"),
    ("/capabilities-accessor", named_by_accessor, "accessor", "by its accessor"),
):
    router.add_api_route(
        _path,
        _of_named_token(_named, _field),
        methods=["POST"],
        summary=f"A token's capabilities on Vault paths, {_how} (admin operation tokens)",
        name=f"capabilities_of_{_field}",
        openapi_extra=CAPABILITIES,
    )
