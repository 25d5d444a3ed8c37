"""How the service answers what is not a well-formed request: bodies over the limit, clients that
leave mid-body, unexpected errors, wrong methods, misplaced parameters, and bodies sent without
a token. Metrics and logs must stay truthful and bounded through all of it."""

import asyncio
import base64
import gzip
import itertools
import json
import re
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from pydantic import ValidationError
from starlette.types import Message, Receive, Scope, Send

from app.http.budget import MAX_JSON_VALUES, json_values
from app.http.middleware import ObserveMiddleware
from app.http.vault import VAULT_PREFIXES
from app.main import create_app
from app.ops.backup import LedgerEntry
from app.settings import MAX_BATCH_ITEMS as MAX_ITEMS
from app.settings import Settings

LIMIT = 4096
JSON_TYPE = {"content-type": "application/json"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def auth(settings: Settings) -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.admin_token}"}


@pytest.fixture
def limited(settings: Settings, auth: dict[str, str]) -> Iterator[TestClient]:
    limits = {"max_json_body_bytes": LIMIT, "max_body_bytes": LIMIT}
    app = create_app(settings.model_copy(update=limits))
    with TestClient(app, headers=auth) as client:
        yield client


def operations_with_a_body(app: FastAPI) -> list[tuple[str, str, str]]:
    """Each operation with a body: method, path and the body's media type."""
    paths = app.openapi()["paths"]
    return [
        (
            method.upper(),
            path.replace("{name}", "k").replace("{token_id}", "0" * 16),
            next(iter(operation["requestBody"]["content"])),
        )
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]


def test_every_body_over_the_limit_is_a_413(limited: TestClient) -> None:
    """Whoever reads the body (FastAPI for a body parameter, or the route itself), declared or
    streamed, the answer is the documented 413 problem, not FastAPI's 400."""
    operations = operations_with_a_body(limited.app)  # type: ignore[arg-type]
    assert len(operations) >= 15
    oversized = json.dumps({"pad": "x" * LIMIT}).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(oversized), 1000):
            yield oversized[start : start + 1000]

    for method, path, media_type in operations:
        if path == "/v1/sys/wrapping/wrap":
            continue  # refused before its body is read, without X-Vault-Wrap-TTL (as Vault)
        if path.startswith("/v1/auth/") and not path.startswith("/v1/auth/token/"):
            continue  # no such auth mount in this app: refused before its body is read
        headers = {"content-type": media_type}
        for content in (oversized, chunks()):
            response = limited.request(method, path, content=content, headers=headers)
            assert response.status_code == (400 if path == "/" else 413), (path, response.text)
            if path == "/":  # KMS's: the signature first (a bearer token is none), no byte read
                assert response.json()["__type"] == "IncompleteSignatureException"
                continue
            if path.startswith(VAULT_PREFIXES):  # Vault's shape
                assert "over this service's limit" in response.json()["errors"][0]
                continue
            assert response.json()["type"] == "urn:cipherd:problem:body-too-large"


def test_raw_bodies_have_their_own_larger_limit(settings: Settings, auth: dict[str, str]) -> None:
    """A JSON body costs far more to parse than raw bytes cost to encrypt: it gets a smaller
    limit, and its 413 says how to send a large payload."""
    limits = {"max_json_body_bytes": LIMIT, "max_body_bytes": 4 * LIMIT}
    with TestClient(create_app(settings.model_copy(update=limits)), headers=auth) as client:
        client.post("/v1/keys", json={"name": "k", "type": "aez"})
        raw = {"content-type": "application/octet-stream"}
        assert client.post("/v1/aez/k/encrypt", content=b"r" * 2 * LIMIT, headers=raw).is_success
        over = client.post("/v1/aez/k/encrypt", content=b"r" * 5 * LIMIT, headers=raw)
        assert over.status_code == 413
        as_json = client.post("/v1/aez/k/encrypt", json={"plaintext": b64(b"j" * LIMIT)})
        assert as_json.status_code == 413
        assert "take larger raw bodies" in as_json.json()["detail"]
        untyped = client.post("/v1/aez/k/encrypt", content=b"u" * 2 * LIMIT)
        assert untyped.status_code == 413
        # A raw Content-Type on a JSON-only route: refused before any byte is read.
        for path in ("/v1/keys", "/v1/tokens", "/v1/fe/k/encrypt", "/v1/aez/k/encrypt/batch"):
            posed = client.post(path, content=b"{" * 2 * LIMIT, headers=raw)
            assert posed.status_code == 415, path


def test_only_a_route_that_reads_raw_bytes_lifts_the_json_limit(
    settings: Settings, auth: dict[str, str]
) -> None:
    """A client's Content-Type alone does not lift it, whoever reads the body."""
    limits = {"max_json_body_bytes": LIMIT, "max_body_bytes": 4 * LIMIT}
    app = create_app(settings.model_copy(update=limits))

    @app.post("/v1/echo-length")
    async def echo_length(request: Request) -> dict[str, int]:
        return {"length": len(await request.body())}

    app.router.routes.insert(0, app.router.routes.pop())
    with TestClient(app, headers=auth) as client:
        raw = {"content-type": "application/octet-stream"}
        small = client.post("/v1/echo-length", content=b"x" * LIMIT, headers=raw)
        assert small.json() == {"length": LIMIT}
        large = client.post("/v1/echo-length", content=b"x" * 2 * LIMIT, headers=raw)
        assert large.status_code == 413


def test_json_media_types_with_a_suffix_are_json(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    body = json.dumps({"items": [{"plaintext": b64(b"hi")}]})
    vendor = {"content-type": "application/vnd.example+json"}
    response = client.post("/v1/aez/a/encrypt/batch", content=body, headers=vendor)
    assert response.status_code == 200, response.text


def _log_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_an_unexpected_error_is_a_500_with_the_request_id_logged_once(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    app = create_app(settings)

    @app.get("/v1/broken")
    async def broken() -> None:
        raise RuntimeError("an internal fault")

    app.router.routes.insert(0, app.router.routes.pop())
    # The default TestClient re-raises what escapes the app: nothing may.
    with TestClient(app) as client:
        response = client.get("/v1/broken", headers={"X-Request-ID": "fault-1"})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["x-request-id"] == "fault-1"
    assert response.json()["detail"] == "request fault-1 failed"
    errors = [line for line in _log_lines(capsys.readouterr().err) if line["level"] == "ERROR"]
    assert len(errors) == 1
    assert errors[0]["request_id"] == "fault-1"
    assert "RuntimeError: an internal fault" in errors[0]["exception"]
    metrics = client.get("/metrics").text
    assert 'cipherd_http_requests_total{method="GET",route="/v1/broken",status="500"}' in metrics


async def _call(
    app: FastAPI, method: str, path: str, headers: dict[str, str], messages: list[Message]
) -> list[Message]:
    """The app called directly as an ASGI app, its body messages given as they would arrive."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    pending = list(messages)
    sent: list[Message] = []

    async def receive() -> Message:
        return pending.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/v1/aez/k/encrypt", "application/octet-stream"),
        ("/v1/ecies/k/decrypt", "application/json"),
        ("/v1/keys", "application/json"),  # a body FastAPI reads
    ],
)
def test_a_client_gone_mid_body_is_no_error(
    settings: Settings,
    auth: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    path: str,
    content_type: str,
) -> None:
    app = create_app(settings)
    headers = {**auth, "content-type": content_type, "content-length": "100"}
    parts = [{"type": "http.request", "body": b"abcde", "more_body": True}]
    sent = asyncio.run(_call(app, "POST", path, headers, [*parts, {"type": "http.disconnect"}]))
    assert not [m for m in sent if m["type"] == "http.response.start" and m["status"] >= 500]
    lines = _log_lines(capsys.readouterr().err)
    assert not [line for line in lines if line["level"] == "ERROR"]
    (access,) = [line for line in lines if line["logger"] == "cipherd.access"]
    assert access["status"] == 499


@pytest.mark.parametrize("content_type", ["application/json", "application/octet-stream"])
def test_a_body_in_many_chunks_is_read_whole(
    settings: Settings, auth: dict[str, str], content_type: str
) -> None:
    app = create_app(settings)
    with TestClient(app, headers=auth) as client:
        client.post("/v1/keys", json={"name": "k", "type": "aez"})
    plaintext = bytes(range(256)) * 3
    body = (
        json.dumps({"plaintext": base64.b64encode(plaintext).decode()}).encode()
        if content_type == "application/json"
        else plaintext
    )
    cuts = (0, 1, 7, 7, 500, len(body))
    messages = [
        {"type": "http.request", "body": body[start:end], "more_body": end < len(body)}
        for start, end in itertools.pairwise(cuts)
    ]
    headers = {**auth, "content-type": content_type, "content-length": str(len(body))}
    sent = asyncio.run(_call(app, "POST", "/v1/aez/k/encrypt", headers, messages))
    assert sent[0]["status"] == 200
    answer = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    if content_type == "application/json":
        ciphertext = json.loads(answer)["ciphertext"]
    else:
        ciphertext = base64.b64encode(answer).decode()
    with TestClient(app, headers=auth) as client:
        opened = client.post("/v1/aez/k/decrypt", json={"ciphertext": ciphertext})
    assert base64.b64decode(opened.json()["plaintext"]) == plaintext


def test_a_declared_length_is_not_allocated_before_the_bytes_arrive(
    settings: Settings, auth: dict[str, str]
) -> None:
    """A few header bytes claiming a 200 MB body must not make the service hold 200 MB."""
    app = create_app(settings)
    with TestClient(app, headers=auth) as client:
        client.post("/v1/keys", json={"name": "k", "type": "aez"})
    headers = {
        **auth,
        "content-type": "application/octet-stream",
        "content-length": str(200_000_000),
    }
    messages = [
        {"type": "http.request", "body": b"abcde", "more_body": True},
        {"type": "http.disconnect"},
    ]
    tracemalloc.start()
    try:
        asyncio.run(_call(app, "POST", "/v1/aez/k/encrypt", headers, messages))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000


@pytest.mark.parametrize(
    "path",
    [
        "/v1/ecies/k/encrypt/batch",
        "/v1/aez/k/decrypt/batch",
        "/v1/fe/k/decrypt/many",
        "/v1/fe/k/keygen/batch",
        "/v1/ecies/k/encrypt",
        "/v1/fe/k/keygen",
        "/v1/fe/k/encrypt",
        "/v1/ecies/encrypt",
        "/v1/keys",
        "/v1/tokens",
    ],
)
def test_without_a_token_no_body_is_read(app: FastAPI, path: str) -> None:
    headers = {"content-type": "application/json", "content-length": "30000000"}
    sent = asyncio.run(
        _call(app, "POST", path, headers, [])
    )  # any receive() would fail: none is left
    assert sent[0]["status"] == 401


def test_batch_items_are_bounded_before_they_are_all_built(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "k", "type": "aez"})
    over_cap = {"items": [{"ciphertext": ""}] * (MAX_ITEMS + 1)}
    response = client.post("/v1/aez/k/decrypt/batch", json=over_cap)
    assert response.status_code == 422
    assert response.json()["errors"][0]["type"] == "too_long"
    over_setting = {"items": [{"ciphertext": ""}] * 1001}
    response = client.post("/v1/aez/k/decrypt/batch", json=over_setting)
    assert response.status_code == 422
    assert "CIPHERD_MAX_BATCH_ITEMS" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "query", "body"),
    [
        ("/v1/ecies/k/decrypt", "key_version=2", {"ciphertext": b64(b"x" * 100)}),
        ("/v1/ecies/k/encrypt", "symmetric_algorithm=xchacha20", {"plaintext": b64(b"hi")}),
        ("/v1/aez/a/encrypt", "tau=0&nonce=AA%3D%3D", {"plaintext": b64(b"hi")}),
    ],
)
def test_raw_body_parameters_in_the_query_of_a_json_request_are_refused(
    client: TestClient, path: str, query: str, body: dict[str, str]
) -> None:
    """With a JSON body they would be ignored: a decryption would silently use another version."""
    client.post("/v1/keys", json={"name": "k", "type": "ecies-secp256k1"})
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    response = client.post(f"{path}?{query}", json=body)
    assert response.status_code == 422, response.text
    assert "application/octet-stream" in response.json()["detail"]


def test_raw_body_parameters_at_their_defaults_pass_with_json(client: TestClient) -> None:
    """Generated clients send every declared parameter, defaults included; a name the route
    does not take is refused, with JSON as with raw bytes and on every other route."""
    client.post("/v1/keys", json={"name": "k", "type": "ecies-secp256k1"})
    defaults = "is_ephemeral_key_compressed=false&symmetric_nonce_length=16"
    response = client.post(f"/v1/ecies/k/encrypt?{defaults}", json={"plaintext": b64(b"hi")})
    assert response.status_code == 200, response.text
    response = client.post(f"/v1/ecies/k/encrypt?{defaults}&cache=1", json={"plaintext": "aGk="})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"] == ["query", "cache"]


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/v1/ecies/k/encrypt", "POST"),
        ("HEAD", "/v1/ecies/k/encrypt", "POST"),
        ("PUT", "/v1/keys", "GET, HEAD, POST"),  # two routes share the path
        ("PUT", "/v1/keys/k", "DELETE, GET, HEAD, PATCH"),
        ("PATCH", "/v1/tokens", "GET, HEAD, POST"),
    ],
)
def test_a_wrong_method_is_a_405_with_allow(
    client: TestClient, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow


def test_head_is_get_without_the_body(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "k", "type": "aez"})
    for path in ("/healthz", "/readyz", "/metrics", "/v1/keys", "/v1/keys/k"):
        got, head = client.get(path), client.head(path)
        assert (head.status_code, head.content) == (200, b""), path
        assert head.headers["content-type"] == got.headers["content-type"]
        assert "x-request-id" in head.headers
    metrics = client.get("/metrics").text
    assert 'method="HEAD",route="/v1/keys/{name}",status="200"' in metrics


def test_json_only_routes_name_json_alone_in_their_415(client: TestClient) -> None:
    response = client.post(
        "/v1/fe/k/decrypt", content=b"{}", headers={"content-type": "application/octet-stream"}
    )
    assert response.status_code == 415
    assert response.json()["detail"] == "send application/json, not application/octet-stream"


def test_metric_labels_stay_bounded_and_name_the_route(client: TestClient) -> None:
    client.get("/openapi.json")
    for method in ("PROPFIND", "MKCOL", "M-SEARCH"):
        client.request(method, "/healthz")
    metrics = client.get("/metrics").text
    assert re.search(r'requests_total\{method="GET",route="/openapi.json",status="200"\}', metrics)
    assert 'method="other",route="/healthz",status="405"' in metrics
    assert "PROPFIND" not in metrics
    # Paths under the documentation's assets are the client's: one label for all of them.
    for asset in ("swagger-ui.css", "nothing-" + "y" * 4000, "%00"):
        client.get(f"/docs/assets/{asset}")
    metrics = client.get("/metrics").text
    assert 'route="/docs/assets/{path}",status="200"' in metrics
    assert 'route="/docs/assets/{path}",status="404"' in metrics
    assert "nothing-" not in metrics and "\x00" not in metrics and "\0" not in metrics


@pytest.mark.parametrize(
    "body",
    [
        {"name": "f", "type": "ipfe-opt", "dimension": True},
        {"name": "f", "type": "ipfe-opt", "dimension": 3.0},
        {"name": "e", "type": "ecies-secp256k1", "exportable": "yes"},
        {"name": "e", "type": "ecies-secp256k1", "exportable": 1},
    ],
)
def test_key_options_are_not_coerced(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post("/v1/keys", json=body)
    assert response.status_code == 422, response.text
    assert client.get(f"/v1/keys/{body['name']}").status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/keys", {"name": "e", "type": "ecies-secp256k1", "exportible": True}, "exportible"),
        ("/v1/ecies/k/encrypt", {"plaintext": b64(b"hi"), "keyversion": 1}, "keyversion"),
        (
            "/v1/ecies/k/encrypt",
            {"plaintext": b64(b"hi"), "config": {"elliptic_curve": "x25519"}},
            "elliptic_curve",
        ),
        ("/v1/aez/a/encrypt/batch", {"items": [{"plaintext": "", "nonse": ""}]}, "nonse"),
        ("/v1/tokens", {"keys": ["*"], "operations": ["read"], "ttl": 60}, "ttl"),
    ],
)
def test_a_field_the_operation_does_not_take_is_refused(
    client: TestClient, path: str, body: dict[str, Any], field: str
) -> None:
    """Dropped, each would have taken its default unnoticed: a non-exportable key, the latest
    version, the key's own curve, an empty nonce, a token that never expires."""
    client.post("/v1/keys", json={"name": "k", "type": "ecies-secp256k1"})
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["detail"]
    assert client.get("/v1/keys/e").status_code == 404
    assert client.get("/v1/tokens").json()["tokens"] == []


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/v1/keys", "application/json"),
        ("/v1/transit/encrypt/t", "application/json"),
        ("/v1/aez/a/encrypt", "application/json"),
    ],
)
def test_a_json_body_of_too_many_members_is_refused_as_it_arrives(
    client: TestClient, path: str, content_type: str
) -> None:
    """Each member a model refuses is an error of some 400 bytes, each it keeps a dictionary
    entry: 2.5 million of them took a worker 1.4 GB. Past 250,000 colons a JSON body is a 413."""
    members = ",".join(f'"f{i}":1' for i in range(250_001))
    response = client.post(
        path, content="{" + members + "}", headers={"content-type": content_type}
    )
    assert response.status_code == 413, response.text
    assert "limit of 250000 JSON members and arrays" in response.text


@pytest.mark.parametrize(
    ("value", "unit"),
    [
        ("[" * 100 + "]" * 100, "250000 JSON members and arrays"),  # no colon in 32 MiB of them
        ("[]", "250000 JSON members and arrays"),
        ("0", "2000000 JSON values"),
    ],
    ids=["nested-arrays", "empty-arrays", "values"],
)
def test_a_json_body_of_too_many_arrays_or_values_is_refused_as_it_arrives(
    client: TestClient, value: str, unit: str
) -> None:
    """Nested and empty arrays took 62 s and 5.8 GB of a worker to refuse in 32 MiB, as many
    zeros 1.1 s and 1.3 GB: each becomes an object before the model refuses the whole."""
    count = 2_000_002 if value == "0" else 250_001 // value.count("[")  # one comma fewer
    body = '{"plaintext": [' + ",".join([value] * count) + "]}"
    client.post("/v1/keys", json={"name": "a", "type": "aes256-gcm"})
    response = client.post("/v1/aead/a/encrypt", content=body, headers=JSON_TYPE)
    assert response.status_code == 413, response.text
    assert f"limit of {unit}" in response.text
    small = client.post("/v1/aead/a/encrypt", json={"plaintext": [0] * 1000})
    assert small.status_code == 422, small.text


def test_the_value_bound_admits_the_largest_fe_bodies_the_settings_allow() -> None:
    assert json_values(128, 2000) == MAX_JSON_VALUES  # 15 keygens of 128 x 128: 245,760
    assert json_values(4096, 2000) == 4096 * 4096  # one keygen's matrix
    assert json_values(2048, 10_000) == 10_000 * 2048  # 4 keygens of 2048 x 2048


def test_colons_brackets_and_commas_of_a_raw_body_are_not_counted(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    raw = {"content-type": "application/octet-stream"}
    for byte in (b":", b"[", b"{", b","):
        response = client.post("/v1/aez/a/encrypt", content=byte * 2_100_000, headers=raw)
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("path", "body", "fields", "listed", "last"),
    [
        ("/v1/keys", {"name": "k", "type": "aez"}, 150, 101, "50 more errors, not listed"),
        ("/v1/keys", {"name": "k", "type": "aez"}, 20_000, 1, "20,000 more errors, not listed"),
        ("/v1/aez/a/encrypt", {"plaintext": ""}, 20_000, 1, "20,000 more errors, not listed"),
    ],
)
def test_a_body_of_many_unknown_fields_gets_a_short_422(
    client: TestClient, path: str, body: dict[str, Any], fields: int, listed: int, last: str
) -> None:
    """Each refused field is an error: listed whole, a body of a million would take a minute to
    describe and answer in hundreds of megabytes."""
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    response = client.post(path, json={**body, **{f"f{i}": i for i in range(fields)}})
    assert response.status_code == 422, response.text
    errors = response.json()["errors"]
    assert len(errors) == listed
    assert errors[-1] == {"loc": ["body"], "msg": last, "type": "too_many"}
    assert len(response.content) < 20_000
    assert client.get("/v1/keys/k").status_code == 404


BAD_ROW = [""] * 4096  # a vector's most entries, none of them an integer


@pytest.mark.parametrize(
    ("path", "body", "errors"),
    [
        ("/v1/fe/f/keygen", {"f": [BAD_ROW] * 64}, 1),
        ("/v1/fe/f/encrypt/batch", {"items": [{"x": BAD_ROW}] * 64}, 64),
        ("/v1/aez/a/encrypt", {"plaintext": "", "ad": ["!"] * 1024}, 1),
        (
            "/v1/keys",
            {"name": "k", "type": "ipfe-opt", "fe_policy": {"allowed_functions": [BAD_ROW] * 16}},
            2,  # a vector's first bad entry, and the matrix it is not
        ),
    ],
)
def test_a_list_is_refused_at_its_first_bad_entry(
    client: TestClient, path: str, body: dict[str, Any], errors: int
) -> None:
    """Pydantic describes every bad entry of a list unless told to stop at the first: a 32 MiB
    matrix of 11 million bad entries took 14 s and 4.4 GiB of a worker to refuse."""
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    listed = response.json()["errors"]
    assert len(listed) == errors
    assert all(error["type"] != "too_many" for error in listed), listed[-1]


def test_a_backup_s_ledger_is_refused_at_its_first_bad_function() -> None:
    entry = {"version": 1, "function": [BAD_ROW] * 64, "principal": "p", "time": 1.0, "rank": 0}
    with pytest.raises(ValidationError) as refused:
        LedgerEntry.model_validate(entry)
    assert refused.value.error_count() == 2  # a vector's first bad entry, and not a matrix


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        ("/v1/ecies/k/encrypt", "version=1", "version"),
        ("/v1/aez/a/encrypt", "version=1", "version"),
        ("/v1/aez/a/encrypt", "tau=16&ttl=3", "ttl"),
    ],
)
def test_a_query_parameter_the_raw_operation_does_not_take_is_refused(
    client: TestClient, path: str, query: str, field: str
) -> None:
    client.post("/v1/keys", json={"name": "k", "type": "ecies-secp256k1"})
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    raw = {"content-type": "application/octet-stream"}
    response = client.post(f"{path}?{query}", content=b"hi", headers=raw)
    assert response.status_code == 422, response.text
    assert f"query.{field}" in response.json()["detail"]
    encrypted = client.post(path, content=b"hi", headers=raw)
    assert encrypted.status_code == 200
    decrypt = path.replace("encrypt", "decrypt")
    assert (
        client.post(f"{decrypt}?key_version=1", content=encrypted.content, headers=raw).content
        == b"hi"
    )


@pytest.mark.parametrize("version", [True, "1", 1.0])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/ecies/k/decrypt", {"ciphertext": b64(b"x" * 100)}),
        ("/v1/aez/a/decrypt", {"ciphertext": b64(b"x" * 100)}),
        ("/v1/fe/f/encrypt", {"x": [1, 2]}),
    ],
)
def test_a_key_version_is_not_coerced(
    client: TestClient, path: str, body: dict[str, Any], version: object
) -> None:
    client.post("/v1/keys", json={"name": "k", "type": "ecies-secp256k1"})
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    client.post("/v1/keys", json={"name": "f", "type": "ipfe-opt", "dimension": 2})
    response = client.post(path, json={**body, "key_version": version})
    assert response.status_code == 422, response.text
    assert "key_version" in response.json()["detail"]


@pytest.mark.parametrize("content_type", ["application/octet-stream", "application/json"])
def test_a_compressed_body_is_refused_not_encrypted(client: TestClient, content_type: str) -> None:
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    body = gzip.compress(b'{"plaintext": ""}')
    headers = {"content-type": content_type, "content-encoding": "gzip"}
    response = client.post("/v1/aez/a/encrypt", content=body, headers=headers)
    assert response.status_code == 415, response.text
    assert "Content-Encoding gzip" in response.json()["detail"]
    identity = {"content-type": content_type, "content-encoding": "identity"}
    assert client.post("/v1/aez/a/encrypt", content=b"{}", headers=identity).status_code != 415


def test_raw_associated_data_is_bounded_like_json(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    query = "&".join(["ad=AA%3D%3D"] * 1025)
    response = client.post(
        f"/v1/aez/a/encrypt?{query}",
        content=b"hi",
        headers={"content-type": "application/octet-stream"},
    )
    assert response.status_code == 422, response.text


def test_a_request_cancelled_at_shutdown_is_a_503_with_its_id() -> None:
    """uvicorn cancels requests still running when its shutdown grace ends."""
    started = asyncio.Event()

    async def slow(scope: Scope, receive: Receive, send: Send) -> None:
        started.set()
        await asyncio.sleep(3600)

    middleware = ObserveMiddleware(
        slow, max_body_bytes=LIMIT, max_json_body_bytes=LIMIT, body_memory=4 * LIMIT
    )

    async def main() -> list[Message]:
        sent: list[Message] = []

        async def send(message: Message) -> None:
            sent.append(message)

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": "GET", "path": "/v1/slow", "headers": []}
        task = asyncio.ensure_future(middleware(scope, receive, send))
        await started.wait()
        task.cancel()
        await task  # ends: the cancellation was answered
        return sent

    sent = asyncio.run(main())
    start = sent[0]
    assert start["status"] == 503
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == b"1" and headers[b"connection"] == b"close"
    assert b"x-request-id" in headers
    assert json.loads(sent[1]["body"])["type"] == "urn:cipherd:problem:shutting-down"


def test_request_ids_are_unique_within_and_across_processes(settings: Settings) -> None:
    """Without X-Request-ID, a request's id is 32 hex digits: the app's random prefix (one per
    worker process), then a count."""
    seen = []
    for _ in range(2):
        with TestClient(create_app(settings)) as client:
            seen += [client.get("/healthz").headers["x-request-id"] for _ in range(3)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", rid) for rid in seen)
    assert len(set(seen)) == 6
    assert len({rid[:16] for rid in seen}) == 2
