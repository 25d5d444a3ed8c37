"""The adapter over FastAPI's and Starlette's internals, held to what the installed releases do:
the scope the router fills, the route table, the query parameters it refuses, a route served by
its own handler. A release that changes what the adapter reaches into fails here."""

from typing import Annotated, Any

import pytest
from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from app.http.framework import (
    PATH_PARAMS,
    ROUTE,
    HandlerRoute,
    LeanApp,
    install_routes,
    methods_at,
    query_parameters,
    route_path,
    route_scope,
    route_template,
)

ROUTER_KEYS = ("router", "endpoint", ROUTE, PATH_PARAMS)


class Window(BaseModel):
    limit: int = Field(10, ge=1)
    tags: list[str] = []


def _app() -> tuple[FastAPI, list[dict[str, Any]]]:
    """An app with a handler route and a plain route, noting the scope each request reached."""
    seen: list[dict[str, Any]] = []

    async def handler(request: Request) -> Response:
        seen.append(dict(request.scope))
        return Response(b"handled")

    async def declared(name: str) -> None:
        """Never called."""

    routed = HandlerRoute("/v1/things/{name}/touch", declared, handler, methods=["POST"])
    routed.query_names = frozenset({"when"})
    router = APIRouter()
    router.routes.append(routed)

    @router.get("/v1/things/{name}")
    async def read(request: Request, name: str, window: Annotated[Window, Query()]) -> dict:
        seen.append(dict(request.scope))
        return {"name": name, "limit": window.limit}

    app = LeanApp(docs_url=None, redoc_url=None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"errors": list(exc.errors())}, status_code=422)

    install_routes(app, [router])
    return app, seen


def test_route_scope_is_what_the_router_puts_in_the_scope() -> None:
    app, seen = _app()
    with TestClient(app) as client:
        assert client.post("/v1/things/a/touch").content == b"handled"
    (scope,) = seen
    route = scope[ROUTE]
    assert isinstance(route, HandlerRoute) and route.path == "/v1/things/{name}/touch"
    entries, route_app = route_scope(app.router, route)
    assert {**entries, PATH_PARAMS: {"name": "a"}} == {key: scope[key] for key in ROUTER_KEYS}
    assert route_app is route.app


def test_route_path_is_the_path_the_router_matches() -> None:
    scope = {"path": "/base/v1/aez/k/encrypt", "root_path": "/base"}
    assert route_path(scope) == "/v1/aez/k/encrypt"
    assert route_path({"path": "/v1/keys", "root_path": ""}) == "/v1/keys"


def test_route_template_names_the_route_that_took_the_request() -> None:
    app, seen = _app()
    with TestClient(app) as client:
        client.get("/v1/things/a")
        assert client.get("/openapi.json").status_code == 200
    (scope,) = seen
    assert route_template(scope) == "/v1/things/{name}"
    openapi = {"type": "http", "endpoint": object(), "path": "/openapi.json", PATH_PARAMS: {}}
    assert route_template(openapi) == "/openapi.json"
    assert route_template({**openapi, PATH_PARAMS: {"x": "1"}}) == "unmatched"
    assert route_template({"type": "http", "path": "/nowhere"}) == "unmatched"


def test_a_mounted_apps_requests_are_named_by_the_mount() -> None:
    """What follows a mount's path is the client's: one template for every such request, so
    that metrics keep one label for it (each path was one before), under a root path too."""
    seen: list[dict[str, Any]] = []

    async def mounted(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)
        await PlainTextResponse("")(scope, receive, send)

    app = FastAPI()
    app.mount("/docs/assets", mounted)
    for root_path in ("", "/base"):
        with TestClient(app, root_path=root_path) as client:
            for path in ("a.js", "y" * 5000, "%00", "%2e%2e/x"):
                client.get(f"{root_path}/docs/assets/{path}")
    assert len(seen) == 8
    assert {route_template(scope) for scope in seen} == {"/docs/assets/{path}"}


def test_the_table_is_the_routers_routes_then_those_already_in_it() -> None:
    app, _ = _app()
    paths = [getattr(route, "path", None) for route in app.routes]
    assert paths == ["/v1/things/{name}/touch", "/v1/things/{name}", "/openapi.json"]


@pytest.mark.parametrize(
    ("method", "path", "status", "takes"),
    [
        ("POST", "/v1/things/a/touch?when=now", 200, None),
        ("POST", "/v1/things/a/touch?version=1", 422, "when"),
        ("GET", "/v1/things/a?limit=3&tags=x&tags=y", 200, None),
        ("GET", "/v1/things/a?limt=3", 422, "limit, tags"),
        ("GET", "/openapi.json?x=1", 422, None),
    ],
)
def test_a_query_parameter_a_route_does_not_take_is_refused(
    method: str, path: str, status: int, takes: str | None
) -> None:
    app, seen = _app()
    with TestClient(app) as client:
        answer = client.request(method, path)
    assert answer.status_code == status, answer.text
    if status == 422:
        assert seen == []  # refused before the route's own code
        message = answer.json()["errors"][0]["msg"]
        assert message.startswith("Extra inputs are not permitted")
        assert message.endswith(f"; this route takes {takes}" if takes else "permitted")


def test_methods_at_a_path_are_those_of_every_route_there() -> None:
    app, _ = _app()
    assert methods_at(app.routes, "/v1/things/a") == {"GET"}
    assert methods_at(app.routes, "/v1/things/a/touch") == {"POST"}
    assert methods_at(app.routes, "/v1/nothing") == set()


def test_query_parameters_are_what_fastapi_declares_for_a_query_model() -> None:
    app = FastAPI()

    @app.get("/")
    def declared(window: Annotated[Window, Query()]) -> None:
        """The parameters as FastAPI declares them."""

    expected = app.openapi()["paths"]["/"]["get"]["parameters"]
    assert query_parameters(Window) == expected
    assert [p["name"] for p in expected] == ["limit", "tags"]
