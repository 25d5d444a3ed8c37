"""Vault's AppRole auth method at `/v1/auth/approle/...`, serving every AppRole mount
(`app.http.auth_mounts`): roles, their role ids and secret ids (the admin operation `auth`),
and the login (no token), in Vault's shapes (`app.ops.approle`).

A login's audit record names the method, the mount, the role and the token made (its
accessor), never the secret id; a refused login counts toward the failed-authentication
throttle of the client's address.
"""

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Path, Request, Response
from pydantic import BaseModel, Field

from app.http.auth_mounts import RoleTokenFields, administered_mount, auth_mount_of, login_router
from app.http.deps import audit_note, client_address, services
from app.http.identity import auth_refused, login_answer
from app.http.vault import (
    answer,
    keys_of,
    listing,
    no_content,
    read_body,
    read_login,
    tidied,
    vault_body,
)
from app.ops.approle import (
    FIELD_PATHS,
    ROLE_NAME,
    AppRoles,
    NewSecretId,
    login_settings,
    role_data,
    secret_data,
)
from app.ops.errors import Problem
from app.ops.identity import Identity
from app.ops.role_tokens import role_token
from app.ops.vault_fields import Duration, Strings, VaultBody, VaultBool, VaultInt
from app.ops.work import in_thread

router = login_router("approle")
ModelT = TypeVar("ModelT", bound=BaseModel)
RoleName = Annotated[str, Path(pattern=ROLE_NAME, description="the role's name")]


async def _roles(request: Request, change: bool = False) -> AppRoles:
    """The roles of the request's mount, once the caller may administer auth methods."""
    mount = await administered_mount(request, change)
    audit_note(request.scope).details["auth_mount"] = mount.path
    return AppRoles(services(request).store, mount.accessor)


async def _roles_and_body(
    request: Request, body: type[ModelT], change: bool = False
) -> tuple[AppRoles, ModelT]:
    """The roles of the request's mount (`_roles`), and the request's body."""
    roles = await _roles(request, change)
    return roles, await read_body(request, body)


async def _changed(
    request: Request, role_name: str, change: Callable[..., object], *args: object, **noted: str
) -> Response:
    """A change of the role `role_name`, `change(role_name, *args)`, made; its audit record
    names the role (and `noted`)."""
    await in_thread(change, role_name, *args)
    audit_note(request.scope).details.update(role=role_name, **noted)
    return no_content()


class ApproleRole(RoleTokenFields):
    """A role's fields to set; those not given keep their value (Vault's defaults for a new
    role)."""

    bind_secret_id: VaultBool | None = None
    secret_id_bound_cidrs: Strings | None = None
    secret_id_num_uses: VaultInt | None = None
    secret_id_ttl: Duration | None = None
    local_secret_ids: VaultBool | None = None
    period: Duration | None = Field(None, description="the older name of token_period")
    token_strictly_bind_ip: VaultBool | None = None


@listing(router, "/role", "The AppRole roles of the mount")
async def list_roles(request: Request) -> Response:
    roles = await _roles(request)
    return await answer(request, keys_of(await in_thread(roles.names)))


@router.post(
    "/role/{role_name}",
    summary="Create a role, or change the fields given",
    status_code=204,
    openapi_extra=vault_body(ApproleRole),
)
async def write_role(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleRole, change=True)
    role = await in_thread(roles.write, role_name, body.model_dump(exclude_none=True))
    audit_note(request.scope).details.update(
        role=role.name, policies=role.settings["token_policies"]
    )
    return no_content()


@router.get("/role/{role_name}", summary="A role's fields")
async def read_role(request: Request, role_name: RoleName) -> Response:
    roles = await _roles(request)
    role = await in_thread(roles.role, role_name)
    return await answer(request, role_data(role))


@router.delete("/role/{role_name}", summary="Delete a role and its secret ids", status_code=204)
async def delete_role(request: Request, role_name: RoleName) -> Response:
    roles = await _roles(request, change=True)
    return await _changed(request, role_name, roles.delete)


@router.get("/role/{role_name}/role-id", summary="A role's role id")
async def read_role_id(request: Request, role_name: RoleName) -> Response:
    roles = await _roles(request)
    role = await in_thread(roles.role, role_name)
    return await answer(request, {"role_id": role.role_id})


class ApproleRoleId(VaultBody):
    role_id: str = Field(max_length=512)


@router.post(
    "/role/{role_name}/role-id",
    summary="Set a role's role id",
    status_code=204,
    openapi_extra=vault_body(ApproleRoleId),
)
async def write_role_id(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleRoleId, change=True)
    return await _changed(request, role_name, roles.set_role_id, body.role_id)


class ApproleSecretIdRequest(VaultBody):
    # `NewSecretId`'s fields, as Vault names them (no docstring: it would enter the document).
    metadata: str = Field("", max_length=65536, description="a JSON object of strings")
    cidr_list: Strings = Field([])
    token_bound_cidrs: Strings = Field([])
    num_uses: VaultInt | None = None
    ttl: Duration | None = None


class ApproleCustomSecretId(ApproleSecretIdRequest):
    secret_id: str = Field(max_length=512)


async def _new_secret_id(
    request: Request, roles: AppRoles, role_name: str, body: ApproleSecretIdRequest
) -> Response:
    data = await in_thread(roles.new_secret_id, role_name, NewSecretId(**dict(body)))
    audit_note(request.scope).details.update(
        role=role_name, secret_id_accessor=data["secret_id_accessor"]
    )
    return await answer(request, data)


@router.post(
    "/role/{role_name}/secret-id",
    summary="Draw a secret id for the role (shown once)",
    openapi_extra=vault_body(ApproleSecretIdRequest),
)
async def generate_secret_id(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleSecretIdRequest, change=True)
    return await _new_secret_id(request, roles, role_name, body)


@listing(router, "/role/{role_name}/secret-id", "The accessors of a role's secret ids")
async def list_secret_id_accessors(request: Request, role_name: RoleName) -> Response:
    roles = await _roles(request)
    return await answer(request, keys_of(await in_thread(roles.accessors, role_name)))


@router.post(
    "/role/{role_name}/custom-secret-id",
    summary="Give the role a secret id of the caller's choosing",
    openapi_extra=vault_body(ApproleCustomSecretId),
)
async def create_custom_secret_id(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleCustomSecretId, change=True)
    return await _new_secret_id(request, roles, role_name, body)


class ApproleSecretId(VaultBody):
    secret_id: str = Field(max_length=512)


class ApproleSecretIdAccessor(VaultBody):
    secret_id_accessor: str = Field(max_length=64)


@router.post(
    "/role/{role_name}/secret-id/lookup",
    summary="A secret id's properties, given itself (204 if unknown)",
    openapi_extra=vault_body(ApproleSecretId),
    responses={204: {"description": "the secret id is unknown"}},
)
async def lookup_secret_id(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleSecretId)
    found = await in_thread(roles.secret_id, role_name, body.secret_id)
    return no_content() if found is None else await answer(request, secret_data(found))


@router.post(
    "/role/{role_name}/secret-id/destroy",
    summary="Destroy a secret id, given itself",
    status_code=204,
    openapi_extra=vault_body(ApproleSecretId),
)
async def destroy_secret_id(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleSecretId, change=True)
    return await _changed(request, role_name, roles.destroy, body.secret_id)


@router.post(
    "/role/{role_name}/secret-id-accessor/lookup",
    summary="A secret id's properties, by its accessor",
    openapi_extra=vault_body(ApproleSecretIdAccessor),
)
async def lookup_secret_id_accessor(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleSecretIdAccessor)
    found = await in_thread(roles.by_accessor, role_name, body.secret_id_accessor)
    return await answer(request, secret_data(found))


@router.post(
    "/role/{role_name}/secret-id-accessor/destroy",
    summary="Destroy a secret id, by its accessor",
    status_code=204,
    openapi_extra=vault_body(ApproleSecretIdAccessor),
)
async def destroy_secret_id_accessor(request: Request, role_name: RoleName) -> Response:
    roles, body = await _roles_and_body(request, ApproleSecretIdAccessor, change=True)
    accessor = body.secret_id_accessor
    return await _changed(
        request, role_name, roles.destroy_accessor, accessor, secret_id_accessor=accessor
    )


@router.post(
    "/tidy/secret-id",
    summary="Remove expired secret ids now (they are refused already)",
    status_code=202,
)
async def tidy_secret_ids(request: Request) -> Response:
    roles = await _roles(request, change=True)
    return tidied(request, await in_thread(roles.tidy), "secret ids")


class ApproleLogin(VaultBody):
    role_id: str = ""
    secret_id: str = Field("", json_schema_extra={"writeOnly": True})


@router.post(
    "/login",
    summary="Log in with a role id and a secret id: a token with the role's policies",
    openapi_extra=vault_body(ApproleLogin),
)
async def login(request: Request) -> Response:
    mount = auth_mount_of(request)
    service = services(request)
    note = audit_note(request.scope)
    note.details.update(method="approle", auth_mount=mount.path)
    body = await read_login(request, ApproleLogin)
    await service.audit.admit_change(note)
    roles = AppRoles(service.store, mount.accessor)
    try:
        role = await in_thread(roles.login_role, body.role_id)
        note.details["role"] = role.name
        spent = await in_thread(
            roles.login_secret, role, body.secret_id, client_address(request.scope)
        )
    except Problem as problem:
        raise auth_refused(request, problem) from None
    issued = await in_thread(
        role_token,
        service.store,
        service.token_limits,
        Identity("approle", mount.path, role.name, f"approle:{role.name}"),
        login_settings(role, spent),
        {**(spent.metadata if spent else {}), "role_name": role.name},
    )
    return await login_answer(request, issued)


# Declared last: a role's other paths (`role-id`, `secret-id`, ...) are matched before.
FieldPath = Annotated[str, Path(description=f"the field's path: {', '.join(sorted(FIELD_PATHS))}")]


@router.get("/role/{role_name}/{field_path}", summary="One field of a role")
async def read_role_field(request: Request, role_name: RoleName, field_path: FieldPath) -> Response:
    roles = await _roles(request)
    return await answer(request, await in_thread(roles.field, role_name, field_path))


@router.post(
    "/role/{role_name}/{field_path}",
    summary="Set one field of a role",
    status_code=204,
    openapi_extra=vault_body(ApproleRole),
)
async def write_role_field(
    request: Request, role_name: RoleName, field_path: FieldPath
) -> Response:
    roles, body = await _roles_and_body(request, ApproleRole, change=True)
    changes = body.model_dump(exclude_none=True)
    return await _changed(
        request, role_name, roles.set_field, field_path, changes, field=field_path
    )


@router.delete(
    "/role/{role_name}/{field_path}",
    summary="Give one field of a role Vault's default",
    status_code=204,
)
async def reset_role_field(
    request: Request, role_name: RoleName, field_path: FieldPath
) -> Response:
    roles = await _roles(request, change=True)
    return await _changed(request, role_name, roles.reset_field, field_path, field=field_path)
