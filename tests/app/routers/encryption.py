"""What the tests of the encryption families (AEAD, HPKE, RSA-OAEP) share: keys created
exportable or brought in as a client would (ECIES-encrypted to the wrapping key, eciespy's
default form), and the one 400 of a payload that does not open."""

import base64
from typing import Any

import httpx
from fastapi.testclient import TestClient

from core import ecies


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def byok(
    client: TestClient, name: str, key_type: str, secret: bytes, **options: Any
) -> httpx.Response:
    """Import `secret` as key `name` of `key_type` (a new key, or its next version)."""
    wrapping = unb64(client.get("/v1/sys/wrapping-key").json()["public_key"])
    body = {
        "name": name,
        "type": key_type,
        "wrapped_material": b64(ecies.encrypt(wrapping, secret)),
        **options,
    }
    return client.post("/v1/keys/import", json=body)


def create(client: TestClient, name: str, key_type: str, **options: Any) -> bytes:
    """An exportable key; its secret, to check the service's bytes against a peer's."""
    body = {"name": name, "type": key_type, "exportable": True, **options}
    assert client.post("/v1/keys", json=body).status_code == 201
    return unb64(client.get(f"/v1/keys/{name}/export").json()["secret"])


def failure(name: str, version: int = 1) -> dict[str, Any]:
    """The problem of a payload that does not open under `version` of key `name`."""
    hint = "; a payload made under an earlier version needs that key_version" if version > 1 else ""
    return {
        "type": "urn:cipherd:problem:decryption-failed",
        "title": "Decryption failed",
        "status": 400,
        "detail": f"decryption failed with version {version} of key {name!r}{hint}",
    }
