"""Signatures through the service: ecdsa-secp256k1 and ed25519 keys, their lifecycle, the
peers that verify what the service signs (coincurve, eth-keys, PyNaCl, OpenSSL) and the other
way round, every Wycheproof case through `POST /v1/verify`, scopes, and bad input as 4xx."""

import base64
import sqlite3

import coincurve
import eth_keys
import nacl.signing
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.settings import Settings
from core.sign.ecdsa import keccak256
from tests.core.sign.small_order import FORGERIES
from tests.core.sign.wycheproof import ECDSA_DER, ECDSA_P1363, ED25519


@pytest.fixture
def admin(admin_on_both_stores: TestClient) -> TestClient:
    return admin_on_both_stores


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def create(client: TestClient, name: str, key_type: str) -> bytes:
    assert client.post("/v1/keys", json={"name": name, "type": key_type}).status_code == 201
    return unb64(client.get(f"/v1/keys/{name}/public").json()["public_key"])


def sign(client: TestClient, name: str, message: bytes, **options: object) -> dict:
    response = client.post(f"/v1/sign/{name}", json={"message": b64(message), **options})
    assert response.status_code == 200, response.text
    return response.json()


def verify(client: TestClient, name: str, message: bytes, signature: bytes, **options: object):
    body = {"message": b64(message), "signature": b64(signature), **options}
    return client.post(f"/v1/verify/{name}", json=body)


def test_ecdsa_signatures_verify_with_the_peers(client: TestClient) -> None:
    public = create(client, "eth", "ecdsa-secp256k1")
    assert len(public) == 65
    peer_key = coincurve.PublicKey(public)
    message = b"transfer 1 ether"
    der = unb64(sign(client, "eth", message)["signature"])
    assert peer_key.verify(der, message)
    ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256K1(), public).verify(
        der, message, ec.ECDSA(hashes.SHA256())
    )
    signed = sign(client, "eth", message, hash="keccak256", format="recoverable")
    assert signed["key_version"] == 1
    recoverable = unb64(signed["signature"])
    address = eth_keys.keys.PublicKey(public[1:]).to_checksum_address()
    recovered = eth_keys.keys.Signature(recoverable).recover_public_key_from_msg_hash(
        keccak256(message)
    )
    assert recovered.to_checksum_address() == address
    digest = keccak256(message)
    prehashed = sign(client, "eth", digest, prehashed=True, format="recoverable")
    assert unb64(prehashed["signature"]) == recoverable
    compact = unb64(sign(client, "eth", message, format="compact")["signature"])
    assert len(compact) == 64
    for signature, options in (
        (der, {}),
        (compact, {"format": "compact"}),
        (recoverable, {"format": "recoverable", "hash": "keccak256"}),
        (recoverable, {"format": "recoverable", "prehashed": True}),
    ):
        checked = digest if options.get("prehashed") else message
        altered = bytes([checked[0] ^ 1]) + checked[1:]
        assert verify(client, "eth", checked, signature, **options).json() == {"valid": True}
        assert verify(client, "eth", altered, signature, **options).json() == {"valid": False}


def test_peer_signatures_verify_in_the_service(client: TestClient) -> None:
    create(client, "e", "ecdsa-secp256k1")
    client.post("/v1/keys", json={"name": "x", "type": "ecdsa-secp256k1", "exportable": True})
    secret = unb64(client.get("/v1/keys/x/export").json()["secret"])
    peer = coincurve.PrivateKey(secret)
    assert verify(client, "x", b"m", peer.sign(b"m")).json() == {"valid": True}
    assert verify(client, "e", b"m", peer.sign(b"m")).json() == {"valid": False}
    eth = eth_keys.keys.PrivateKey(secret)
    signature = eth.sign_msg_hash(keccak256(b"m")).to_bytes()
    options = {"hash": "keccak256", "format": "recoverable"}
    assert verify(client, "x", b"m", signature, **options).json() == {"valid": True}
    openssl = ec.derive_private_key(int.from_bytes(secret), ec.SECP256K1())
    for _ in range(4):  # random nonces: high S about half the time
        der = openssl.sign(b"m", ec.ECDSA(hashes.SHA256()))
        assert verify(client, "x", b"m", der).json() == {"valid": True}


def test_ed25519_with_pynacl(client: TestClient) -> None:
    public = create(client, "ed", "ed25519")
    assert len(public) == 32
    signature = unb64(sign(client, "ed", b"hello")["signature"])
    nacl.signing.VerifyKey(public).verify(b"hello", signature)
    peer = nacl.signing.SigningKey.generate()
    given = {
        "type": "ed25519",
        "public_key": b64(bytes(peer.verify_key)),
        "message": b64(b"hi"),
        "signature": b64(peer.sign(b"hi").signature),
    }
    assert client.post("/v1/verify", json=given).json() == {"valid": True}
    assert verify(client, "ed", b"hello", signature).json() == {"valid": True}
    assert verify(client, "ed", b"hello", signature[:63]).json() == {"valid": False}
    # A message over 64 KiB is signed and checked off the event loop, with the same result.
    large = bytes(range(256)) * 400
    signature = unb64(sign(client, "ed", large)["signature"])
    nacl.signing.VerifyKey(public).verify(large, signature)
    assert verify(client, "ed", large, signature).json() == {"valid": True}
    refused = client.post("/v1/sign/ed", json={"message": b64(b"m"), "hash": "sha256"})
    assert refused.status_code == 422 and "ed25519" in refused.json()["detail"]


def test_signatures_follow_rotation_and_the_envelope(admin: TestClient) -> None:
    create(admin, "r", "ed25519")
    old = sign(admin, "r", b"m", envelope=True)
    assert unb64(old["signature"]).startswith(b"cipherd:v1:")
    bare_old = sign(admin, "r", b"m")
    assert admin.post("/v1/keys/r/rotate").json()["latest_version"] == 2
    new = sign(admin, "r", b"m")
    assert new["key_version"] == 2 and new["signature"] != bare_old["signature"]
    old_signature = unb64(old["signature"])
    assert verify(admin, "r", b"m", old_signature).json() == {"valid": True}
    assert verify(admin, "r", b"m", unb64(bare_old["signature"])).json() == {"valid": True}
    assert verify(admin, "r", b"m", unb64(bare_old["signature"]), key_version=1).json() == {
        "valid": True
    }
    assert verify(admin, "r", b"m", unb64(bare_old["signature"]), key_version=2).json() == {
        "valid": False
    }
    clash = verify(admin, "r", b"m", old_signature, key_version=2)
    assert clash.status_code == 422
    public_v1 = admin.get("/v1/keys/r/public", params={"version": 1}).json()
    assert public_v1["version"] == 1
    assert admin.patch("/v1/keys/r", json={"min_decryption_version": 2}).status_code == 200
    assert verify(admin, "r", b"m", unb64(bare_old["signature"])).json() == {"valid": False}
    assert verify(admin, "r", b"m", old_signature).status_code == 400


def test_batches(client: TestClient) -> None:
    create(client, "b", "ecdsa-secp256k1")
    client.post("/v1/keys", json={"name": "h", "type": "hmac"})
    items = [{"message": b64(b"a")}, {"message": b64(b"b"), "format": "compact"}]
    items.append({"message": b64(b"short"), "prehashed": True})
    results = client.post("/v1/sign/b/batch", json={"items": items}).json()["results"]
    assert results[2]["error"]["status"] == 422 and "32-byte" in results[2]["error"]["detail"]
    checks = [
        {"message": b64(b"a"), "signature": results[0]["signature"]},
        {"message": b64(b"b"), "signature": results[1]["signature"], "format": "compact"},
        {"message": b64(b"c"), "signature": results[0]["signature"]},
    ]
    verdicts = client.post("/v1/verify/b/batch", json={"items": checks}).json()["results"]
    assert verdicts == [{"valid": True}, {"valid": True}, {"valid": False}]
    assert client.post("/v1/sign/h/batch", json={"items": items[:1]}).status_code == 409


def test_every_wycheproof_case_through_the_service(client: TestClient) -> None:
    cases = [("der", c) for c in ECDSA_DER] + [("compact", c) for c in ECDSA_P1363]
    matched = 0
    for form, case in cases:
        body = {
            "type": "ecdsa-secp256k1",
            "public_key": b64(case.public_key),
            "message": b64(case.message),
            "signature": b64(case.signature),
            "format": form,
        }
        response = client.post("/v1/verify", json=body)
        assert response.json() == {"valid": case.valid}, case.id
        matched += 1
    for case in ED25519:
        body = {
            "type": "ed25519",
            "public_key": b64(case.public_key),
            "message": b64(case.message),
            "signature": b64(case.signature),
        }
        assert client.post("/v1/verify", json=body).json() == {"valid": case.valid}, case.id
        matched += 1
    assert matched == 879


def test_small_order_forgeries_are_not_valid(client: TestClient) -> None:
    """A and R of small order with S = 0 (the identity's verifies every message without the
    checks), in every encoding: against a key in the request, and as a stored key's signature."""
    for forgery in FORGERIES:
        body = {
            "type": "ed25519",
            "public_key": b64(forgery.public_key),
            "message": b64(b"pay mallory"),
            "signature": b64(forgery.signature),
        }
        assert client.post("/v1/verify", json=body).json() == {"valid": False}, forgery.id
    create(client, "small", "ed25519")
    for forgery in FORGERIES[:14]:  # A the identity: R each of the 14 encodings
        response = verify(client, "small", b"pay mallory", forgery.signature)
        assert response.json() == {"valid": False}, forgery.id


@pytest.mark.parametrize(
    "body",
    [
        {"type": "ecdsa-secp256k1", "public_key": "AA==", "message": "AA==", "signature": "AA=="},
        {"type": "ed25519", "public_key": b64(bytes(31)), "message": "", "signature": "AA=="},
        {"type": "ed25519", "public_key": b64(bytes(32)), "message": "", "signature": ""},
    ],
)
def test_malformed_keys_and_signatures_are_not_valid(client: TestClient, body: dict) -> None:
    response = client.post("/v1/verify", json=body)
    assert response.status_code == 200 and response.json() == {"valid": False}


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/sign/s", {"message": "not base64!"}),
        ("/v1/sign/s", {"message": "AA==", "hash": "md5"}),
        ("/v1/sign/s", {"message": "AA==", "format": "pem"}),
        ("/v1/sign/s", {"message": "AA==", "prehashed": True}),
        ("/v1/sign/s", {"message": "AA==", "prehashed": "yes"}),
        ("/v1/sign/s", {"message": "AA==", "colour": "blue"}),
        ("/v1/verify/s", {"message": "AA==", "signature": "%%"}),
        ("/v1/verify/s", {"message": "AA==", "signature": "AA==", "key_version": 0}),
        ("/v1/verify/s", {"message": "AA==", "signature": "AA==", "prehashed": True}),
        ("/v1/verify", {"type": "rsa", "public_key": "", "message": "", "signature": ""}),
        ("/v1/verify", {"type": "ed25519", "message": "", "signature": ""}),
        (
            "/v1/verify",
            {
                "type": "ecdsa-secp256k1",
                "public_key": "",
                "message": "AA==",
                "signature": "",
                "prehashed": True,
            },
        ),
        (
            "/v1/verify",
            {"type": "ed25519", "public_key": "", "message": "", "signature": "", "hash": "sha256"},
        ),
    ],
)
def test_malformed_requests_are_422(client: TestClient, path: str, body: dict) -> None:
    create(client, "s", "ecdsa-secp256k1")
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text


def test_wrong_key_types_and_missing_keys(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "a", "type": "aez"})
    assert client.post("/v1/sign/a", json={"message": "AA=="}).status_code == 409
    assert verify(client, "a", b"", b"").status_code == 409
    assert client.post("/v1/sign/nothing", json={"message": "AA=="}).status_code == 404
    create(client, "s", "ecdsa-secp256k1")
    assert client.post("/v1/ecies/s/encrypt", json={"plaintext": "AA=="}).status_code == 409


def test_scopes(client: TestClient, app: FastAPI) -> None:
    create(client, "s", "ed25519")
    signature = sign(client, "s", b"m")["signature"]
    check = {"message": b64(b"m"), "signature": signature}
    public = {"type": "ed25519", "message": b64(b"m"), "signature": signature}
    public["public_key"] = client.get("/v1/keys/s/public").json()["public_key"]

    def token(operations: list[str]) -> dict:
        issued = client.post("/v1/tokens", json={"keys": ["s"], "operations": operations})
        return {"Authorization": f"Bearer {issued.json()['token']}"}

    with TestClient(app) as user:
        for operations, can_sign, can_verify in (
            (["sign"], True, False),
            (["verify"], False, True),
            (["public"], False, True),
            (["encrypt", "decrypt"], False, False),
        ):
            headers = token(operations)
            signed = user.post("/v1/sign/s", json={"message": b64(b"m")}, headers=headers)
            assert signed.status_code == (200 if can_sign else 403), operations
            checked = user.post("/v1/verify/s", json=check, headers=headers)
            assert checked.status_code == (200 if can_verify else 403), operations
            given = user.post("/v1/verify", json=public, headers=headers)
            assert given.status_code == (200 if can_verify else 403), operations


def test_ed25519_signs_with_the_public_key_of_its_seed_not_the_stored_one(
    client: TestClient, settings: Settings
) -> None:
    """The keyring prepares an Ed25519 key's signing key from the seed alone: a stored public
    key replaced by another (a tampered row) changes nothing in the signatures, which would
    otherwise leak the seed."""
    public = create(client, "signer", "ed25519")
    other = create(client, "other", "ed25519")
    assert settings.sqlite_path is not None
    with sqlite3.connect(settings.sqlite_path) as database:
        changed = database.execute(
            "UPDATE key_versions SET public = ? WHERE public = ?", (other, public)
        ).rowcount
    assert changed == 1
    client.app.state.services.keyring.forget("signer")  # type: ignore[attr-defined]  # the app under test
    assert unb64(client.get("/v1/keys/signer/public").json()["public_key"]) == other
    message = b"release 4.2"
    signature = unb64(sign(client, "signer", message)["signature"])
    nacl.signing.VerifyKey(public).verify(message, signature)
