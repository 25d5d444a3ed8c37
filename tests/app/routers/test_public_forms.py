"""`GET /v1/keys/{name}/public?format=raw|der|pem|jwk`: every form of every type that has a
public part names the same key, as pyca/cryptography reads it, and a form a type has none of
is a 409."""

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519
from fastapi.testclient import TestClient


def b64url_int(text: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def forms(client: TestClient, name: str) -> dict[str, object]:
    out = {}
    for form in ("raw", "der", "pem", "jwk"):
        response = client.get(f"/v1/keys/{name}/public", params={"format": form})
        assert response.status_code == 200, response.text
        assert response.json()["format"] == form
        out[form] = response.json()["public_key"]
    return out


@pytest.mark.parametrize(
    ("key_type", "crv"),
    [("ecies-secp256k1", "secp256k1"), ("ecdsa-secp256k1", "secp256k1")],
)
def test_secp256k1_forms(client: TestClient, key_type: str, crv: str) -> None:
    client.post("/v1/keys", json={"name": "k", "type": key_type})
    got = forms(client, "k")
    raw = base64.b64decode(str(got["raw"]))
    key = serialization.load_der_public_key(base64.b64decode(str(got["der"])))
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256k1"
    point = serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    assert key.public_bytes(*point) == raw
    assert serialization.load_pem_public_key(str(got["pem"]).encode()) == key
    jwk = got["jwk"]
    assert isinstance(jwk, dict) and jwk["kty"] == "EC" and jwk["crv"] == crv
    assert len(b64url(jwk["x"])) == len(b64url(jwk["y"])) == 32
    numbers = key.public_numbers()
    assert (b64url_int(jwk["x"]), b64url_int(jwk["y"])) == (numbers.x, numbers.y)
    default = client.get("/v1/keys/k/public").json()
    assert default["format"] == "raw" and default["public_key"] == got["raw"]


@pytest.mark.parametrize(
    ("key_type", "kind", "crv"),
    [
        ("ecies-x25519", x25519.X25519PublicKey, "X25519"),
        ("ecies-ed25519", ed25519.Ed25519PublicKey, "Ed25519"),
        ("ed25519", ed25519.Ed25519PublicKey, "Ed25519"),
        ("hpke-x25519", x25519.X25519PublicKey, "X25519"),
    ],
)
def test_okp_forms(client: TestClient, key_type: str, kind: type, crv: str) -> None:
    client.post("/v1/keys", json={"name": "k", "type": key_type})
    got = forms(client, "k")
    raw = base64.b64decode(str(got["raw"]))
    key = serialization.load_der_public_key(base64.b64decode(str(got["der"])))
    assert isinstance(key, kind) and key.public_bytes_raw() == raw  # type: ignore[attr-defined]
    assert serialization.load_pem_public_key(str(got["pem"]).encode()) == key
    # The JWK names its version; a signing key's says what it is for and signs with.
    signing = {"use": "sig", "alg": "EdDSA"} if key_type == "ed25519" else {}
    assert got["jwk"] == {
        "kty": "OKP",
        "crv": crv,
        "x": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "kid": "k:v1",
        **signing,
    }


def test_forms_a_type_has_none_of(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "fe", "type": "qfe-sgp", "dimension": 2})
    assert client.get("/v1/keys/fe/public").json()["format"] == "raw"
    for form in ("der", "pem", "jwk"):
        refused = client.get("/v1/keys/fe/public", params={"format": form})
        assert refused.status_code == 409
        assert refused.json()["type"] == "urn:cipherd:problem:no-public-format"
        assert "has raw" in refused.json()["detail"]
    unknown = client.get("/v1/keys/fe/public", params={"format": "x509"})
    assert unknown.status_code == 422
    client.post("/v1/keys", json={"name": "sym", "type": "aez"})
    none = client.get("/v1/keys/sym/public", params={"format": "der"})
    assert none.status_code == 409 and none.json()["type"] == "urn:cipherd:problem:no-public-part"


def test_the_hybrid_kem_has_its_raw_form_only(client: TestClient) -> None:
    """ML-KEM-768's encapsulation key followed by the X25519 public key, what pyca's
    MLKEM768X25519 pairs; no SubjectPublicKeyInfo or JWK is defined for the pair."""
    client.post("/v1/keys", json={"name": "pq", "type": "hpke-mlkem768-x25519"})
    raw = client.get("/v1/keys/pq/public").json()
    assert raw["format"] == "raw" and len(base64.b64decode(raw["public_key"])) == 1184 + 32
    for form in ("der", "pem", "jwk"):
        refused = client.get("/v1/keys/pq/public", params={"format": form})
        assert refused.status_code == 409, form
        assert refused.json()["type"] == "urn:cipherd:problem:no-public-format"
