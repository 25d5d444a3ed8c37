"""Every use of FastAPI's and Starlette's internals, in one place.

The rest of `app/http` uses what the two frameworks document for applications. What they do
not document, and cipherd needs for the speed or the strictness of its hot path, is here:
the layers between the app's middleware and its router (`LeanApp`), what the router puts in
a request's scope (`route_path`, `ROUTE`, `PATH_PARAMS`, `route_scope`, `route_template`), routes
served by a handler of their own (`HandlerRoute`), the route table and its query parameters
(`install_routes`), the OpenAPI parameters of a query model (`query_parameters`) and the
methods a path takes (`methods_at`). A new FastAPI or Starlette release may change any of
them without notice, so the service starts only with the releases this module was tested
against (`check_releases`); `tests/app/test_layers.py` keeps those internals out of every
other module.
"""

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette._utils import get_route_path
from starlette.datastructures import QueryParams
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.server.releases import require


def check_releases() -> None:
    """Refuse (UnsupportedRelease) a FastAPI or Starlette other than the releases this module
    was tested against (`app.server.releases.TESTED`)."""
    require(__name__)


class LeanApp(FastAPI):
    """FastAPI with fewer layers around its router (`app.http.stack` says which and why): the
    app's middleware outermost, then the exception handlers but for the 500 one, then
    `around_router` of FastAPI's exit stack and router."""

    def around_router(self, router: ASGIApp) -> ASGIApp:
        """What requests pass between the exception handlers and `router`."""
        return router

    def build_middleware_stack(self) -> ASGIApp:
        handlers = {
            key: handler
            for key, handler in self.exception_handlers.items()
            if key not in (500, Exception)
        }
        app = self.around_router(AsyncExitStackMiddleware(self.router))
        app = ExceptionMiddleware(app, handlers=handlers, debug=self.debug)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app


# The request's path as the router matches it (below the app's root path): `route_path(scope)`.
route_path = get_route_path

# Where, in a request's scope, the router notes the route that took it and its path parameters.
ROUTE = "route"
PATH_PARAMS = "path_params"


def route_scope(router: Any, route: Any) -> tuple[dict[str, Any], ASGIApp]:
    """What `router` puts in a request's scope when `route` takes it, but for the path
    parameters (PATH_PARAMS), and the app it then hands the request to."""
    return {"router": router, "endpoint": route.endpoint, ROUTE: route}, route.app


def route_template(scope: Scope) -> str:
    """The matched route's template (`/v1/keys/{name}`): the route FastAPI noted; for a mounted
    app (the documentation's assets), the mount's path and `{path}`, since what follows it is the
    client's to choose; the path of a route it did not note (Starlette's own, such as
    /openapi.json) when that route has no parameters and so one fixed path; else "unmatched"."""
    route = scope.get(ROUTE)
    if route is not None:
        return str(route.path)
    if "endpoint" in scope and not scope.get(PATH_PARAMS):
        app_root = scope.get("app_root_path")  # set by a Mount, beside its own root path
        if app_root is not None:
            return f"{scope['root_path'][len(app_root) :]}/{{path}}"
        return str(scope["path"])
    return "unmatched"


def methods_at(routes: Sequence[BaseRoute], path: str) -> set[str]:
    """Every method some route of `routes` takes at `path`."""
    methods: set[str] = set()
    for route in routes:
        regex, route_methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and route_methods and regex.match(path):
            methods |= route_methods
    return methods


class HandlerRoute(APIRoute):
    """A route whose requests go to `handler` rather than FastAPI's generic handler, which
    solves the dependency graph afresh for every request and wraps it in exit stacks and a
    second exception layer; FastAPI still documents it from its endpoint and dependencies.
    `query_names` are the query parameters `handler` reads: a request that names any other is
    refused before it (as `install_routes` makes every other route refuse it), unless its
    endpoint `takes_any_query`."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Any],
        handler: Callable[[Request], Awaitable[Response]],
        **kwargs: Any,
    ) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.query_names: frozenset[str] = frozenset()
        any_query = getattr(endpoint, _ANY_QUERY, False)
        ignores = ignores_unknown_query(self)

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["query_string"] and not any_query:
                _check_query(scope, self.query_names, ignores)
            response = await handler(Request(scope, receive, send))
            await response(scope, receive, send)

        self.app = app


_ANY_QUERY = "takes_any_query"
EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


def takes_any_query(endpoint: EndpointT) -> EndpointT:
    """Mark a route's endpoint as ignoring query parameters it does not declare, where the
    protocol it speaks does (Vault's health probe, sent with load balancers' own parameters),
    rather than refusing them as every other route does (`_KnownQueryOnly`)."""
    setattr(endpoint, _ANY_QUERY, True)
    return endpoint


def install_routes(app: FastAPI, routers: Sequence[APIRouter]) -> list[BaseRoute]:
    """The app's route table: every route in the order of `routers`, then those already in it
    (/openapi.json, the documentation's, the console's); returned in that order.

    Routes join the app's own table: `include_router` would keep each router as a node that
    FastAPI searches on every request.
    """
    documentation: list[BaseRoute] = list(app.router.routes)
    routes: list[BaseRoute] = [route for router in routers for route in router.routes]
    for route in routes + documentation:
        if (
            isinstance(route, Route)
            and not isinstance(route, HandlerRoute)
            and not getattr(route.endpoint, _ANY_QUERY, False)
        ):
            route.app = _KnownQueryOnly(
                route.app, _query_names(route), ignores_unknown_query(route)
            )
    app.router.routes[:] = routes + documentation
    return routes + documentation


def _query_names(route: Route) -> frozenset[str]:
    """The query parameters `route` declares: its dependencies' (a model's fields for a query
    model)."""
    if not isinstance(route, APIRoute):
        return frozenset()
    names: set[str] = set()
    dependants = [route.dependant]
    while dependants:
        dependant = dependants.pop()
        dependants.extend(dependant.dependencies)
        for param in dependant.query_params:
            annotation = param.field_info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                names.update(f.alias or n for n, f in annotation.model_fields.items())
            else:
                names.add(param.alias)
    return frozenset(names)


class _KnownQueryOnly:
    """A route's app, refusing first a request whose query names a parameter not in `known`.

    Routers declared at module level are installed into every app a process makes (the tests
    make hundreds): installing one again wraps its original app, never the previous wrapper,
    which would nest a call deeper each time."""

    app: ASGIApp

    def __init__(self, app: ASGIApp, known: frozenset[str], ignores: bool) -> None:
        self.app = app.app if isinstance(app, _KnownQueryOnly) else app
        self.known = known
        self.ignores = ignores

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["query_string"]:
            _check_query(scope, self.known, self.ignores)
        await self.app(scope, receive, send)


def ignores_unknown_query(route: object) -> bool:
    """Whether a route speaks a protocol that goes on past query parameters it does not take
    and names them in its answer (Vault's: `state["ignored_query"]`), rather than refusing
    them as the native API does."""
    return bool(getattr(route, "ignores_unknown_query", False))


def _check_query(scope: Scope, known: frozenset[str], ignores: bool) -> None:
    """A 422 if the request's query names a parameter not in `known`: a misspelt or invented
    option (`DELETE /v1/keys/k?version=1`) must not be silently ignored while the request goes
    on to do something else. Where the route `ignores` them, they are noted instead, for its
    answer to name."""
    unknown = sorted(set(QueryParams(scope["query_string"]).keys()) - known)
    if unknown and ignores:
        scope["state"]["ignored_query"] = unknown
    elif unknown:
        raise RequestValidationError(
            [
                {
                    "type": "extra_forbidden",
                    "loc": ("query", name),
                    "msg": "Extra inputs are not permitted"
                    + (f"; this route takes {', '.join(sorted(known))}" if known else ""),
                    "input": None,
                }
                for name in unknown
            ]
        )


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The OpenAPI parameters FastAPI declares for a `Annotated[model, Query()]` argument,
    from a route of a throwaway app that declares one. A route whose query matters only for
    raw bodies reads it itself (`app.http.body.read_query`) rather than have FastAPI parse it
    on every request, and declares it with these."""
    probe = FastAPI()

    @probe.get("/")
    def declared(query: Annotated[model, Query()]) -> None:  # type: ignore[valid-type]
        """Never called: it only declares the parameters."""

    parameters: list[dict[str, Any]] = probe.openapi()["paths"]["/"]["get"]["parameters"]
    return parameters
