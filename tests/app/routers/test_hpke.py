"""HPKE over HTTP: payloads pyca's HPKE opens and makes both ways, the published vectors' keys
brought in by BYOK, encryption to a public key in the request, raw bodies, batches, rotation and
bad input."""

import hashlib
import os
from typing import Any

import pytest
from cryptography.hazmat.bindings._rust import openssl as rust_openssl
from cryptography.hazmat.primitives import hpke, serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519
from fastapi.testclient import TestClient

from tests.app.routers.encryption import b64, byok, create, failure, unb64
from tests.core.encryption.vectors import HPKE_PQ_MLKEM768_X25519, RFC9180_X25519

OCTET = {"content-type": "application/octet-stream"}
KEMS = {"hpke-x25519": hpke.KEM.X25519, "hpke-mlkem768-x25519": hpke.KEM.MLKEM768_X25519}
ENC = {"hpke-x25519": 32, "hpke-mlkem768-x25519": 1120}


def suite(key_type: str) -> Any:
    return hpke.Suite(KEMS[key_type], hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)


def private_key(key_type: str, secret: bytes) -> Any:
    """pyca's private key of the service's encoding of the secret."""
    if key_type == "hpke-x25519":
        return x25519.X25519PrivateKey.from_private_bytes(secret)
    return hpke.MLKEM768X25519PrivateKey(
        mlkem.MLKEM768PrivateKey.from_seed_bytes(secret[:64]),
        x25519.X25519PrivateKey.from_private_bytes(secret[64:]),
    )


@pytest.mark.parametrize("key_type", sorted(KEMS))
def test_payloads_open_both_ways_with_pyca(client: TestClient, key_type: str) -> None:
    secret = create(client, "k", key_type)
    theirs = private_key(key_type, secret)
    public = unb64(client.get("/v1/keys/k/public").json()["public_key"])
    assert len(public) == {"hpke-x25519": 32, "hpke-mlkem768-x25519": 1216}[key_type]
    for size in (0, 1, 64, 3000):
        plaintext, info, aad = os.urandom(size), os.urandom(size % 7), os.urandom(size % 3)
        body = {"plaintext": b64(plaintext), "info": b64(info), "aad": b64(aad)}
        sealed = client.post("/v1/hpke/k/encrypt", json=body).json()
        payload = unb64(sealed["ciphertext"])
        assert sealed["key_version"] == 1 and payload.startswith(b"cipherd:v1:")
        bare = payload.removeprefix(b"cipherd:v1:")
        assert len(bare) == ENC[key_type] + size + 16
        opened = rust_openssl.hpke._decrypt_with_aad(suite(key_type), bare, theirs, info, aad)
        assert opened == plaintext
        made = rust_openssl.hpke._encrypt_with_aad(
            suite(key_type), plaintext, theirs.public_key(), info, aad
        )
        answer = client.post(
            "/v1/hpke/k/decrypt", json={"ciphertext": b64(made), "info": b64(info), "aad": b64(aad)}
        )
        assert answer.json() == {"plaintext": b64(plaintext), "key_version": 1}
    # pyca's single-shot calls (info only) and the service's without aad are the same Seal.
    made = suite(key_type).encrypt(b"hello", theirs.public_key(), b"app")
    answer = client.post("/v1/hpke/k/decrypt", json={"ciphertext": b64(made), "info": b64(b"app")})
    assert unb64(answer.json()["plaintext"]) == b"hello"
    bare = client.post(
        "/v1/hpke/k/encrypt", json={"plaintext": b64(b"hi"), "envelope": False}
    ).json()
    assert suite(key_type).decrypt(unb64(bare["ciphertext"]), theirs) == b"hi"


@pytest.mark.parametrize("key_type", sorted(KEMS))
def test_every_failure_is_the_same_400(client: TestClient, key_type: str) -> None:
    create(client, "k", key_type)
    body = {
        "plaintext": b64(b"attack at dawn"),
        "info": b64(b"i"),
        "aad": b64(b"a"),
        "envelope": False,
    }
    payload = unb64(client.post("/v1/hpke/k/encrypt", json=body).json()["ciphertext"])
    good = {"ciphertext": b64(payload), "info": b64(b"i"), "aad": b64(b"a")}
    assert client.post("/v1/hpke/k/decrypt", json=good).status_code == 200
    cases: list[dict[str, Any]] = [
        {**good, "info": b64(b"j")},
        {**good, "aad": b64(b"b")},
        {**good, "aad": ""},
        {**good, "ciphertext": b64(payload[:-1])},
        {**good, "ciphertext": b64(payload[: ENC[key_type]])},
        {**good, "ciphertext": ""},
        {**good, "ciphertext": b64(bytes(len(payload)))},
    ]
    for index in (0, ENC[key_type] - 1, ENC[key_type], len(payload) - 1):  # enc, ciphertext, tag
        flipped = bytearray(payload)
        flipped[index] ^= 0x01
        cases.append({**good, "ciphertext": b64(bytes(flipped))})
    for bad in cases:
        answer = client.post("/v1/hpke/k/decrypt", json=bad)
        assert (answer.status_code, answer.json()) == (400, failure("k")), bad


@pytest.mark.parametrize(
    "vector", RFC9180_X25519[:1] + HPKE_PQ_MLKEM768_X25519[:1], ids=["rfc9180", "hpke-pq"]
)
def test_the_published_keys_come_in_by_byok(client: TestClient, vector: dict[str, Any]) -> None:
    """A published recipient key imported in the service's encoding has the published public
    key; the service's payloads to it open with pyca under the same key."""
    sk = bytes.fromhex(vector["skRm"])
    if vector["kem_id"] == 0x20:
        key_type, secret = "hpke-x25519", sk
    else:
        key_type, secret = "hpke-mlkem768-x25519", hashlib.shake_256(sk).digest(96)
    assert byok(client, "v", key_type, secret).status_code == 201
    assert unb64(client.get("/v1/keys/v/public").json()["public_key"]).hex() == vector["pkRm"]
    sealed = client.post(
        "/v1/hpke/v/encrypt", json={"plaintext": b64(b"m"), "envelope": False}
    ).json()
    assert (
        suite(key_type).decrypt(unb64(sealed["ciphertext"]), private_key(key_type, secret)) == b"m"
    )
    for wrong in (secret[:-1], secret + b"\x00"):
        refused = byok(client, "v", key_type, wrong)
        assert (
            refused.status_code == 422
            and f"a secret of {len(secret)} bytes" in refused.json()["detail"]
        )


def test_encryption_to_a_public_key_in_the_request(
    client: TestClient, anonymous: TestClient
) -> None:
    receiver = x25519.X25519PrivateKey.generate()
    raw = receiver.public_key().public_bytes_raw()
    der = receiver.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for form, encoded in (("raw", raw), ("der", der)):
        body = {
            "type": "hpke-x25519",
            "public_key": b64(encoded),
            "format": form,
            "plaintext": b64(b"to you"),
            "info": b64(b"i"),
        }
        answer = client.post("/v1/hpke/encrypt", json=body)
        assert answer.status_code == 200, answer.text
        assert (
            suite("hpke-x25519").decrypt(unb64(answer.json()["ciphertext"]), receiver, b"i")
            == b"to you"
        )
    secret = create(client, "h", "hpke-mlkem768-x25519")
    public = unb64(client.get("/v1/keys/h/public").json()["public_key"])
    body = {
        "type": "hpke-mlkem768-x25519",
        "public_key": b64(public),
        "plaintext": b64(b"pq"),
        "aad": b64(b"a"),
    }
    payload = client.post("/v1/hpke/encrypt", json=body).json()["ciphertext"]
    opened = client.post(
        "/v1/hpke/h/decrypt", json={"ciphertext": payload, "aad": b64(b"a")}
    ).json()
    assert (opened["plaintext"], opened["key_version"]) == (b64(b"pq"), 1)
    theirs = rust_openssl.hpke._decrypt_with_aad(
        suite("hpke-mlkem768-x25519"),
        unb64(payload),
        private_key("hpke-mlkem768-x25519", secret),
        b"",
        b"a",
    )
    assert theirs == b"pq"
    for bad, detail in (
        (
            {"type": "hpke-x25519", "public_key": b64(raw[:31])},
            "public_key: an hpke-x25519 public key has 32 bytes, not 31",
        ),
        (
            {"type": "hpke-x25519", "public_key": b64(raw), "format": "der"},
            "public_key: not a DER SubjectPublicKeyInfo",
        ),
        (
            {"type": "hpke-mlkem768-x25519", "public_key": b64(public), "format": "der"},
            "format: an hpke-mlkem768-x25519 public key has no DER encoding",
        ),
        (
            {"type": "hpke-mlkem768-x25519", "public_key": b64(b"\xff" * 1216)},
            "public_key: not an hpke-mlkem768-x25519 public key",
        ),
        ({"type": "hpke-x25519", "public_key": b64(der), "format": "pem"}, None),
    ):
        answer = client.post("/v1/hpke/encrypt", json={"plaintext": "", **bad})
        assert answer.status_code == 422, bad
        if detail:
            assert answer.json()["detail"].startswith(detail)
    # It needs the encrypt scope, as ECIES to a public key does.
    body = {"type": "hpke-x25519", "public_key": b64(raw), "plaintext": ""}
    assert anonymous.post("/v1/hpke/encrypt", json=body).status_code == 401
    token = client.post("/v1/tokens", json={"keys": ["*"], "operations": ["decrypt"]}).json()[
        "token"
    ]
    headers = {"Authorization": f"Bearer {token}"}
    assert anonymous.post("/v1/hpke/encrypt", json=body, headers=headers).status_code == 403
    token = client.post("/v1/tokens", json={"keys": ["*"], "operations": ["encrypt"]}).json()[
        "token"
    ]
    headers = {"Authorization": f"Bearer {token}"}
    assert anonymous.post("/v1/hpke/encrypt", json=body, headers=headers).status_code == 200


# X25519 public keys of small order, whose shared secret with any key is all zeros: 0, 1, the
# two points of order 8, and p - 1, p and p + 1 written unreduced (the list of
# https://cr.yp.to/ecdh.html#validate, as Wycheproof's x25519 vectors use it).
SMALL_ORDER = [
    bytes(32),
    (1).to_bytes(32, "little"),
    bytes.fromhex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
    bytes.fromhex("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
    *((2**255 - 19 + offset).to_bytes(32, "little") for offset in (-1, 0, 1)),
]


def test_encryption_to_a_point_of_small_order_is_refused(client: TestClient) -> None:
    """RFC 9180 (7.1.4) refuses a Diffie-Hellman output of zeros: a 422 naming the key, for
    the raw and DER forms, with and without aad, and in the hybrid's X25519 part."""
    create(client, "pq", "hpke-mlkem768-x25519")
    mlkem_part = unb64(client.get("/v1/keys/pq/public").json()["public_key"])[:1184]
    for point in SMALL_ORDER:
        der = bytes.fromhex("302a300506032b656e032100") + point
        for body in (
            {"type": "hpke-x25519", "public_key": b64(point)},
            {"type": "hpke-x25519", "public_key": b64(point), "aad": b64(b"a")},
            {"type": "hpke-x25519", "public_key": b64(der), "format": "der"},
            {"type": "hpke-mlkem768-x25519", "public_key": b64(mlkem_part + point)},
        ):
            answer = client.post("/v1/hpke/encrypt", json={"plaintext": b64(b"m"), **body})
            assert answer.status_code == 422, (point.hex(), body, answer.text)
            assert f"not an {body['type']} public key" in answer.json()["detail"]


def test_raw_bodies_batches_and_rotation(client: TestClient) -> None:
    secret = create(client, "k", "hpke-x25519")
    plaintext = os.urandom(200_000)
    params = [("info", b64(b"i")), ("aad", b64(b"a/+"))]
    sealed = client.post(
        "/v1/hpke/k/encrypt/raw",
        content=plaintext,
        headers=OCTET,
        params=[*params, ("envelope", "false")],
    )
    assert sealed.status_code == 200 and sealed.headers["cipherd-key-version"] == "1"
    theirs = private_key("hpke-x25519", secret)
    assert (
        rust_openssl.hpke._decrypt_with_aad(
            suite("hpke-x25519"), sealed.content, theirs, b"i", b"a/+"
        )
        == plaintext
    )
    opened = client.post(
        "/v1/hpke/k/decrypt/raw", content=sealed.content, headers=OCTET, params=params
    )
    assert opened.content == plaintext
    items = [
        {"plaintext": b64(b"a")},
        {"plaintext": b64(b"b"), "info": b64(b"x"), "envelope": False},
    ]
    results = client.post("/v1/hpke/k/encrypt/batch", json={"items": items}).json()["results"]
    assert [r["key_version"] for r in results] == [1, 1]
    client.post("/v1/keys/k/rotate")
    decrypts = [
        {"ciphertext": results[0]["ciphertext"]},
        {"ciphertext": results[1]["ciphertext"], "info": b64(b"x")},
        {"ciphertext": results[1]["ciphertext"]},
    ]
    opened_items = client.post("/v1/hpke/k/decrypt/batch", json={"items": decrypts}).json()[
        "results"
    ]
    assert opened_items[:2] == [
        {"plaintext": b64(b"a"), "key_version": 1},
        {"plaintext": b64(b"b"), "key_version": 1},
    ]
    assert opened_items[2]["error"]["status"] == 400
    new = client.post("/v1/hpke/k/encrypt", json={"plaintext": ""}).json()
    assert new["key_version"] == 2
    public_v1 = unb64(client.get("/v1/keys/k/public", params={"version": 1}).json()["public_key"])
    assert public_v1 == theirs.public_key().public_bytes_raw()
    assert client.post("/v1/aead/k/encrypt", json={"plaintext": ""}).status_code == 409


def test_hpke_keys_encrypt_through_transit(client: TestClient) -> None:
    """Transit's encrypt, decrypt and rewrap take an HPKE key: `context` is RFC 9180's info and
    `associated_data` its aad, and the payload after `vault:v<N>:` is the bare enc ‖ ct that
    the native path opens; audited as HPKE's operations, with the path."""
    client.post("/v1/keys", json={"name": "inbox", "type": "hpke-mlkem768-x25519"})
    vault = {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}
    fields = {"context": b64(b"inbox"), "associated_data": b64(b"msg 7")}
    body = {"plaintext": b64(b"hello"), **fields}
    sealed = client.post("/v1/transit/encrypt/inbox", headers=vault, json=body)
    assert sealed.status_code == 200, sealed.text
    ciphertext = sealed.json()["data"]["ciphertext"]
    assert ciphertext.startswith("vault:v1:")
    bare = ciphertext.removeprefix("vault:v1:")
    native = {"ciphertext": bare, "info": fields["context"], "aad": fields["associated_data"]}
    opened = client.post("/v1/hpke/inbox/decrypt", json=native).json()
    assert unb64(opened["plaintext"]) == b"hello"
    back = client.post(
        "/v1/transit/decrypt/inbox", headers=vault, json={"ciphertext": ciphertext, **fields}
    )
    assert back.json()["data"] == {"plaintext": b64(b"hello")}
    wrong = client.post(
        "/v1/transit/decrypt/inbox",
        headers=vault,
        json={"ciphertext": ciphertext, "context": fields["context"]},
    )
    assert wrong.status_code == 400 and wrong.json()["errors"]
    read = client.get("/v1/transit/keys/inbox", headers=vault).json()["data"]
    assert (read["supports_encryption"], read["supports_signing"]) == (True, False)
    records = client.get("/v1/audit", params={"operation": "hpke_encrypt", "key": "inbox"})
    paths = [r["details"].get("path") for r in records.json()["records"]]
    assert paths == ["transit/encrypt/inbox"]
