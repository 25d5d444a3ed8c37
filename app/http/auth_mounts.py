"""Auth methods' paths over HTTP: which auth mount a request under /v1/auth/ is for.

A login method declares its routes once, on `login_router(family)`, at
`/v1/auth/<family>/...` (`app.ops.auth_mounts.FAMILIES`: `approle`, `jwt`, `cert`, `token`), and
is added to the app's routers (`app.main`). `AuthMountRouting`, before the router, finds the
mount a request's path is under (`/v1/auth/ci/login` is the mount `ci`), notes it in the
request's scope and gives the router the path as its family's (`/v1/auth/approle/login` for an
AppRole mount); a route reads its mount with `auth_mount_of`.
"""

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.deps import audit_note, services
from app.http.framework import route_path
from app.http.vault import (
    answer,
    keys_of,
    listing,
    no_content,
    read_body,
    vault_admin,
    vault_body,
    vault_router,
)
from app.ops.auth_mounts import FAMILIES, AuthMounts
from app.ops.errors import Problem, invalid_input
from app.ops.grants import AdminOperation
from app.ops.identity import checked_policy_name
from app.ops.vault_fields import Duration, Strings, VaultBody, VaultBool, vault_integer
from app.ops.work import in_thread
from app.store import AuthMount

AUTH_MOUNT = "auth_mount"
PREFIX = "/v1/auth/"


def login_router(family: str) -> APIRouter:
    """The router of a login method's routes, at `/v1/auth/<family>`: each serves every mount
    of the family's types (`auth_mount_of` tells which)."""
    if family not in FAMILIES.values():
        raise ValueError(f"unknown auth method family {family!r}")
    return vault_router(f"{PREFIX}{family}", f"auth-{family}")


class AuthMountRouting:
    """Requests under /v1/auth/, before the router: noted with their mount and their path
    given as their mount family's."""

    def __init__(self, app: ASGIApp, mounts: Callable[[], AuthMounts]) -> None:
        self.app = app
        self._mounts = mounts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = route_path(scope)
            if path.startswith(PREFIX):
                table = await in_thread(self._mounts().table)
                parts = path[len(PREFIX) :].split("/")
                for depth in range(min(len(parts) - 1, 4), 0, -1):
                    mount = table.get("/".join(parts[:depth]))
                    if mount is not None:
                        scope.setdefault("state", {})[AUTH_MOUNT] = mount
                        rest = "/".join(parts[depth:])
                        scope["path"] = f"{PREFIX}{FAMILIES[mount.type]}/{rest}"
                        break
        await self.app(scope, receive, send)


def auth_mount_of(request: Request) -> AuthMount:
    """The auth mount a request came by (400 as Vault when its path is under none)."""
    mount: AuthMount | None = request.scope.get("state", {}).get(AUTH_MOUNT)
    if mount is None:
        path = str(request.scope["path"]).removeprefix("/v1/")
        raise invalid_input(f'no handler for route "{path[:128]}". route entry not found.')
    return mount


async def administered_mount(request: Request, change: bool = False) -> AuthMount:
    """The auth mount a request came by (`auth_mount_of`), once the caller may administer auth
    methods (`vault_admin`, the admin operation `auth`; for a `change`, with the audit trail
    writable)."""
    await vault_admin(request, AdminOperation.AUTH, change=change)
    return auth_mount_of(request)


def _given(value: Any) -> bool:
    """Whether a field's value says something (`bao` sends "false" or "0s" for nothing)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "0s", "false", "f")
    return value not in (None, False, 0, [], {})


class RoleTokenFields(VaultBody):
    """The fields of a login method's role that say what token a login gets, as Vault names
    them; a role's body adds its own. `unenforced` are Vault's fields that narrow a role which
    this service does not enforce: a role that gives one is refused (400) rather than kept
    wider than its author wrote."""

    unenforced: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _nothing_unenforced(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [name for name in cls.unenforced if _given(data.get(name))]
            if given:
                raise ValueError(
                    f"{', '.join(given)}: not enforced by this service, so refused rather than "
                    "ignored; leave empty"
                )
        return data

    token_policies: Strings | None = Field(None, max_length=64)
    token_bound_cidrs: Strings | None = None  # bounded by `check_token_fields`
    policies: Strings | None = Field(None, max_length=64)
    token_ttl: Duration | None = None
    token_max_ttl: Duration | None = None
    token_explicit_max_ttl: Duration | None = None
    token_period: Duration | None = None
    # VaultInt's validator after the bounds: before them, the schema would not state them.
    token_num_uses: (
        Annotated[int, Field(ge=0, le=1_000_000_000), BeforeValidator(vault_integer)] | None
    ) = None
    token_no_default_policy: VaultBool | None = None
    token_type: str | None = Field(None, max_length=16)

    @field_validator("token_policies", "policies")
    @classmethod
    def _policy_names(cls, names: list[str] | None) -> list[str] | None:
        """Checked when the role is written, not at its first login (which spends a use); a bad
        name is `checked_policy_name`'s 400."""
        for name in names or ():
            if name.strip():
                checked_policy_name(name.strip())
        return names


def login_role_routes(
    router: APIRouter,
    path: str,
    *,
    noun: str,
    what: str,
    write_summary: str,
    body: type[BaseModel],
    pattern: re.Pattern[str],
    merged: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
    most: int,
    shown: Mapping[str, Any],
) -> None:
    """Declare the routes of a login method's roles (a JWT role, a certificate rule: the `noun`,
    a `what` in the summaries) at `path/{name}` on the request's mount, all the admin operation
    `auth`: write (`write_<noun>`: the fields given in `body` change, `merged(current, given)`,
    the others stay; at most `most` a mount; the audit record names it and its policies), read
    (`shown` under the stored fields), list and delete."""

    @router.post(
        f"{path}/{{name}}",
        name=f"write_{noun}",
        summary=write_summary,
        status_code=204,
        openapi_extra=vault_body(body),
    )
    async def write(request: Request, name: str) -> Response:
        mount = await administered_mount(request, change=True)
        if not pattern.fullmatch(name):
            raise invalid_input(f"a {noun} name is 1 to 128 letters, digits, '.', '_' or '-'")
        given = await read_body(request, body)
        fields = given.model_dump(exclude_none=True)
        role = await in_thread(
            services(request).store.auth_roles.write,
            mount.accessor,
            name,
            lambda current: merged(current or {}, fields),  # on the role as stored
            most,
        )
        if role is None:
            raise invalid_input(f"a mount holds at most {most} {noun}s")
        audit_note(request.scope).details.update(
            auth_mount=mount.path, role=name, policies=role["token_policies"]
        )
        return no_content()

    @router.get(f"{path}/{{name}}", name=f"read_{noun}", summary=f"A {what}")
    async def read(request: Request, name: str) -> Response:
        mount = await administered_mount(request)
        role = await in_thread(services(request).store.auth_roles.get, mount.accessor, name)
        if role is None:
            raise Problem(404, "not-found", "Not found", "")
        return await answer(request, {**shown, **role})

    @listing(router, path, f"The {what}s of a mount", name=f"list_{noun}s")
    async def names(request: Request) -> Response:
        mount = await administered_mount(request)
        found = await in_thread(services(request).store.auth_roles.names, mount.accessor)
        return await answer(request, keys_of(found))

    @router.delete(
        f"{path}/{{name}}", name=f"delete_{noun}", summary=f"Delete a {what}", status_code=204
    )
    async def delete(request: Request, name: str) -> Response:
        mount = await administered_mount(request, change=True)
        await in_thread(services(request).store.auth_roles.delete, mount.accessor, name)
        audit_note(request.scope).details.update(auth_mount=mount.path, role=name[:128])
        return no_content()
