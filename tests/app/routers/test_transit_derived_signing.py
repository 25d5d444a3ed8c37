"""Derived Ed25519 keys (Vault Transit's `derived` signing keys): every signature names a
context and is made with the key the context derives, through Transit's paths and the native
ones alike, and the key shows no public key of its own. The key is OpenBao's of
tests/vectors/transit/ed25519_derived.json, brought in, so the service's signatures are checked
against the ones OpenBao made."""

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.app.routers.encryption import b64, byok, unb64

OPENBAO = json.loads(
    (Path(__file__).parents[2] / "vectors" / "transit" / "ed25519_derived.json").read_text()
)
VECTORS = OPENBAO["vectors"]


@pytest.fixture
def derived(client: TestClient) -> str:
    brought = byok(client, "signer", "ed25519", bytes.fromhex(OPENBAO["seed"]), derived=True)
    assert brought.status_code == 201, brought.text
    assert brought.json()["derived"] is True
    return "signer"


def test_transit_signs_as_openbao_did_for_each_context(client: TestClient, derived: str) -> None:
    for vector in VECTORS:
        body = {
            "input": b64(bytes.fromhex(vector["message"])),
            "context": b64(bytes.fromhex(vector["context"])),
        }
        signed = client.post(f"/v1/transit/sign/{derived}", json=body).json()["data"]
        assert unb64(signed["signature"].split(":")[2]).hex() == vector["signature"]
        assert unb64(signed["public_key"]).hex() == vector["public_key"]
        verdict = client.post(
            f"/v1/transit/verify/{derived}", json={**body, "signature": signed["signature"]}
        )
        assert verdict.json()["data"]["valid"] is True
        elsewhere = {**body, "context": b64(b"another"), "signature": signed["signature"]}
        other = client.post(f"/v1/transit/verify/{derived}", json=elsewhere)
        assert other.json()["data"]["valid"] is False
        read = client.get(f"/v1/transit/keys/{derived}", params={"context": body["context"]})
        assert unb64(read.json()["data"]["keys"]["1"]["public_key"]).hex() == vector["public_key"]


def test_a_transit_batch_signs_each_item_under_its_own_context(
    client: TestClient, derived: str
) -> None:
    items = [
        {"input": b64(bytes.fromhex(v["message"])), "context": b64(bytes.fromhex(v["context"]))}
        for v in VECTORS
    ]
    answer = client.post(f"/v1/transit/sign/{derived}", json={"batch_input": items})
    results = answer.json()["data"]["batch_results"]
    assert [unb64(r["signature"].split(":")[2]).hex() for r in results] == [
        v["signature"] for v in VECTORS
    ]
    # Vault tags the public key `publickey` in a batch's entries, `public_key` alone.
    assert [unb64(r["publickey"]).hex() for r in results] == [v["public_key"] for v in VECTORS]
    missing = client.post(
        f"/v1/transit/sign/{derived}",
        json={"batch_input": [items[0], {"input": items[0]["input"]}]},
    ).json()["data"]["batch_results"]
    assert "signature" in missing[0] and "missing 'context'" in missing[1]["error"]


def test_without_a_context_a_derived_key_neither_signs_nor_shows_a_public_key(
    client: TestClient, derived: str
) -> None:
    unsigned = client.post(f"/v1/transit/sign/{derived}", json={"input": b64(b"x")})
    assert unsigned.status_code == 400
    assert unsigned.json()["errors"][0].startswith("missing 'context' for key derivation")
    key = client.get(f"/v1/transit/keys/{derived}").json()["data"]
    assert key["derived"] is True and key["supports_derivation"] is True
    assert key["keys"]["1"]["public_key"] == ""
    native = client.post(f"/v1/sign/{derived}", json={"message": b64(b"x")})
    assert native.status_code == 422 and "missing 'context'" in native.json()["detail"]
    for path in (f"/v1/keys/{derived}/public", f"/v1/keys/{derived}/jwks"):
        refused = client.get(path)
        assert refused.status_code == 409, path
        assert "derived: each context has its own public key" in refused.json()["detail"]
    jwt = client.post(f"/v1/jwt/{derived}/sign", json={"claims": {"sub": "a"}})
    assert jwt.status_code == 409


def test_the_native_api_signs_and_verifies_with_a_context(client: TestClient, derived: str) -> None:
    vector = VECTORS[0]
    body = {
        "message": b64(bytes.fromhex(vector["message"])),
        "context": b64(bytes.fromhex(vector["context"])),
    }
    signed = client.post(f"/v1/sign/{derived}", json=body)
    assert signed.status_code == 200, signed.text
    assert unb64(signed.json()["signature"]).hex() == vector["signature"]
    verify = {**body, "signature": signed.json()["signature"]}
    assert client.post(f"/v1/verify/{derived}", json=verify).json() == {"valid": True}
    verify["context"] = b64(b"another")
    assert client.post(f"/v1/verify/{derived}", json=verify).json() == {"valid": False}


def test_a_key_that_is_not_derived_takes_no_context_natively(client: TestClient) -> None:
    """Natively a context for such a key is a 422; Transit ignores it, as Vault does."""
    assert client.post("/v1/keys", json={"name": "plain", "type": "ed25519"}).status_code == 201
    body = {"message": b64(b"x"), "context": b64(b"c")}
    refused = client.post("/v1/sign/plain", json=body)
    assert refused.status_code == 422 and "not derived" in refused.json()["detail"]
    transit = client.post("/v1/transit/sign/plain", json={"input": b64(b"x"), "context": b64(b"c")})
    assert transit.status_code == 200 and "public_key" not in transit.json()["data"]


def test_a_backup_cannot_make_a_key_derived_that_its_type_does_not_allow(
    client: TestClient,
) -> None:
    """A Transit backup of a derived ECDSA key (which Transit never makes) is a 400."""
    assert (
        client.post(
            "/v1/transit/keys/ec",
            json={"type": "ecdsa-p256", "exportable": True, "allow_plaintext_backup": True},
        ).status_code
        == 200
    )
    backup = client.get("/v1/transit/backup/ec").json()["data"]["backup"]
    document = json.loads(unb64(backup))
    document["policy"].update(derived=True, kdf=1)
    forged = b64(json.dumps(document).encode())
    refused = client.post("/v1/transit/restore/ec-derived", json={"backup": forged})
    assert refused.status_code == 400
    assert "derived: only AEAD key types and ed25519" in refused.json()["errors"][0]
    assert client.get("/v1/transit/keys/ec-derived").status_code == 404


def test_a_context_read_derives_for_at_most_100_versions(client: TestClient, derived: str) -> None:
    """Each version's public key for a context costs an unwrap and a derivation: past 100
    versions from min_decryption_version the read is refused before any."""
    for _ in range(100):
        assert client.post(f"/v1/transit/keys/{derived}/rotate").status_code == 200
    context = {"context": b64(b"tenant")}
    refused = client.get(f"/v1/transit/keys/{derived}", params=context)
    assert refused.status_code == 400
    assert "at most 100 versions" in refused.json()["errors"][0]
    assert client.get(f"/v1/transit/keys/{derived}").status_code == 200  # no context: no work
    narrowed = client.post(f"/v1/transit/keys/{derived}/config", json={"min_decryption_version": 2})
    assert narrowed.status_code == 200, narrowed.text
    shown = client.get(f"/v1/transit/keys/{derived}", params=context).json()["data"]["keys"]
    assert len(shown) == 100 and all(version["public_key"] for version in shown.values())


def test_a_derived_aead_key_still_has_no_public_part(client: TestClient) -> None:
    made = client.post("/v1/keys", json={"name": "sealed", "type": "aes256-gcm", "derived": True})
    assert made.status_code == 201
    refused = client.get("/v1/keys/sealed/public")
    assert refused.status_code == 409 and "has no public part" in refused.json()["detail"]
