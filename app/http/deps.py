"""Request dependencies: who is calling, and the services of this process.

The key operations (`app.http.operation`) make the same checks without FastAPI's dependency
solver; the other routes declare these.
"""

import time
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Security
from fastapi.security import HTTPBearer
from starlette.types import Scope

from app.http.body import header
from app.ops import Services
from app.ops.audit import AuditNote
from app.ops.auth import Authenticator
from app.ops.errors import Problem, forbidden
from app.ops.grants import AdminOperation, Operation, Principal
from app.ops.keys import KEY_NAME_PATTERN
from app.ops.work import in_thread
from app.server.uvicorn_internals import ARRIVED


def bearer_token(scope: Scope) -> str | None:
    """The token of an `Authorization: Bearer` header, or None: FastAPI's HTTPBearer reading,
    from the raw headers."""
    value = header(scope, b"authorization")
    if not value:
        return None
    scheme, _, token = value.decode("latin-1").partition(" ")
    token = token.strip()
    return token if token and scheme.lower() == "bearer" else None


class _Bearer(HTTPBearer):
    """The bearer scheme of the OpenAPI document, giving the dependencies `bearer_token`."""

    async def __call__(self, request: Request) -> str | None:  # type: ignore[override]  # the raw token, not HTTPAuthorizationCredentials
        return bearer_token(request.scope)


bearer = _Bearer(
    scheme_name="HTTPBearer",
    auto_error=False,
    description="the admin token, or a scoped token from POST /v1/tokens",
)
Token = Annotated[str | None, Security(bearer)]
KeyName = Annotated[str, Path(pattern=KEY_NAME_PATTERN, description="the key's name")]


def audit_note(scope: Scope) -> AuditNote:
    """What this request's audit record will say, as learned so far (`app.http.middleware`
    puts it in the request's state)."""
    note: AuditNote = scope["state"]["audit"]
    return note


def arrival(scope: Scope) -> float:
    """When the request's head began to arrive, as the server noted it; now for a request that
    came another way (an in-process transport's)."""
    arrived: float | None = scope.get(ARRIVED)
    return time.monotonic() if arrived is None else arrived


async def principal_of(scope: Scope, auth: Authenticator, token: str | None) -> Principal:
    """The caller, noted for the audit record (its token's id and the identity behind it). The
    check reads the store's auth generation (`app.ops.auth`) as of the request's arrival, one
    read for the requests that arrive together, and the token off the event loop unless this
    process has it cached. A token that fails counts against the client's address (429 past
    its failures); a token bound to address blocks acts only from them (403); and a token with
    a rate is charged one request (429 past it)."""
    address = client_address(scope)
    try:
        state = await auth.current_state(arrival(scope))
        principal = auth.cached_principal(token, state)
        if principal is None:
            principal = await in_thread(auth.principal, token, state, address)
    except Problem as problem:
        if problem.status != 401:
            raise
        raise auth.refusal(address, problem) from None
    note = audit_note(scope)
    note.principal = principal.id
    if principal.token_id is not None:
        note.details["identity"] = principal.identity
    if not principal.reachable_from(address):
        raise forbidden("permission denied: the token is bound to other addresses")
    return auth.admit(principal)


def client_address(scope: Scope) -> str | None:
    """The address the request came from, as the server saw it (None: none, or a socket's)."""
    client = scope.get("client")
    return client[0] if client else None


# What a route needs of a token: one operation, or every one of several (a rewrap decrypts
# and encrypts).
Access = Operation | tuple[Operation, ...]


async def check_key_access(
    scope: Scope, auth: Authenticator, access: Access, name: str, token: str | None
) -> Principal:
    """The caller, if allowed to do `access` on key `name` (401, 403)."""
    principal = await principal_of(scope, auth, token)
    for operation in (access,) if isinstance(access, Operation) else access:
        if not principal.allows(operation, name):
            raise forbidden(f"the token's scope has no {operation.value!r} for key {name!r}")
    return principal


async def caller(request: Request, token: Token) -> Principal:
    """Any valid token: for what uses no key and is no one's to refuse (random bytes)."""
    return await principal_of(request.scope, services(request).auth, token)


def services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def admin(request: Request, token: Token) -> Principal:
    principal = await principal_of(request.scope, services(request).auth, token)
    if not principal.admin:
        raise forbidden("this operation needs the admin token")
    return principal


class AdminAccess:
    """Admits a token allowed any of the admin operations `operations` (the admin token, or one
    whose policies grant one); with `change`, as `admin_change` for a change."""

    def __init__(self, operations: tuple[AdminOperation, ...], change: bool = False) -> None:
        self.operations = operations
        self.change = change

    async def __call__(self, request: Request, token: Token) -> Principal:
        return await admin_access(request, self.operations, self.change, token)


async def admin_access(
    request: Request,
    operations: AdminOperation | tuple[AdminOperation, ...],
    change: bool,
    token: str | None,
) -> Principal:
    """The caller, if allowed any of the admin operations `operations` (401, 403); for a
    `change`, only once the audit trail can take its record (503 otherwise)."""
    principal = await principal_of(request.scope, services(request).auth, token)
    require_admin_operation(principal, operations)
    if change:
        await services(request).audit.admit_change(audit_note(request.scope))
    return principal


def require_admin_operation(
    principal: Principal, operations: AdminOperation | tuple[AdminOperation, ...]
) -> None:
    """403 unless `principal` is allowed one of the admin operations `operations`."""
    allowed = (operations,) if isinstance(operations, AdminOperation) else operations
    if not any(principal.may(operation) for operation in allowed):
        names = " or ".join(repr(operation.value) for operation in allowed)
        raise forbidden(f"this operation needs the admin operation {names}")


def admin_of(*operations: AdminOperation, change: bool = False) -> Any:
    """A dependency that admits a token allowed any of the admin operations `operations`."""
    return Depends(AdminAccess(operations, change))


async def admin_change(request: Request, token: Token) -> Principal:
    """The admin, about to change keys or tokens: the change is made only if the audit trail
    is writable right now (503 `audit-unavailable` if not), and its record follows it."""
    principal = await admin(request, token)
    await services(request).audit.admit_change(audit_note(request.scope))
    return principal


async def admit_change(
    request: Request,
    principal: Principal,
    access: Access,
    name: str,
    admin_operation: AdminOperation | None = None,
) -> Principal:
    """The caller, about to change key `name`, if allowed to do `access` on it, or allowed
    `admin_operation` on every key (403): the change is made only if the audit trail is writable
    right now (503 `audit-unavailable` if not), and its record follows it."""
    if admin_operation is None or not principal.may(admin_operation):
        for operation in (access,) if isinstance(access, Operation) else access:
            if not principal.allows(operation, name):
                raise forbidden(f"the token's scope has no {operation.value!r} for key {name!r}")
    await services(request).audit.admit_change(audit_note(request.scope))
    return principal


class KeyChange:
    """Admits a token allowed to do `operation` on the path's key, or `admin_operation` on
    every key, about to change it (`admit_change`)."""

    def __init__(self, operation: Access, admin_operation: AdminOperation | None) -> None:
        self.operation = operation
        self.admin_operation = admin_operation

    async def __call__(self, request: Request, name: KeyName, token: Token) -> Principal:
        principal = await principal_of(request.scope, services(request).auth, token)
        return await admit_change(request, principal, self.operation, name, self.admin_operation)


def key_change(operation: Access, admin_operation: AdminOperation | None = None) -> Any:
    """A dependency that admits a token allowed to do `operation` on the path's key, or
    `admin_operation` on every key, about to change it."""
    return Depends(KeyChange(operation, admin_operation))


# What only a token with every operation may do besides the admin (export and back up a key's
# secret): all the admin may do to keys.
EVERY_OPERATION: tuple[Operation, ...] = tuple(Operation)


class KeyAccess:
    """Admits a token allowed to do `operation` on the path's key."""

    def __init__(self, operation: Access) -> None:
        self.operation = operation

    async def __call__(self, request: Request, name: KeyName, token: Token) -> Principal:
        return await check_key_access(
            request.scope, services(request).auth, self.operation, name, token
        )


class ServiceAccess:
    """Admits a token allowed to do `operation` without a stored key."""

    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    async def __call__(self, request: Request, token: Token) -> Principal:
        principal = await principal_of(request.scope, services(request).auth, token)
        if not principal.allows(self.operation, None):
            raise forbidden(f"the token's scope has no {self.operation.value!r}")
        return principal


def key_access(operation: Access) -> Any:
    """A dependency that admits a token allowed to do `operation` on the path's key."""
    return Depends(KeyAccess(operation))


def service_access(operation: Operation) -> Any:
    """A dependency that admits a token allowed to do `operation` without a stored key."""
    return Depends(ServiceAccess(operation))


# Async, though it does not wait on anything: FastAPI runs a plain `def` dependency in the
# thread pool, a thread hop per request for reading an attribute.
async def _services(request: Request) -> Services:
    return services(request)


Caller = Annotated[Principal, Depends(caller)]
AdminChange = Annotated[Principal, Depends(admin_change)]
ServicesDep = Annotated[Services, Depends(_services)]
