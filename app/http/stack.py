"""The layers a request passes before its route, fewer than FastAPI's.

FastAPI wraps the app's own middleware in five layers of its own: outside it, the server-error,
exception-telemetry and body-limit middleware; inside it, the exception middleware and an exit
stack; then the router tries the routes in turn. Each layer is a coroutine per request, and
those that wrap `send` a further call per message. Here the app's middleware (ObserveMiddleware)
is outermost: it answers an unexpected error itself, with the request id, so the server-error
layer would never act, FastAPI's telemetry is off and the body limit is ObserveMiddleware's.
Inside it, the exception middleware (the problem handlers), then the declared hot key
operations, found by their path's two fixed segments rather than by trying routes one by one;
every other request goes on to the exit stack and the router as in FastAPI.
"""

from typing import Any

from fastapi import FastAPI
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from starlette._utils import get_route_path
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.operation import KeyOperationRoute


class HotOperations:
    """The hot key operations (`POST /v1/<family>/{name}[/<verb>]`) straight to their handlers;
    anything else to `app`."""

    def __init__(self, app: ASGIApp, router: Any, routes: list[KeyOperationRoute]) -> None:
        self.app = app
        self._router = router
        self._routes: dict[tuple[str, str], KeyOperationRoute] = {}
        for route in routes:
            parts = route.path.split("/")
            if len(parts) not in (4, 5) or parts[:2] != ["", "v1"] or parts[3] != "{name}":
                raise ValueError(f"not /v1/<family>/{{name}}[/<verb>]: {route.path}")
            self._routes[parts[2], parts[4] if len(parts) == 5 else ""] = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            parts = get_route_path(scope).split("/")
            if 4 <= len(parts) <= 5 and parts[1] == "v1" and parts[3] and parts[-1]:
                route = self._routes.get((parts[2], parts[4] if len(parts) == 5 else ""))
                if route is not None:
                    # What the router would have put in the scope for this route.
                    scope["router"] = self._router
                    scope["endpoint"] = route.endpoint
                    scope["path_params"] = {"name": parts[3]}
                    scope["route"] = route
                    await route.app(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class ServiceApp(FastAPI):
    """FastAPI with the stack described above."""

    def build_middleware_stack(self) -> ASGIApp:
        handlers = {
            key: handler
            for key, handler in self.exception_handlers.items()
            if key not in (500, Exception)
        }
        hot = [
            route
            for route in self.router.routes
            if isinstance(route, KeyOperationRoute) and route.hot
        ]
        app: ASGIApp = HotOperations(AsyncExitStackMiddleware(self.router), self.router, hot)
        app = ExceptionMiddleware(app, handlers=handlers, debug=self.debug)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
