"""Tokens and scopes: every route needs a token, and a scoped token stays in its scope."""

import asyncio
import base64
import re

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from fastapi.testclient import TestClient
from starlette.requests import Request

from app.http.deps import bearer_token
from app.main import create_app
from app.ops.token_values import hash_token
from app.settings import Settings
from app.store import TokenRecord

OPEN_PATHS = {
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/redoc",
    "/docs/oauth2-redirect",
    # The front page and the web console's files: the console signs in in the browser.
    "/",
    "/ui",
    "/ui/",
    "/ui/static/{digest}/{path:path}",
    # Vault's health paths, as Vault answers them.
    "/v1/sys/health",
    "/v1/sys/seal-status",
    "/v1/sys/leader",
    "/v1/sys/init",
}
# Vault's paths refuse as Vault does: 403 and `{"errors": ["permission denied", ...]}`.
VAULT_PATHS = (
    "/v1/transit/",
    "/v1/sys/mounts",
    "/v1/sys/remount",
    "/v1/sys/auth",
    "/v1/sys/policies",
    "/v1/sys/policy",
    "/v1/sys/capabilities",
    "/v1/sys/leases",
    "/v1/sys/tools",
    "/v1/auth/",
)
# Vault's wrapping paths take the wrapping token as the request's: without one, as Vault, 400.
WRAPPING = "/v1/sys/wrapping/"


def is_login(path: str) -> bool:
    return path.startswith("/v1/auth/") and path.endswith("/login")


def all_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every (method, path) of the app, from its OpenAPI document and its route table."""
    found = set()
    for path, operations in app.openapi()["paths"].items():
        for method in operations:
            found.add((method.upper(), path))
    for route in app.router.routes:
        if isinstance(route, APIRoute):
            for method in route.methods:
                found.add((method, route.path))
    return sorted(found)


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "k", path)


def test_every_route_but_health_needs_a_token(app: FastAPI, anonymous: TestClient) -> None:
    routes = all_routes(app)
    # A login (`/v1/auth/<method>/login`) is how a caller without a token gets one.
    guarded = [(m, p) for m, p in routes if p not in OPEN_PATHS and not is_login(p)]
    assert len(guarded) >= 15
    for method, path in guarded:
        for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": "Basic x"}):
            response = anonymous.request(method, concrete(path), headers=headers, json={})
            if path.startswith(WRAPPING):
                assert response.status_code in (400, 403), (method, path, response.text)
                assert response.json()["errors"], (method, path, response.text)
                continue
            if path.startswith(VAULT_PATHS):
                assert response.status_code == 403, (method, path, headers, response.text)
                assert response.json()["errors"][0] == "permission denied"
                continue
            assert response.status_code == 401, (method, path, headers, response.text)
            assert response.json()["type"] == "urn:cipherd:problem:unauthorized"
            assert response.headers["www-authenticate"] == "Bearer"


def test_open_paths_answer_without_a_token(anonymous: TestClient) -> None:
    assert anonymous.get("/healthz").json() == {"status": "ok"}
    assert anonymous.get("/readyz").json() == {"status": "ok"}
    assert "cipherd_http_requests_total" in anonymous.get("/metrics").text


def scoped(client: TestClient, keys: list[str], operations: list[str], **extra: object) -> dict:
    response = client.post("/v1/tokens", json={"keys": keys, "operations": operations, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def test_scoped_token_stays_in_scope(client: TestClient, app: FastAPI) -> None:
    for name in ("orders-1", "payroll"):
        client.post("/v1/keys", json={"name": name, "type": "ecies-secp256k1"})
    token = scoped(client, ["orders-*"], ["encrypt", "read"])
    plaintext = base64.b64encode(b"x").decode()
    with TestClient(app, headers={"Authorization": f"Bearer {token['token']}"}) as user:
        ok = user.post("/v1/ecies/orders-1/encrypt", json={"plaintext": plaintext})
        assert ok.status_code == 200
        ciphertext = ok.json()["ciphertext"]
        # Outside the operations: decrypt; outside the patterns: payroll; admin-only paths.
        denied = [
            user.post("/v1/ecies/orders-1/decrypt", json={"ciphertext": ciphertext}),
            user.post("/v1/ecies/payroll/encrypt", json={"plaintext": plaintext}),
            user.get("/v1/keys/payroll"),
            user.post("/v1/keys", json={"name": "n", "type": "aez"}),
            user.post("/v1/keys/orders-1/rotate"),
            user.delete("/v1/keys/orders-1"),
            user.get("/v1/tokens"),
            user.get("/v1/keys/orders-1/public"),
        ]
        for response in denied:
            assert response.status_code == 403, response.text
            assert response.json()["type"] == "urn:cipherd:problem:forbidden"
        listed = user.get("/v1/keys").json()["keys"]
        assert [k["name"] for k in listed] == ["orders-1"]
    assert client.get("/v1/keys/orders-1").json()["latest_version"] == 1


def test_revoked_and_expired_tokens_are_refused(client: TestClient, app: FastAPI) -> None:
    token = scoped(client, ["*"], ["read"])
    with TestClient(app, headers={"Authorization": f"Bearer {token['token']}"}) as user:
        assert user.get("/v1/keys").status_code == 200
        assert client.delete(f"/v1/tokens/{token['id']}").status_code == 204
        assert user.get("/v1/keys").status_code == 401
    assert client.delete(f"/v1/tokens/{token['id']}").status_code == 404

    expired_token = "cdt_expired-" + "x" * 20
    app.state.services.store.tokens.add(
        TokenRecord("00000000000000ee", hash_token(expired_token), "", ("*",), ("read",), 1.0, 2.0)
    )
    with TestClient(app, headers={"Authorization": f"Bearer {expired_token}"}) as user:
        assert user.get("/v1/keys").status_code == 401


def test_tokens_are_listed_without_the_secret(client: TestClient) -> None:
    token = scoped(client, ["a*"], ["decrypt"], description="analyst")
    listing = client.get("/v1/tokens")
    assert token["token"] not in listing.text
    assert listing.json()["tokens"][0]["description"] == "analyst"


@pytest.mark.parametrize(
    "body",
    [
        {"keys": [], "operations": ["read"]},
        {"keys": ["*"], "operations": []},
        {"keys": ["*"], "operations": ["fly"]},
        {"keys": ["*"], "operations": ["read"], "ttl_seconds": 0},
    ],
)
def test_bad_token_requests(client: TestClient, body: dict) -> None:
    assert client.post("/v1/tokens", json=body).status_code == 422


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_text_no_store_can_hold_is_refused(
    backend: str, settings: Settings, request: pytest.FixtureRequest
) -> None:
    """A NUL in stored or queried text is a 422 on either store; on PostgreSQL it was a 500."""
    if backend == "postgresql":
        settings = settings.model_copy(
            update={"database_url": request.getfixturevalue("postgres_url")}
        )
    admin = {"Authorization": f"Bearer {settings.admin_token}"}
    with TestClient(create_app(settings), headers=admin) as client:
        refused = [
            {"keys": ["a\x00"], "operations": ["read"]},
            {"keys": ["orders *"], "operations": ["read"]},  # a space never matches a name
            {"keys": ["a*"], "operations": ["read"], "description": "x\x00y"},
            {"keys": ["a*"], "operations": ["read"], "description": "two\nlines"},
        ]
        for body in refused:
            assert client.post("/v1/tokens", json=body).status_code == 422, body
        for after in ("\x00", "a\x00b", "a b"):
            assert client.get("/v1/keys", params={"limit": 2, "after": after}).status_code == 422
        globs = {"keys": ["orders-[!x]?*", "a.b_c"], "operations": ["read"], "description": "ok"}
        assert client.post("/v1/tokens", json=globs).status_code == 201
        assert client.get("/v1/tokens").json()["tokens"][0]["keys"] == globs["keys"]


def test_an_admin_token_of_any_printable_ascii_works(settings: Settings) -> None:
    token = 'Correct-Horse!Battery#Staple$%"<>'
    admin = {"Authorization": f"Bearer {token}"}
    configured = settings.model_copy(update={"admin_token": token})
    with TestClient(create_app(configured), headers=admin) as client:
        assert client.get("/v1/tokens").status_code == 200


AUTHORIZATION_VALUES = [
    None,
    b"",
    b"Bearer",
    b"Bearer ",
    b"Bearer    ",
    b"Bearer abc",
    b"bearer abc",
    b"BEARER abc",
    b"Bearer   abc  ",
    b"Bearer abc def",
    b"Bearer\tabc",
    b"Basic abc",
    b" Bearer abc",
    b"Bearer caf\xe9",
]


@pytest.mark.parametrize("value", AUTHORIZATION_VALUES)
def test_the_raw_header_reading_is_fastapis(value: bytes | None) -> None:
    """`bearer_token` reads the raw headers as FastAPI's HTTPBearer reads Starlette's."""
    headers = [] if value is None else [(b"authorization", value)]
    request = Request({"type": "http", "headers": [(b"host", b"x"), *headers]})
    expected = asyncio.run(HTTPBearer(auto_error=False)(request))
    assert bearer_token(request.scope) == (None if expected is None else expected.credentials)


@pytest.mark.parametrize("spelling", ["Bearer {}", "bearer {}", "BEARER   {}  "])
def test_the_token_is_read_alike_by_every_kind_of_route(
    anonymous: TestClient, settings: Settings, spelling: str
) -> None:
    """Key operations check the token themselves, other routes through FastAPI's dependency."""
    headers = {"Authorization": spelling.format(settings.admin_token)}
    created = anonymous.post("/v1/keys", headers=headers, json={"name": "k", "type": "aez"})
    assert created.status_code == 201, created.text
    body = {"plaintext": base64.b64encode(b"x").decode()}
    assert anonymous.post("/v1/aez/k/encrypt", headers=headers, json=body).status_code == 200
