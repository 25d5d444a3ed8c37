"""Transit's paths over HTTP: which mount a request is for, and what its route checks first.

Transit's routes are declared once, at `/v1/transit/...` (the default mount). `TransitMounts`,
before the router, reads a PUT as the POST Vault takes it for, finds the mount a request's path
is under (`/v1/payments/encrypt/orders` is
the mount `payments`), notes it in the request's scope and gives the router the path as the
default mount's; its encrypt and decrypt go straight to their routes, as the native API's hot
operations do (`app.http.stack`). A route then calls `transit_call`: the key's native name in
its mount, the token (Vault's header or the bearer one) and the native operation's scope on
that name, and the audit record's native operation and the path the request came by.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.deps import Access, audit_note, principal_of, require_admin_operation, services
from app.http.framework import PATH_PARAMS, route_path, route_scope
from app.http.vault import at_vault_path, vault_error, vault_token
from app.http.vault_paths import slash_refusal
from app.ops import Services
from app.ops.errors import forbidden, invalid_input
from app.ops.grants import AdminOperation, Operation, Principal
from app.ops.transit.keys import checked_name
from app.ops.transit.mounts import (
    DEFAULT,
    ENGINE,
    Mounts,
    native_name,
    nested_prefixes,
    resolve,
)
from app.store import SecretMount

MOUNT = "transit_mount"
CAME_BY = "transit_path"
# The verbs whose single calls skip the router (POST <mount>/<verb>/<name>).
HOT_VERBS = ("encrypt", "decrypt")


class TransitMounts:
    """Requests under a Transit mount, before the router: noted with their mount, their path
    given as the default mount's, and the hot verbs sent straight to their routes."""

    def __init__(self, app: ASGIApp, router: Any, routes: list[Any], mounts: Callable[[], Mounts]):
        self.app = app
        self._mounts = mounts
        self._hot = {
            route.path.split("/")[3]: route_scope(router, route)
            for route in routes
            if getattr(route, "path", "").startswith("/v1/transit/")
            and route.path.split("/")[3:] in ([verb, "{name}"] for verb in HOT_VERBS)
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = route_path(scope)
            if scope["method"] == "PUT" and at_vault_path(path):
                scope["method"] = "POST"  # Vault takes PUT as POST (`bao write` sends PUT)
            mounts = self._mounts()
            own = path.startswith("/v1/") and path.split("/", 3)[2] not in mounts.reserved
            table = await mounts.current_table() if own else {}
            if path.endswith("/") and (at_vault_path(path) or resolve(table, path[4:])):
                refused = slash_refusal(scope)
                if refused is not None:
                    await vault_error(refused)(scope, receive, send)
                    return
                path = route_path(scope)
            if own:
                found = resolve(table, path[4:])
                if found is not None:
                    if scope["method"] == "PUT":
                        scope["method"] = "POST"
                    state = scope.setdefault("state", {})
                    state[MOUNT], state[CAME_BY] = found.mount, path[4:]
                    parts = found.rest.split("/")
                    target = self._hot.get(parts[0]) if len(parts) == 2 else None
                    if target is not None and parts[1] and scope["method"] == "POST":
                        entries, app = target
                        scope.update(entries)
                        scope[PATH_PARAMS] = {"name": parts[1]}
                        await app(scope, receive, send)
                        return
                    if found.mount.path != ENGINE:
                        scope["path"] = f"/v1/{ENGINE}/{found.rest}".rstrip("/")
        await self.app(scope, receive, send)


@dataclass(slots=True)
class TransitCall:
    """What a Transit route knows once its checks passed."""

    services: Services
    principal: Principal
    mount: SecretMount
    name: str  # the key's native name, or "" for a route that names none

    def allow(self, access: Access) -> None:
        """403 unless the token may do `access` (one operation, or each of several) on the
        key (on any key for a route that names none)."""
        for each in (access,) if isinstance(access, Operation) else access:
            if not self.principal.allows(each, self.name or None):
                target = f" for key {self.name!r}" if self.name else ""
                raise forbidden(f"the token's scope has no {each.value!r}{target}")


def mount_of(request: Request) -> SecretMount:
    mount: SecretMount = request.scope.get("state", {}).get(MOUNT, DEFAULT)
    return mount


async def transit_call(
    request: Request,
    operation: str,
    access: Access | AdminOperation | None = None,
    name: str | None = None,
    change: bool = False,
) -> TransitCall:
    """The checks of a Transit route: the key's native name (400 if the service cannot name a
    key so), a valid token allowed `access` on it (an admin operation: that operation; None: the
    admin token; an empty tuple: any valid token), and, for a `change`, an audit trail that can
    take its record first (503 otherwise). Its record will say the native `operation`, the key
    and the path the request came by."""
    mount = mount_of(request)
    native = checked_name(native_name(mount, name)) if name is not None else ""
    note = audit_note(request.scope)
    note.operation = operation
    note.details["path"] = request.scope.get("state", {}).get(
        CAME_BY, str(request.scope["path"]).removeprefix("/v1/")
    )[:256]
    if native:
        note.key = native
    service = services(request)
    principal = await principal_of(request.scope, service.auth, vault_token(request.scope))
    call = TransitCall(service, principal, mount, native)
    if access is None:
        if not principal.admin:
            raise forbidden("this operation needs the admin token")
    elif isinstance(access, AdminOperation):
        require_admin_operation(principal, access)
    else:
        call.allow(access)
    await refuse_nested(service.mounts, mount, native)  # allowed only: it names a mount
    if change:
        await service.audit.admit_change(note)
    return call


async def refuse_nested(mounts: Mounts, mount: SecretMount, native: str) -> None:
    """400 for a name under another mount's prefix (`transit/keys/payments.orders` is the key
    `orders` of the mount `payments`): a mount reaches its own keys only."""
    if "." not in native.removeprefix(mount.key_prefix):  # every prefix ends in "."
        return
    by_prefix = {m.key_prefix: m for m in (await mounts.current_table()).values()}
    for prefix in nested_prefixes(mount.key_prefix, by_prefix):
        if native.startswith(prefix):
            raise invalid_input(
                f"key name {native.removeprefix(mount.key_prefix)!r} is the mount "
                f"{by_prefix[prefix].path!r}'s key {native.removeprefix(prefix)!r}: each mount "
                "reaches its own keys only"
            )


def native_segments(routes: Sequence[Any]) -> frozenset[str]:
    """The first segments of the native API's paths under /v1/ (no Transit mount may take
    one)."""
    segments = {
        str(getattr(r, "path", "")).split("/")[2:3][0]
        for r in routes
        if str(getattr(r, "path", "")).startswith("/v1/")
    }
    return frozenset(segments - {ENGINE})
