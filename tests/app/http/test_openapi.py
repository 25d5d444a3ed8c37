"""openapi.yaml is the app's document, and every operation in it is named and documented."""

from pathlib import Path

import yaml
from fastapi import FastAPI

from app.cli import openapi_yaml

DOCUMENT = Path(__file__).parents[3] / "openapi.yaml"


def test_openapi_yaml_is_current(app: FastAPI) -> None:
    assert DOCUMENT.read_text() == openapi_yaml(app.openapi()), (
        "openapi.yaml is stale: regenerate it with `make openapi`"
    )


def test_every_operation_has_an_id_summary_and_bearer_auth(app: FastAPI) -> None:
    document = yaml.safe_load(openapi_yaml(app.openapi()))
    ids = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            ids.append(operation["operationId"])
            assert operation.get("summary"), (method, path)
            if path not in ("/healthz", "/readyz", "/metrics"):
                assert operation.get("security") == [{"HTTPBearer": []}], (method, path)
    assert len(ids) == len(set(ids))


def test_raw_forms_are_operations_of_their_own(app: FastAPI) -> None:
    """A generator gives an operation one body type: the raw form has its own path, bytes in
    and out, and the JSON form's path declares JSON only (it still takes raw bytes)."""
    document = app.openapi()
    paths = document["paths"]
    raw = [path for path in paths if path.endswith("/raw")]
    assert len(raw) == 4, raw
    for path in raw:
        operation = paths[path]["post"]
        assert set(operation["requestBody"]["content"]) == {"application/octet-stream"}
        assert set(operation["responses"]["200"]["content"]) == {"application/octet-stream"}
        json_form = paths[path.removesuffix("/raw")]["post"]
        body = json_form["requestBody"]["content"]
        assert set(body) == {"application/json"}
        reference = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert reference in document["components"]["schemas"]
        assert set(json_form["responses"]["200"]["content"]) == {"application/json"}
    assert document["servers"] == [
        {"url": "http://127.0.0.1:8000", "description": "`cipherd serve` by default"}
    ]


def test_request_fields_carry_no_default(app: FastAPI) -> None:
    """openapi-typescript would make each of them required: the description says it."""
    tau = app.openapi()["components"]["schemas"]["AezEncryptRequest"]["properties"]["tau"]
    assert "default" not in tau and tau["description"].endswith("default: 16")


def test_links_feed_one_answer_into_the_next(app: FastAPI) -> None:
    """Derived from the routes: the names, ciphertexts, functional keys and token ids that
    stateful clients and fuzzers carry from one call to the next."""
    paths = app.openapi()["paths"]

    def links(path: str, method: str, status: str) -> dict:
        return paths[path][method]["responses"][status]["links"]

    created = links("/v1/keys", "post", "201")
    for path, operations in paths.items():
        for operation in operations.values():
            if "{name}" in path:
                assert created[operation["operationId"]]["parameters"] == {
                    "name": "$response.body#/name"
                }
    sealed = links("/v1/ecies/{name}/encrypt", "post", "200")["ecies_decrypt"]
    assert sealed["requestBody"] == "$response.body"
    assert sealed["parameters"] == {"name": "$request.path.name"}
    raw = links("/v1/aez/{name}/encrypt/raw", "post", "200")["aez_decrypt_raw"]
    assert raw["parameters"]["nonce"] == "$request.query.nonce"
    assert set(links("/v1/fe/{name}/keygen", "post", "200")) == {"fe_decrypt", "fe_decrypt_many"}
    assert "fe_decrypt" in links("/v1/fe/{name}/encrypt", "post", "200")
    revoked = links("/v1/tokens", "post", "201")["tokens_delete_token"]
    assert revoked["parameters"] == {"token_id": "$response.body#/id"}
    assert "keys_restore_key" in links("/v1/keys/{name}", "delete", "202")
