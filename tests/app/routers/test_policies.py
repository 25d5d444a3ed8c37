"""Key policies through PATCH /v1/keys/{name}: minimum versions, trim, automatic rotation,
exportable and deletion protection, on SQLite and PostgreSQL."""

import base64
import itertools
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from core import keywrap
from tests.conftest import ADMIN_TOKEN, STORES


@pytest.fixture(params=STORES)
def admin(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        database_url=url,
        maintenance_seconds=0.2,
        min_auto_rotate_seconds=1,  # rotations seen within the test
    )
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        yield client


def _patch(client: TestClient, name: str, expect: int = 200, **body: Any) -> dict[str, Any]:
    answer = client.patch(f"/v1/keys/{name}", json=body)
    assert answer.status_code == expect, answer.text
    return answer.json()


def test_min_decryption_version_and_trim(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "k", "type": "aez"})
    sealed = admin.post("/v1/aez/k/encrypt", json={"plaintext": "aGk="}).json()
    for _ in range(3):
        admin.post("/v1/keys/k/rotate")
    old = {"ciphertext": sealed["ciphertext"], "key_version": 1}
    assert admin.post("/v1/aez/k/decrypt", json=old).json()["plaintext"] == "aGk="
    key = _patch(admin, "k", min_decryption_version=3)
    assert key["min_decryption_version"] == 3
    refused = admin.post("/v1/aez/k/decrypt", json=old)
    assert refused.status_code == 400
    assert refused.json()["type"] == "urn:cipherd:problem:version-too-old"
    batch = admin.post("/v1/aez/k/decrypt/batch", json={"items": [old]}).json()
    assert batch["results"][0]["error"]["type"] == "urn:cipherd:problem:version-too-old"
    _patch(admin, "k", min_decryption_version=1)  # nothing destroyed yet: it can go back
    assert admin.post("/v1/aez/k/decrypt", json=old).status_code == 200
    _patch(admin, "k", min_decryption_version=3)
    trimmed = admin.post("/v1/keys/k/trim")
    assert trimmed.status_code == 200
    assert [v["version"] for v in trimmed.json()["versions"]] == [3, 4]
    assert admin.post("/v1/aez/k/decrypt", json=old).status_code == 404
    _patch(admin, "k", 422, min_decryption_version=2)  # below the oldest stored version
    _patch(admin, "k", 422, min_decryption_version=5)  # above the latest
    records = admin.get("/v1/audit", params={"operation": "keys_trim_key"}).json()["records"]
    assert records[0]["details"]["destroyed_versions"] == [1, 2]


def test_min_encryption_version_exportable_and_protection(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "k", "type": "ecies-secp256k1"})
    admin.post("/v1/keys/k/rotate")
    _patch(admin, "k", 422, min_encryption_version=3)
    _patch(admin, "k", min_decryption_version=2)
    _patch(admin, "k", 422, min_encryption_version=1)  # below min_decryption_version
    assert _patch(admin, "k", min_encryption_version=2)["min_encryption_version"] == 2
    _patch(admin, "k", 422, min_decryption_version=1, min_encryption_version=3)
    assert admin.get("/v1/keys/k/export").status_code == 403
    assert _patch(admin, "k", exportable=True)["exportable"] is True
    assert admin.get("/v1/keys/k/export").status_code == 200
    _patch(admin, "k", 422, exportable=False)
    assert _patch(admin, "k", deletion_protection=True)["deletion_protection"] is True
    assert admin.delete("/v1/keys/k").status_code == 409
    _patch(admin, "k", deletion_protection=False)
    assert admin.delete("/v1/keys/k").status_code == 202
    _patch(admin, "k", 409, deletion_protection=True)  # pending deletion: no changes
    _patch(admin, "missing", 404, deletion_protection=True)
    _patch(admin, "k", 422, nothing=1)
    _patch(admin, "k", 422, fe_policy={"max_rank": 1})


@pytest.mark.parametrize("family", ["ecies", "aez"])
def test_encryption_under_a_named_version_keeps_to_min_encryption_version(
    admin: TestClient, family: str
) -> None:
    """Encryption takes a `key_version` (JSON, raw query, batch items), as Transit's does, and
    refuses one below the key's min_encryption_version."""
    key_type = "ecies-secp256k1" if family == "ecies" else "aez"
    admin.post("/v1/keys", json={"name": "k", "type": key_type})
    for _ in range(3):
        admin.post("/v1/keys/k/rotate")
    plaintext = "aGk="  # b"hi"
    sealed = admin.post(f"/v1/{family}/k/encrypt", json={"plaintext": plaintext, "key_version": 2})
    assert sealed.status_code == 200, sealed.text
    assert sealed.json()["key_version"] == 2
    opened = admin.post(f"/v1/{family}/k/decrypt", json={"ciphertext": sealed.json()["ciphertext"]})
    assert (opened.json()["plaintext"], opened.json()["key_version"]) == (plaintext, 2)
    assert (
        admin.post(f"/v1/{family}/k/encrypt", json={"plaintext": plaintext}).json()["key_version"]
        == 4
    )
    _patch(admin, "k", min_encryption_version=3)
    refused = admin.post(f"/v1/{family}/k/encrypt", json={"plaintext": plaintext, "key_version": 2})
    assert refused.status_code == 400, refused.text
    assert refused.json()["type"] == "urn:cipherd:problem:version-too-old"
    assert "min_encryption_version (3)" in refused.json()["detail"]
    raw = admin.post(
        f"/v1/{family}/k/encrypt",
        params={"key_version": 2},
        content=b"hi",
        headers={"Content-Type": "application/octet-stream"},
    )
    assert raw.status_code == 400, raw.text
    raw = admin.post(
        f"/v1/{family}/k/encrypt",
        params={"key_version": 3},
        content=b"hi",
        headers={"Content-Type": "application/octet-stream"},
    )
    assert raw.status_code == 200, raw.text
    items = [{"plaintext": plaintext, "key_version": v} for v in (2, 3, None, 9)]
    results = admin.post(f"/v1/{family}/k/encrypt/batch", json={"items": items}).json()["results"]
    assert [r.get("key_version") for r in results] == [None, 3, 4, None]
    assert results[0]["error"]["type"] == "urn:cipherd:problem:version-too-old"
    assert results[3]["error"]["status"] == 404


def test_patch_needs_the_admin(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "k", "type": "aez"})
    token = admin.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]}).json()
    answer = admin.patch(
        "/v1/keys/k",
        json={"exportable": True},
        headers={"Authorization": f"Bearer {token['token']}"},
    )
    assert answer.status_code == 403
    assert admin.get("/v1/keys/k").json()["exportable"] is False


def test_fe_policy_is_changed_with_patch(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "f", "type": "ipfe-opt", "dimension": 3})
    assert _patch(admin, "f", fe_policy={"max_rank": 1})["fe_policy"]["max_rank"] == 1
    assert admin.post("/v1/fe/f/keygen", json={"y": [1, 0, 0]}).status_code == 200
    assert admin.post("/v1/fe/f/keygen", json={"y": [0, 1, 0]}).status_code == 403


def test_a_patch_refused_in_part_changes_nothing(admin: TestClient) -> None:
    """The policy columns and the FE policy change in one transaction: an FE policy of the
    wrong shape leaves the deletion protection asked for beside it unset too."""
    admin.post("/v1/keys", json={"name": "f", "type": "ipfe-opt", "dimension": 3})
    wrong = {"allowed_functions": [[1, 2]]}
    _patch(admin, "f", 422, deletion_protection=True, fe_policy=wrong)
    key = admin.get("/v1/keys/f").json()
    assert key["deletion_protection"] is False and key.get("fe_policy") is None


def test_automatic_rotation(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "k", "type": "aez"})
    assert _patch(admin, "k", auto_rotate_seconds=1)["auto_rotate_seconds"] == 1
    deadline = time.monotonic() + 15
    while admin.get("/v1/keys/k").json()["latest_version"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    versions = admin.get("/v1/keys/k").json()["versions"]
    made = [datetime.fromisoformat(v["created_at"]).timestamp() for v in versions]
    assert all(b - a >= 0.99 for a, b in itertools.pairwise(made))
    records = admin.get("/v1/audit", params={"principal": "system"}).json()["records"]
    assert {(r["operation"], r["details"].get("automatic")) for r in records} == {
        ("keys_rotate_key", True)
    }
    _patch(admin, "k", auto_rotate_seconds=0)
    latest = admin.get("/v1/keys/k").json()["latest_version"]
    time.sleep(1.5)
    assert admin.get("/v1/keys/k").json()["latest_version"] == latest


def test_automatic_rotation_is_no_more_often_than_hourly(client: TestClient) -> None:
    """Each rotation adds a version the key keeps: a period under an hour (the default of
    CIPHERD_MIN_AUTO_ROTATE_SECONDS) would grow it without bound."""
    client.post("/v1/keys", json={"name": "k", "type": "aez"})
    refused = client.patch("/v1/keys/k", json={"auto_rotate_seconds": 1})
    assert refused.status_code == 422, refused.text
    assert "at least 3600" in refused.json()["detail"]
    for period in (3600, 0):
        assert client.patch("/v1/keys/k", json={"auto_rotate_seconds": period}).status_code == 200


def test_a_key_imported_without_allow_rotation_is_never_rotated(admin: TestClient) -> None:
    """Its automatic rotation is skipped, as Vault skips it, while the others' go on; a rotation
    asked for is a 409."""
    vault = {"X-Vault-Token": ADMIN_TOKEN}
    pem = admin.get("/v1/transit/wrapping_key", headers=vault).json()["data"]["public_key"]
    public = serialization.load_pem_public_key(pem.encode())
    assert isinstance(public, rsa.RSAPublicKey) and public.key_size == 4096
    wrapped = base64.b64encode(keywrap.wrap(public, os.urandom(32))).decode()
    made = admin.post("/v1/transit/keys/held/import", headers=vault, json={"ciphertext": wrapped})
    assert made.status_code == 204, made.text
    admin.post("/v1/keys", json={"name": "turning", "type": "aes256-gcm"})
    for name in ("held", "turning"):
        _patch(admin, name, auto_rotate_seconds=1)
    deadline = time.monotonic() + 15
    while admin.get("/v1/keys/turning").json()["latest_version"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert admin.get("/v1/keys/held").json()["latest_version"] == 1
    refused = admin.post("/v1/keys/held/rotate")
    assert refused.status_code == 409 and refused.json()["type"].endswith("rotation-refused")
