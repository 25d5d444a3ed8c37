"""The request stack: ObserveMiddleware outermost, the problem handlers inside it, and the hot key
operations reached by their path without the router."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from fastapi.testclient import TestClient
from starlette.middleware.exceptions import ExceptionMiddleware

from app.http.auth_mounts import AuthMountRouting
from app.http.middleware import ObserveMiddleware
from app.http.operation import KeyOperationRoute
from app.http.stack import HotOperations
from app.http.transit import TransitMounts
from app.http.vault_paths import RootNamespaceOnly
from app.http.wrapping import ResponseWrapper

HOT_PATHS = [
    "/v1/aez/{name}/encrypt",
    "/v1/aez/{name}/decrypt",
    "/v1/hmac/{name}",
    "/v1/hmac/{name}/verify",
]


def _dispatch(method: str, path: str) -> tuple[str, dict[str, Any]]:
    """Which app `HotOperations` hands the request to, and the scope it gets."""
    reached: list[tuple[str, dict[str, Any]]] = []

    def stand_in(label: str) -> Any:
        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            reached.append((label, scope))

        return app

    routes = [SimpleNamespace(path=p, endpoint=p, app=stand_in(p)) for p in HOT_PATHS]
    dispatch = HotOperations(stand_in("router"), "the router", routes)  # type: ignore[arg-type]
    scope = {"type": "http", "method": method, "path": path, "root_path": ""}
    asyncio.run(dispatch(scope, None, None))  # type: ignore[arg-type]
    (answer,) = reached
    return answer


@pytest.mark.parametrize(
    ("path", "route", "name"),
    [
        ("/v1/aez/orders/encrypt", "/v1/aez/{name}/encrypt", "orders"),
        ("/v1/aez/orders/decrypt", "/v1/aez/{name}/decrypt", "orders"),
        ("/v1/hmac/tags", "/v1/hmac/{name}", "tags"),
        ("/v1/hmac/tags/verify", "/v1/hmac/{name}/verify", "tags"),
    ],
)
def test_a_hot_operation_gets_the_scope_the_router_would_give(
    path: str, route: str, name: str
) -> None:
    label, scope = _dispatch("POST", path)
    assert label == route
    assert scope["route"].path == route
    assert scope["endpoint"] == route
    assert scope["path_params"] == {"name": name}
    assert scope["router"] == "the router"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/aez/orders/encrypt"),  # the router answers 405 with Allow
        ("POST", "/v1/aez/orders/encrypt/raw"),
        ("POST", "/v1/aez/orders/encrypt/batch"),
        ("POST", "/v1/aez//encrypt"),
        ("POST", "/v1/aez/orders/rotate"),
        ("POST", "/v2/aez/orders/encrypt"),
        ("POST", "/v1/keys"),
        ("POST", "/v1/hmac/tags/"),
    ],
)
def test_everything_else_goes_to_the_router(method: str, path: str) -> None:
    assert _dispatch(method, path)[0] == "router"


def test_a_hot_path_outside_the_one_shape_is_refused() -> None:
    route = SimpleNamespace(path="/v1/aez/encrypt/{name}")
    with pytest.raises(ValueError, match="/v1/<family>/"):
        HotOperations(None, None, [route])  # type: ignore[arg-type, list-item]


def test_the_app_stack_is_observe_then_problems_then_hot_operations(app: FastAPI) -> None:
    stack = app.build_middleware_stack()
    assert isinstance(stack, ObserveMiddleware)
    assert isinstance(stack.app, ExceptionMiddleware)
    namespaces = stack.app.app
    assert isinstance(namespaces, RootNamespaceOnly)
    auth_mounts = namespaces.app
    assert isinstance(auth_mounts, AuthMountRouting)
    wrapper = auth_mounts.app
    assert isinstance(wrapper, ResponseWrapper)
    mounts = wrapper.app
    assert isinstance(mounts, TransitMounts)
    assert set(mounts._hot) == {"encrypt", "decrypt"}
    hot = mounts.app
    assert isinstance(hot, HotOperations)
    assert isinstance(hot.app, AsyncExitStackMiddleware)
    declared = {
        route.path
        for route in app.router.routes
        if isinstance(route, KeyOperationRoute) and route.hot
    }
    assert {route.path for route in hot._routes.values()} == declared


def test_a_hot_operations_errors_are_the_problems_of_the_rest(client: TestClient) -> None:
    """A problem raised in a hot handler is answered by the same handlers, with the request id,
    the audit record and the route's metrics label."""
    missing = client.post("/v1/aez/missing/encrypt", json={"plaintext": "aGk="})
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["type"].endswith(":key-not-found")
    assert missing.headers["x-request-id"]
    broken = client.post(
        "/v1/aez/missing/encrypt", content=b"{", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 422  # the body is read, and refused, before the key is sought
    assert broken.json()["type"].endswith(":invalid-input")
    metrics = client.get("/metrics").text
    assert 'route="/v1/aez/{name}/encrypt"' in metrics
    records = client.get("/v1/audit", params={"operation": "aez_encrypt"}).json()["records"]
    assert sorted(r["status"] for r in records) == [404, 422]
