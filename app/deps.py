"""Request dependencies: who is calling, and what the store and caches of this process are."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPBearer
from starlette.types import Scope

from app.auth import Operation, Principal
from app.body import header
from app.errors import forbidden
from app.keyring import Keyring
from app.settings import Settings

KEY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def bearer_token(scope: Scope) -> str | None:
    """The token of an `Authorization: Bearer` header, or None: FastAPI's HTTPBearer reading,
    from the raw headers (`app.routing.KeyOperationRoute` calls it without FastAPI's solver)."""
    value = header(scope, b"authorization")
    if not value:
        return None
    scheme, _, token = value.decode("latin-1").partition(" ")
    token = token.strip()
    return token if token and scheme.lower() == "bearer" else None


class _Bearer(HTTPBearer):
    """The bearer scheme of the OpenAPI document, giving the dependencies `bearer_token`."""

    async def __call__(self, request: Request) -> str | None:  # type: ignore[override]
        return bearer_token(request.scope)


bearer = _Bearer(
    scheme_name="HTTPBearer",
    auto_error=False,
    description="the admin token, or a scoped token from POST /v1/tokens",
)
Token = Annotated[str | None, Security(bearer)]
KeyName = Annotated[str, Path(pattern=KEY_NAME_PATTERN, description="the key's name")]


async def _principal(request: Request, token: str | None) -> Principal:
    auth = request.app.state.auth
    principal = auth.cached_principal(token)
    if principal is None:  # a store query: off the event loop
        principal = await run_in_threadpool(auth.principal, token)
    return principal


async def admin(request: Request, token: Token) -> Principal:
    principal = await _principal(request, token)
    if not principal.admin:
        raise forbidden("this operation needs the admin token")
    return principal


class KeyAccess:
    """Admits a token allowed to do `operation` on the path's key (a FastAPI dependency, and
    the check `app.routing.KeyOperationRoute` makes without FastAPI's dependency solver)."""

    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    async def __call__(self, request: Request, name: KeyName, token: Token) -> Principal:
        return await self.check(request, name, token)

    async def check(self, request: Request, name: str, token: str | None) -> Principal:
        principal = await _principal(request, token)
        if not principal.allows(self.operation, name):
            raise forbidden(f"the token's scope has no {self.operation.value!r} for key {name!r}")
        return principal


def _service_access(operation: Operation) -> Callable[..., Principal]:
    async def dependency(request: Request, token: Token) -> Principal:
        principal = await _principal(request, token)
        if not principal.allows(operation, None):
            raise forbidden(f"the token's scope has no {operation.value!r}")
        return principal

    return dependency


def key_access(operation: Operation) -> Any:
    """A dependency that admits a token allowed to do `operation` on the path's key."""
    return Depends(KeyAccess(operation))


def service_access(operation: Operation) -> Any:
    """A dependency that admits a token allowed to do `operation` without a stored key."""
    return Depends(_service_access(operation))


# Async, though they do not wait on anything: FastAPI runs a plain `def` dependency in the
# thread pool, a thread hop per dependency per request for reading an attribute.
async def _keyring(request: Request) -> Keyring:
    return request.app.state.keyring


async def _settings(request: Request) -> Settings:
    return request.app.state.settings


Admin = Annotated[Principal, Depends(admin)]
KeyringDep = Annotated[Keyring, Depends(_keyring)]
SettingsDep = Annotated[Settings, Depends(_settings)]
