"""The layers a request passes before its route, fewer than FastAPI's.

FastAPI wraps the app's own middleware in five layers of its own: outside it, the server-error,
exception-telemetry and body-limit middleware; inside it, the exception middleware and an exit
stack; then the router tries the routes in turn. Each layer is a coroutine per request, and
those that wrap `send` a further call per message. Here the app's middleware (ObserveMiddleware)
is outermost: it answers an unexpected error itself, with the request id, so the server-error
layer would never act, FastAPI's telemetry is off and the body limit is ObserveMiddleware's.
Inside it, the exception middleware (the problem handlers), then the declared hot key
operations, found by their path's two fixed segments rather than by trying routes one by one,
and AWS KMS's `POST /` (`app.http.kms`); a Vault namespace other than the root is refused
(`app.http.vault_paths.RootNamespaceOnly`), the auth methods' paths are given their mount
(`app.http.auth_mounts.AuthMountRouting`), then the answers of Vault's routes are wrapped when
asked (`app.http.wrapping.ResponseWrapper`) and Vault's Transit paths given their mount
(`app.http.transit.TransitMounts`);
every other request goes on to the exit stack and the router as in FastAPI
(`app.http.framework.LeanApp` builds the layers; this module puts the hot operations among them).
"""

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.auth_mounts import AuthMountRouting
from app.http.framework import PATH_PARAMS, LeanApp, route_path, route_scope
from app.http.kms import KmsRoute
from app.http.operation import KeyOperationRoute
from app.http.transit import TransitMounts
from app.http.vault_paths import RootNamespaceOnly
from app.http.wrapping import ResponseWrapper


class HotOperations:
    """The hot key operations (`POST /v1/<family>/{name}[/<verb>]`) straight to their handlers;
    anything else to `app`."""

    def __init__(
        self, app: ASGIApp, router: Any, routes: list[KeyOperationRoute], root: Any = None
    ) -> None:
        self.app = app
        # `POST /` (AWS KMS's protocol, every action at one path), when the app serves it.
        self._root = None if root is None else route_scope(router, root)
        # The hot routes by their path's family and verb; for each, what the router would put in
        # the request's scope and the app it would call.
        self._routes: dict[tuple[str, str], KeyOperationRoute] = {}
        self._targets: dict[tuple[str, str], tuple[dict[str, Any], ASGIApp]] = {}
        for route in routes:
            parts = route.path.split("/")
            if len(parts) not in (4, 5) or parts[:2] != ["", "v1"] or parts[3] != "{name}":
                raise ValueError(f"not /v1/<family>/{{name}}[/<verb>]: {route.path}")
            key = parts[2], parts[4] if len(parts) == 5 else ""
            self._routes[key] = route
            self._targets[key] = route_scope(router, route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path = route_path(scope)
            if path == "/" and self._root is not None:
                entries, app = self._root
                scope.update(entries)
                scope[PATH_PARAMS] = {}
                await app(scope, receive, send)
                return
            parts = path.split("/")
            if 4 <= len(parts) <= 5 and parts[1] == "v1" and parts[3] and parts[-1]:
                target = self._targets.get((parts[2], parts[4] if len(parts) == 5 else ""))
                if target is not None:
                    entries, app = target
                    scope.update(entries)
                    scope[PATH_PARAMS] = {"name": parts[3]}
                    await app(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class ServiceApp(LeanApp):
    """FastAPI with the stack described above."""

    def around_router(self, router: ASGIApp) -> ASGIApp:
        hot = [route for route in self.routes if isinstance(route, KeyOperationRoute) and route.hot]
        root = next((r for r in self.routes if isinstance(r, KmsRoute)), None)
        operations = HotOperations(router, self.router, hot, root)
        transit = TransitMounts(
            operations, self.router, self.routes, lambda: self.state.services.mounts
        )
        wrapper = ResponseWrapper(transit, lambda: self.state.services)
        mounts = AuthMountRouting(wrapper, lambda: self.state.services.auth_mounts)
        return RootNamespaceOnly(mounts)
