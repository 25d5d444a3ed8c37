"""The route class of the key operations: one check per request, not a solver.

`POST /v1/ecies/{name}/encrypt`, `/v1/aez/{name}/decrypt/batch` and the like all take the same
two things from FastAPI: the key name in the path and the token check `KeyAccess` declares, and
read their body themselves (JSON or raw), after that check: a caller without a valid token cannot
make the service read or parse a body. FastAPI's generic handler solves that dependency graph
afresh for every request, which measured about 40 µs per request here: more than the AEZ or
AES-GCM work of a small message and most of an ECIES one. For routes of exactly that shape this
class makes the same checks, in the same order and with the same errors, directly: the name
against its pattern (422), then the bearer token and its scope (401/403), and runs as an ASGI
app of its own rather than inside FastAPI's per-route wrapping. The route is declared as any
other, so the OpenAPI document does not change; any other shape (a body parameter, further
dependencies) is served by FastAPI's own handler.
"""

import inspect
import re
from collections.abc import Callable, Coroutine
from typing import Any, cast

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from app.deps import KEY_NAME_PATTERN, KeyAccess, KeyName, bearer_token
from app.errors import ERROR_RESPONSES

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
KeyEndpoint = Callable[[Request, str], Coroutine[Any, Any, Response]]

_KEY_NAME = re.compile(KEY_NAME_PATTERN)
_KEY_NAME_ADAPTER: TypeAdapter[str] = TypeAdapter(KeyName)


def _check_key_name(name: str) -> None:
    """FastAPI's 422 for a path name outside the pattern, from the same pydantic validator."""
    if _KEY_NAME.fullmatch(name):  # not `match`: its `$` would admit a trailing newline
        return
    try:
        _KEY_NAME_ADAPTER.validate_python(name)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("path", "name")} for error in exc.errors()]
        ) from None


def operation_id(route: APIRoute) -> str:
    """Stable, readable names for generated clients: `ecies_encrypt`, `keys_create_key`."""
    return f"{route.tags[0]}_{route.name}" if route.tags else route.name


def _without_exit_stacks(handler: Handler) -> ASGIApp:
    """The ASGI app of a route that checks its own guard.

    FastAPI's (`fastapi.routing.request_response`) runs the handler inside two exit stacks, for
    dependencies with `yield`, which these routes do not have, and inside a second layer of
    exception handling: together about 6 % of a worker's time under a load of small AEZ
    encryptions. An exception raised here is answered one layer out, by the app's
    ExceptionMiddleware, with the same handlers.
    """

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await handler(Request(scope, receive, send))
        await response(scope, receive, send)

    return app


class KeyOperationRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        # A route given its own body limit keeps FastAPI's app, which enforces that limit.
        if self.guard is not None and self.max_body_size is None:
            self.app = _without_exit_stacks(self.get_route_handler())

    def get_route_handler(self) -> Handler:
        access = self.guard
        if access is None:
            return super().get_route_handler()
        endpoint = cast(KeyEndpoint, self.endpoint)

        async def handle(request: Request) -> Response:
            name = request.path_params["name"]
            _check_key_name(name)
            await access.check(request, name, bearer_token(request.scope))
            return await endpoint(request, name)

        return handle

    @property
    def guard(self) -> KeyAccess | None:
        """The KeyAccess this route checks itself: set when the endpoint is
        `async def f(request, name)` guarded by that alone, else None (FastAPI's handler)."""
        calls = [dependency.call for dependency in self.dependant.dependencies]
        parameters = list(inspect.signature(self.endpoint).parameters)
        if (
            len(calls) == 1
            and isinstance(calls[0], KeyAccess)
            and parameters == ["request", "name"]
            and inspect.iscoroutinefunction(self.endpoint)
        ):
            return calls[0]
        return None


def family_router(family: str) -> APIRouter:
    """The router of one crypto family's routes (`/v1/ecies`, `/v1/aez`, `/v1/fe`)."""
    return APIRouter(
        prefix=f"/v1/{family}",
        tags=[family],
        responses=ERROR_RESPONSES,
        route_class=KeyOperationRoute,
        generate_unique_id_function=operation_id,
    )
