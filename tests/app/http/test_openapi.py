"""openapi.yaml is the app's document, served too, and every operation in it is named and
documented."""

from pathlib import Path
from typing import Any

import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.http.docs import openapi_yaml

DOCUMENT = Path(__file__).parents[3] / "openapi.yaml"
# Vault's paths take its token header or the bearer one; its health paths no token.
# Vault's paths; the auth methods' are tagged auth-<family>.
VAULT_TAGS = (
    "transit",
    "sys-mounts",
    "sys-wrapping",
    "sys-auth",
    "sys-policies",
    "sys-leases",
    "sys-tools",
    "sys-admin-token",
)
VAULT_HEALTH = ("/v1/sys/health", "/v1/sys/seal-status", "/v1/sys/leader", "/v1/sys/init")


def load(text: str) -> Any:
    """A YAML document as `yaml.safe_load` reads it, parsed by libyaml: the 800 kB document
    takes the pure-Python parser seconds, and libyaml a tenth of that."""
    return yaml.load(text, Loader=yaml.CSafeLoader)


def test_openapi_yaml_is_current(app: FastAPI) -> None:
    assert DOCUMENT.read_text() == openapi_yaml(app.openapi()), (
        "openapi.yaml is stale: regenerate it with `make openapi`"
    )


def test_every_operation_has_an_id_summary_and_bearer_auth(app: FastAPI) -> None:
    document = load(openapi_yaml(app.openapi()))
    ids = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            ids.append(operation["operationId"])
            assert operation.get("summary"), (method, path)
            if path in VAULT_HEALTH:
                assert not operation.get("security"), (method, path)
            elif operation["tags"][0] == "kms":
                assert operation.get("security") == [{"AwsSigV4": []}]
            elif operation["tags"][0] in VAULT_TAGS or operation["tags"][0].startswith("auth-"):
                assert operation.get("security") == [{"VaultToken": []}, {"HTTPBearer": []}]
            elif path not in ("/healthz", "/readyz", "/metrics"):
                assert operation.get("security") == [{"HTTPBearer": []}], (method, path)
    assert len(ids) == len(set(ids))


def test_raw_forms_are_operations_of_their_own(app: FastAPI) -> None:
    """A generator gives an operation one body type: the raw form has its own path, bytes in
    and out, and the JSON form's path declares JSON only (it still takes raw bytes)."""
    document = app.openapi()
    paths = document["paths"]
    raw = [path for path in paths if path.endswith("/raw")]
    families = {"ecies", "aez", "aead", "hpke", "rsa"}
    assert {
        f"/v1/{f}/{{name}}/{verb}/raw" for f in families for verb in ("encrypt", "decrypt")
    } <= set(raw)
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
            if "{name}" in path and operation["tags"][0] not in VAULT_TAGS:
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


def test_the_served_document_names_the_address_it_was_asked_at(client: TestClient) -> None:
    """/openapi.json and /openapi.yaml: the document, with the address the request came to as
    its server (so that /docs' "Try it out" calls this service on its own port), the rest as
    `cipherd openapi` prints it."""
    fixed = load(DOCUMENT.read_text())
    for address in ("http://127.0.0.1:8417", "https://kms.example:9443"):
        served = client.get(f"{address}/openapi.json")
        assert served.status_code == 200
        assert served.json()["servers"] == [{"url": address, "description": "this service"}]
        as_yaml = client.get(f"{address}/openapi.yaml")
        assert as_yaml.headers["content-type"] == "application/yaml"
        assert load(as_yaml.text) == served.json()
        assert {**served.json(), "servers": fixed["servers"]} == fixed
