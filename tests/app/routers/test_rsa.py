"""RSA-OAEP over HTTP: ciphertexts pyca opens and makes both ways, Wycheproof's verdicts through
the service (each case's key brought in by BYOK), one 400 for every failure, raw bodies,
batches, rotation and bad input."""

import os

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from fastapi.testclient import TestClient

from tests.app.routers.encryption import b64, byok, create, failure, unb64
from tests.core.encryption.vectors import RSA_OAEP

OCTET = {"content-type": "application/octet-stream"}
OAEP = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)


def private_key(der: bytes) -> rsa.RSAPrivateKey:
    key = serialization.load_der_private_key(der, None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


@pytest.mark.parametrize("bits", [2048, 3072])
def test_ciphertexts_open_both_ways_with_pyca(client: TestClient, bits: int) -> None:
    theirs = private_key(create(client, "k", f"rsa-{bits}"))
    largest = bits // 8 - 66
    for size in (0, 1, largest):
        plaintext = os.urandom(size)
        sealed = client.post("/v1/rsa/k/encrypt", json={"plaintext": b64(plaintext)}).json()
        payload = unb64(sealed["ciphertext"])
        assert sealed["key_version"] == 1 and payload.startswith(b"cipherd:v1:")
        assert len(payload) == 11 + bits // 8
        assert theirs.decrypt(payload[11:], OAEP) == plaintext
        made = theirs.public_key().encrypt(plaintext, OAEP)
        opened = client.post("/v1/rsa/k/decrypt", json={"ciphertext": b64(made)}).json()
        assert opened == {"plaintext": b64(plaintext), "key_version": 1}
    too_long = client.post("/v1/rsa/k/encrypt", json={"plaintext": b64(bytes(largest + 1))})
    assert too_long.status_code == 422
    assert too_long.json()["detail"].startswith(f"plaintext: at most {largest} bytes")


def test_every_failure_is_the_same_400(client: TestClient) -> None:
    theirs = private_key(create(client, "k", "rsa-2048"))
    made = theirs.public_key().encrypt(b"attack at dawn", OAEP)
    labelled = theirs.public_key().encrypt(
        b"attack at dawn", padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), b"L")
    )
    sha1 = theirs.public_key().encrypt(
        b"attack at dawn", padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
    )
    pkcs1 = theirs.public_key().encrypt(b"attack at dawn", padding.PKCS1v15())
    modulus = theirs.public_key().public_numbers().n.to_bytes(256, "big")
    for bad in (made[:-1], made + b"\x00", b"", labelled, sha1, pkcs1, modulus, bytes(256)):
        answer = client.post("/v1/rsa/k/decrypt", json={"ciphertext": b64(bad)})
        assert (answer.status_code, answer.json()) == (400, failure("k"))


def test_every_wycheproof_case_through_the_service(client: TestClient) -> None:
    """Each file's key brought in by BYOK as a key of its size; every case with the empty label
    decrypts, or fails with the one 400, as Wycheproof says."""
    imported: set[bytes] = set()
    checked = 0
    for case in RSA_OAEP:
        name = case.key_type
        if case.private_key not in imported:
            assert byok(client, name, name, case.private_key).status_code == 201, case.id
            imported.add(case.private_key)
        answer = client.post(f"/v1/rsa/{name}/decrypt", json={"ciphertext": b64(case.ciphertext)})
        if case.valid:
            assert answer.json() == {"plaintext": b64(case.plaintext), "key_version": 1}, case.id
        else:
            assert (answer.status_code, answer.json()) == (400, failure(name)), case.id
        checked += 1
    assert checked == 87


def test_raw_bodies_batches_and_rotation(client: TestClient) -> None:
    theirs = private_key(create(client, "k", "rsa-2048"))
    sealed = client.post(
        "/v1/rsa/k/encrypt/raw", content=b"raw", headers=OCTET, params={"envelope": "false"}
    )
    assert (
        sealed.headers["cipherd-key-version"] == "1"
        and theirs.decrypt(sealed.content, OAEP) == b"raw"
    )
    opened = client.post("/v1/rsa/k/decrypt/raw", content=sealed.content, headers=OCTET)
    assert opened.content == b"raw"
    items = [
        {"plaintext": b64(b"a")},
        {"plaintext": b64(bytes(191))},
        {"plaintext": b64(b"c"), "envelope": False},
    ]
    results = client.post("/v1/rsa/k/encrypt/batch", json={"items": items}).json()["results"]
    assert results[1]["error"]["status"] == 422 and results[0]["key_version"] == 1
    client.post("/v1/keys/k/rotate")
    decrypts = [
        {"ciphertext": results[0]["ciphertext"]},
        {"ciphertext": results[2]["ciphertext"]},
        {"ciphertext": b64(bytes(256))},
    ]
    answers = client.post("/v1/rsa/k/decrypt/batch", json={"items": decrypts}).json()["results"]
    assert answers[:2] == [
        {"plaintext": b64(b"a"), "key_version": 1},
        {"plaintext": b64(b"c"), "key_version": 1},
    ]
    assert answers[2]["error"]["status"] == 400
    assert client.post("/v1/rsa/k/encrypt", json={"plaintext": ""}).json()["key_version"] == 2
    client.post("/v1/keys", json={"name": "a", "type": "aes256-gcm"})
    assert client.post("/v1/rsa/a/encrypt", json={"plaintext": ""}).status_code == 409
