"""The key-management routes take a scoped token with their operation on the key's name
(`create`, `configure`, `rotate`, `delete`); a token with every operation may do to keys all
the admin may (export and back up too); `enabled: false` refuses every use of a key."""

import base64
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.ops.grants import Operation


def token(client: TestClient, keys: list[str], operations: list[str]) -> dict[str, str]:
    created = client.post("/v1/tokens", json={"keys": keys, "operations": operations})
    assert created.status_code == 201, created.text
    return {"Authorization": f"Bearer {created.json()['token']}"}


# Each route, the operation it needs, and the call (after `app-k` exists).
ROUTES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("create", "POST", "/v1/keys", {"json": {"name": "app-new", "type": "aez"}}),
    ("configure", "PATCH", "/v1/keys/app-k", {"json": {"auto_rotate_seconds": 3600}}),
    ("rotate", "POST", "/v1/keys/app-k/rotate", {}),
    ("delete", "DELETE", "/v1/keys/app-k", {"params": {"window_seconds": 86400}}),
]


@pytest.mark.parametrize(("operation", "method", "path", "extra"), ROUTES)
def test_scoped_management(
    client: TestClient, operation: str, method: str, path: str, extra: dict[str, Any]
) -> None:
    assert client.post("/v1/keys", json={"name": "app-k", "type": "aez"}).status_code == 201
    assert client.post("/v1/keys", json={"name": "other", "type": "aez"}).status_code == 201
    others = [op.value for op in Operation if op.value != operation]
    refused = client.request(method, path, headers=token(client, ["app-*"], others), **extra)
    assert refused.status_code == 403, refused.text
    elsewhere = token(client, ["other"], [operation])
    assert client.request(method, path, headers=elsewhere, **extra).status_code == 403
    allowed = client.request(method, path, headers=token(client, ["app-*"], [operation]), **extra)
    assert allowed.is_success, allowed.text
    if operation == "delete":
        restore = client.post(
            "/v1/keys/app-k/restore", headers=token(client, ["app-*"], ["delete"])
        )
        assert restore.status_code == 200


def test_every_operation_is_all_the_admin_may_do_to_keys(client: TestClient) -> None:
    every = token(client, ["*"], [op.value for op in Operation])
    almost = token(client, ["*"], [op.value for op in Operation if op != Operation.HMAC])
    made = client.post(
        "/v1/keys", headers=every, json={"name": "x", "type": "aez", "exportable": True}
    )
    assert made.status_code == 201
    assert client.get("/v1/keys/x/export", headers=almost).status_code == 403
    exported = client.get("/v1/keys/x/export", headers=every)
    assert len(base64.b64decode(exported.json()["secret"])) == 48
    assert client.post("/v1/keys/x/trim", headers=every).status_code == 200


def test_disabled_key_refuses_use(client: TestClient) -> None:
    assert client.post("/v1/keys", json={"name": "d", "type": "aes256-gcm"}).status_code == 201
    sealed = client.post("/v1/aead/d/encrypt", json={"plaintext": "aGk="}).json()["ciphertext"]
    patched = client.patch("/v1/keys/d", json={"enabled": False})
    assert patched.json()["enabled"] is False
    for path, body in (("encrypt", {"plaintext": "aGk="}), ("decrypt", {"ciphertext": sealed})):
        refused = client.post(f"/v1/aead/d/{path}", json=body)
        assert refused.status_code == 409
        assert refused.json()["type"] == "urn:cipherd:problem:key-disabled"
    assert client.patch("/v1/keys/d", json={"enabled": True}).json()["enabled"] is True
    assert client.post("/v1/aead/d/decrypt", json={"ciphertext": sealed}).json()["plaintext"] == (
        "aGk="
    )


def test_a_disabled_signing_key_publishes_no_public_part(client: TestClient) -> None:
    """A disabled key's public part and key set are refused as its other uses are (KMS's
    GetPublicKey gives DisabledException): verifiers that fetch them stop trusting the key
    until it is enabled again. They were served."""
    assert client.post("/v1/keys", json={"name": "ds", "type": "ecdsa-p256"}).status_code == 201
    reads = ("/v1/keys/ds/public", "/v1/keys/ds/public?format=jwk", "/v1/keys/ds/jwks")
    served = {path: client.get(path).json() for path in reads}
    assert client.patch("/v1/keys/ds", json={"enabled": False}).json()["enabled"] is False
    for path in reads:
        refused = client.get(path)
        assert refused.status_code == 409, path
        assert refused.json()["type"] == "urn:cipherd:problem:key-disabled"
    assert client.get("/v1/keys/ds").status_code == 200  # its description is not a use
    assert client.patch("/v1/keys/ds", json={"enabled": True}).json()["enabled"] is True
    assert {path: client.get(path).json() for path in reads} == served
