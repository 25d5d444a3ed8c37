"""Transit's request bodies read as Vault reads them: an empty body or `null` is `{}`, and the
answer warns, in Vault's words, of the fields the route does not take and of those its path
gives; an answer is the same JSON Starlette would have written."""

import base64
import json
from urllib.parse import urlencode

import pytest
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from app.http.body import JsonAnswer

PLAINTEXT = base64.b64encode(b"order 1001").decode()


@pytest.fixture
def vault(client: TestClient) -> TestClient:
    client.headers["X-Vault-Token"] = client.headers.pop("Authorization").removeprefix("Bearer ")
    assert client.post("/v1/transit/keys/orders").status_code in (200, 204)
    return client


def test_a_body_of_known_fields_gets_no_warning(vault: TestClient) -> None:
    answer = vault.post("/v1/transit/encrypt/orders", json={"plaintext": PLAINTEXT})
    assert answer.status_code == 200, answer.text
    assert answer.json()["warnings"] is None


def test_unknown_fields_and_fields_of_the_path_are_warned_of(vault: TestClient) -> None:
    body = {"plaintext": PLAINTEXT, "name": "other", "colour": "red", "size": 3}
    answer = vault.post("/v1/transit/encrypt/orders", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["warnings"] == [
        "Endpoint replaced the value of these parameters with the values captured from the "
        "endpoint's path: [name]",
        "Endpoint ignored these unrecognized parameters: [colour size]",
    ]


def test_unknown_query_parameters_are_warned_of_at_vaults_paths_only(vault: TestClient) -> None:
    """As OpenBao answers `bao read transit/keys/orders foo=bar`, or a flag after the path
    (`-field=type`, sent as a parameter): a 200 naming what it ignored. It was a 400 here; the
    native API still refuses them."""
    ignored = "Endpoint ignored these unrecognized parameters: [-field foo]"
    read = vault.get("/v1/transit/keys/orders", params={"foo": "bar", "-field": "type"})
    assert read.status_code == 200, read.text
    assert read.json()["warnings"] == [ignored]
    assert read.json()["data"]["name"] == "orders"
    listed = vault.get("/v1/transit/keys", params={"list": "true", "foo": "1", "-field": "x"})
    assert (listed.status_code, listed.json()["warnings"]) == (200, [ignored])
    # A route served by its own handler (Transit's encrypt) too.
    sealed = vault.post("/v1/transit/encrypt/orders?foo=1", json={"plaintext": PLAINTEXT})
    assert sealed.json()["warnings"] == ["Endpoint ignored these unrecognized parameters: [foo]"]
    native = vault.get("/v1/keys/orders", params={"foo": "bar"})
    assert native.status_code == 422


def test_a_warning_names_the_first_hundred_of_many_unknown_fields(vault: TestClient) -> None:
    body = {"plaintext": PLAINTEXT, **{f"f{i:06}": i for i in range(25_000)}}
    answer = vault.post("/v1/transit/encrypt/orders", json=body)
    assert answer.status_code == 200, answer.text
    names = " ".join(f"f{i:06}" for i in range(100))
    expected = f"Endpoint ignored these unrecognized parameters: [{names}] and 24,900 more"
    assert answer.json()["warnings"] == [expected]
    assert len(answer.content) < 2_000


@pytest.mark.parametrize("body", [b"", b"null", b"  null \n", b"{}"])
def test_an_empty_body_is_an_empty_object(vault: TestClient, body: bytes) -> None:
    answer = vault.post("/v1/transit/keys/orders/rotate", content=body)
    assert answer.status_code in (200, 204), answer.text


def test_a_json_answer_is_what_starlette_would_write() -> None:
    content = {
        "request_id": "0f3c",
        "data": {"keys": {1: 1796338184, 2: 1796338190}, "ok": True, "none": None},
        "text": 'é \u2028 " \\ \n',
        "list": [1, 2.5, -3, "x"],
        "warnings": None,
    }
    assert JsonAnswer(content).body == JSONResponse(content).body
    keys = json.loads(JsonAnswer(content).body)["data"]["keys"]
    assert keys == {"1": 1796338184, "2": 1796338190}


def test_a_null_beside_deep_nesting_is_a_400(client: TestClient) -> None:
    """The reading of nulls parses within the same depth limit as pydantic's (a 500 once)."""
    vault = {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}
    deep = b'{"plaintext": null, "x": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    answer = client.post("/v1/transit/encrypt/deep", headers=vault, content=deep)
    assert answer.status_code == 400, answer.text


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_a_form_body_is_read_as_its_fields_strings(vault: TestClient) -> None:
    body = f"plaintext={PLAINTEXT.replace('=', '%3D')}&colour=red&colour=blue"
    answer = vault.post("/v1/transit/encrypt/orders", content=body, headers=FORM)
    assert answer.status_code == 200, answer.text
    assert answer.json()["warnings"] == ["Endpoint ignored these unrecognized parameters: [colour]"]
    ciphertext = answer.json()["data"]["ciphertext"]
    form = urlencode({"ciphertext": ciphertext})  # '+' would be a space
    opened = vault.post("/v1/transit/decrypt/orders", content=form, headers=FORM)
    assert opened.json()["data"]["plaintext"] == PLAINTEXT


@pytest.mark.parametrize(
    "body", ["plaintext=%ff%fe", "&".join(["a=1"] * 1025), f"plaintext={PLAINTEXT};context=AA"]
)
def test_a_form_that_does_not_decode_or_has_too_many_fields_is_400(
    vault: TestClient, body: str
) -> None:
    answer = vault.post("/v1/transit/encrypt/orders", content=body, headers=FORM)
    assert answer.status_code == 400, answer.text
    assert "error parsing form data" in answer.text


@pytest.mark.parametrize("count", ["1_0", "%204", "%D9%A3", "0x10", "1" * 19])
@pytest.mark.parametrize("prefix", ["/v1/transit/random", "/v1/sys/tools/random/platform"])
def test_a_count_in_the_path_is_ascii_digits(vault: TestClient, prefix: str, count: str) -> None:
    """As Go's strconv.Atoi reads it: not Python's `1_0`, spaces or other scripts' digits."""
    answer = vault.post(f"{prefix}/{count}", json={})
    assert answer.status_code == 400, answer.text
    assert "error parsing bytes from path" in answer.text
    assert vault.post(f"{prefix}/+16", json={}).status_code == 200
