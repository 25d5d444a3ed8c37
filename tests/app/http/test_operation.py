"""Declared key operations: the per-message and batch routes check name, token and scope
themselves, and answer exactly as FastAPI's own handler does for a route guarded by the same
dependency."""

import base64

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.http.operation import KeyOperationRoute
from app.ops.grants import Operation
from app.routers import aez, ecies, fe, hmac, sign

ROUTERS = (ecies.router, aez.router, fe.router, hmac.router, *sign.routers)
REWRAP = (Operation.DECRYPT, Operation.ENCRYPT)

DIRECT = {
    ("POST", "/v1/ecies/{name}/encrypt"): Operation.ENCRYPT,
    ("POST", "/v1/ecies/{name}/decrypt"): Operation.DECRYPT,
    ("POST", "/v1/aez/{name}/encrypt"): Operation.ENCRYPT,
    ("POST", "/v1/aez/{name}/decrypt"): Operation.DECRYPT,
    ("POST", "/v1/fe/{name}/decrypt"): Operation.DECRYPT,
    ("POST", "/v1/ecies/{name}/encrypt/raw"): Operation.ENCRYPT,
    ("POST", "/v1/ecies/{name}/decrypt/raw"): Operation.DECRYPT,
    ("POST", "/v1/aez/{name}/encrypt/raw"): Operation.ENCRYPT,
    ("POST", "/v1/aez/{name}/decrypt/raw"): Operation.DECRYPT,
    ("POST", "/v1/ecies/{name}/encrypt/batch"): Operation.ENCRYPT,
    ("POST", "/v1/ecies/{name}/decrypt/batch"): Operation.DECRYPT,
    ("POST", "/v1/aez/{name}/encrypt/batch"): Operation.ENCRYPT,
    ("POST", "/v1/aez/{name}/decrypt/batch"): Operation.DECRYPT,
    ("POST", "/v1/fe/{name}/keygen"): Operation.KEYGEN,
    ("POST", "/v1/fe/{name}/encrypt"): Operation.ENCRYPT,
    ("POST", "/v1/fe/{name}/keygen/batch"): Operation.KEYGEN,
    ("POST", "/v1/fe/{name}/encrypt/batch"): Operation.ENCRYPT,
    ("POST", "/v1/fe/{name}/decrypt/batch"): Operation.DECRYPT,
    ("POST", "/v1/fe/{name}/decrypt/many"): Operation.DECRYPT,
    ("POST", "/v1/ecies/{name}/datakey"): Operation.ENCRYPT,
    ("POST", "/v1/ecies/{name}/datakey/batch"): Operation.ENCRYPT,
    ("POST", "/v1/ecies/{name}/rewrap"): REWRAP,
    ("POST", "/v1/ecies/{name}/rewrap/batch"): REWRAP,
    ("POST", "/v1/aez/{name}/datakey"): Operation.ENCRYPT,
    ("POST", "/v1/aez/{name}/datakey/batch"): Operation.ENCRYPT,
    ("POST", "/v1/aez/{name}/rewrap"): REWRAP,
    ("POST", "/v1/aez/{name}/rewrap/batch"): REWRAP,
    ("POST", "/v1/hmac/{name}"): Operation.HMAC,
    ("POST", "/v1/hmac/{name}/batch"): Operation.HMAC,
    ("POST", "/v1/hmac/{name}/verify"): Operation.HMAC,
    ("POST", "/v1/hmac/{name}/verify/batch"): Operation.HMAC,
    ("POST", "/v1/sign/{name}"): Operation.SIGN,
    ("POST", "/v1/sign/{name}/batch"): Operation.SIGN,
    ("POST", "/v1/verify/{name}"): Operation.VERIFY,
    ("POST", "/v1/verify/{name}/batch"): Operation.VERIFY,
}


def test_the_per_message_routes_and_only_they_skip_the_dependency_solver() -> None:
    guarded = {}
    for router in ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute)
            if isinstance(route, KeyOperationRoute):
                (method,) = route.methods
                guarded[(method, route.path)] = route.access
    assert guarded == DIRECT


def test_the_hot_routes_are_declared_so() -> None:
    hot = [
        (route.path, route.access)
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, KeyOperationRoute) and route.hot
    ]
    assert hot == [
        ("/v1/ecies/{name}/encrypt", Operation.ENCRYPT),
        ("/v1/ecies/{name}/decrypt", Operation.DECRYPT),
        ("/v1/ecies/{name}/datakey", Operation.ENCRYPT),
        ("/v1/aez/{name}/encrypt", Operation.ENCRYPT),
        ("/v1/aez/{name}/decrypt", Operation.DECRYPT),
        ("/v1/aez/{name}/datakey", Operation.ENCRYPT),
        ("/v1/fe/{name}/decrypt", Operation.DECRYPT),
        ("/v1/hmac/{name}", Operation.HMAC),
        ("/v1/hmac/{name}/verify", Operation.HMAC),
        ("/v1/sign/{name}", Operation.SIGN),
        ("/v1/verify/{name}", Operation.VERIFY),
    ]


def _exchange(user: TestClient, direct: bool, name: str) -> tuple[int, dict]:
    """One request to a directly checked route, or to FastAPI-handled GET /v1/keys/{name}."""
    if direct:
        body = {"plaintext": base64.b64encode(b"x").decode()}
        response = user.post(f"/v1/aez/{name}/encrypt", json=body)
    else:
        response = user.get(f"/v1/keys/{name}")
    problem = response.json()
    # FastAPI lists a bad name once per parameter that declares it (dependency and endpoint)
    first_error = (problem.get("errors") or [None])[0]
    return response.status_code, {
        "type": problem["type"],
        "title": problem["title"],
        "error": first_error,
    }


@pytest.mark.parametrize(
    ("name", "credentials", "status"),
    [
        ("bad name", "admin", 422),  # the name's pattern first ...
        ("bad name", None, 422),  # ... even before the token, as FastAPI orders it
        ("x" * 129, "admin", 422),
        ("-leading-dash", "admin", 422),
        ("a-key%0A", "admin", 422),  # a trailing newline
        ("a-key", None, 401),
        ("a-key", "Bearer not-a-token", 401),
        ("a-key", "Basic eDp5", 401),
        ("a-key", "other-keys", 403),  # a valid token for other keys
        ("missing", "admin", 404),
    ],
)
def test_same_answers_as_fastapis_handler(
    client: TestClient, app: FastAPI, name: str, credentials: str | None, status: int
) -> None:
    client.post("/v1/keys", json={"name": "a-key", "type": "aez"}).raise_for_status()
    scoped = client.post(
        "/v1/tokens", json={"keys": ["other-*"], "operations": ["encrypt", "read"]}
    ).json()["token"]
    headers = {
        None: {},
        "admin": dict(client.headers),
        "other-keys": {"Authorization": f"Bearer {scoped}"},
    }.get(credentials, {"Authorization": credentials or ""})
    with TestClient(app, headers=headers) as user:
        direct = _exchange(user, True, name)
        handled = _exchange(user, False, name)
    assert direct[0] == handled[0] == status
    assert direct[1] == handled[1]
    if status == 422:
        assert direct[1]["error"]["loc"] == ["path", "name"]


def test_a_permitted_token_gets_through(client: TestClient, app: FastAPI) -> None:
    client.post("/v1/keys", json={"name": "orders-1", "type": "aez"}).raise_for_status()
    token = client.post(
        "/v1/tokens", json={"keys": ["orders-*"], "operations": ["encrypt"]}
    ).json()["token"]
    body = {"plaintext": base64.b64encode(b"order").decode()}
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as user:
        assert user.post("/v1/aez/orders-1/encrypt", json=body).status_code == 200
        assert user.post("/v1/aez/orders-1/decrypt", json={"ciphertext": ""}).status_code == 403


def test_routes_sit_in_the_apps_own_table(app: FastAPI) -> None:
    """No included-router nodes for requests to search."""
    routes = [r for r in app.router.routes if isinstance(r, APIRoute)]
    # openapi.json and .yaml, docs, redoc, their assets
    assert len(routes) == len(app.router.routes) - 5
