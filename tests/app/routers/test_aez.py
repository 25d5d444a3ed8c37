"""AEZ over HTTP: the same bytes as core.aez, raw bodies, batches, rotation, bad input."""

import base64
import os

import pytest
from fastapi.testclient import TestClient

from core import aez

OCTET = {"content-type": "application/octet-stream"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def key(client: TestClient) -> bytes:
    """An exportable AEZ key named 'k'; returns its secret for checking against core.aez."""
    assert client.post("/v1/keys", json={"name": "k", "type": "aez", "exportable": True}).is_success
    return base64.b64decode(client.get("/v1/keys/k/export").json()["secret"])


@pytest.mark.parametrize("tau", [0, 1, 16, 32])
@pytest.mark.parametrize("ad", [None, [], [b""], [b"a", b"", b"bc" * 40]])
def test_same_bytes_as_the_library(client: TestClient, key: bytes, tau: int, ad) -> None:
    assert len(key) == 48
    for size in (0, 1, 31, 32, 100):
        plaintext, nonce = os.urandom(size), os.urandom(size % 20)
        body = {"plaintext": b64(plaintext), "nonce": b64(nonce), "tau": tau}
        if ad is not None:
            body["ad"] = [b64(a) for a in ad]
        expected = aez.encrypt(key, nonce, ad, tau, plaintext)
        # By default in the envelope that names version 1; with envelope false, the bare bytes.
        sealed = client.post("/v1/aez/k/encrypt", json=body).json()
        assert base64.b64decode(sealed["ciphertext"]) == b"cipherd:v1:" + expected
        bare = client.post("/v1/aez/k/encrypt", json={**body, "envelope": False}).json()
        assert base64.b64decode(bare["ciphertext"]) == expected
        body.pop("plaintext")
        for ciphertext in (sealed["ciphertext"], bare["ciphertext"]):
            opened = client.post("/v1/aez/k/decrypt", json={**body, "ciphertext": ciphertext})
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext


def test_tampering_and_wrong_parameters_fail_authentication(client: TestClient, key: bytes) -> None:
    ciphertext = aez.encrypt(key, b"n", [b"ad"], 16, b"attack at dawn")
    good = {"ciphertext": b64(ciphertext), "nonce": b64(b"n"), "ad": [b64(b"ad")], "tau": 16}
    assert client.post("/v1/aez/k/decrypt", json=good).status_code == 200
    flipped = bytearray(ciphertext)
    flipped[3] ^= 1
    for bad in (
        {**good, "ciphertext": b64(bytes(flipped))},
        {**good, "nonce": b64(b"m")},
        {**good, "ad": [b64(b"ad"), ""]},
        {**good, "ad": None},
        {**good, "tau": 17},
        {**good, "ciphertext": b64(ciphertext[:10])},
    ):
        response = client.post("/v1/aez/k/decrypt", json=bad)
        assert response.status_code == 400
        assert response.json() == {
            "type": "urn:cipherd:problem:authentication-failed",
            "title": "Authentication failed",
            "status": 400,
            "detail": "authentication failed with version 1 of key 'k'",
        }


def test_raw_bodies_with_query_parameters(client: TestClient, key: bytes) -> None:
    plaintext = os.urandom(2 * 1024 * 1024 + 3)
    params = [("nonce", b64(b"nonce")), ("ad", b64(b"x")), ("ad", ""), ("tau", "32")]
    sealed = client.post(
        "/v1/aez/k/encrypt",
        content=plaintext,
        headers=OCTET,
        params=[*params, ("envelope", "false")],
    )
    assert sealed.status_code == 200, sealed.text
    assert sealed.content == aez.encrypt(key, b"nonce", [b"x", b""], 32, plaintext)
    enveloped = client.post("/v1/aez/k/encrypt", content=plaintext, headers=OCTET, params=params)
    assert enveloped.content == b"cipherd:v1:" + sealed.content
    decrypt_envelope = [*params, ("envelope", "false")]
    refused = client.post("/v1/aez/k/decrypt", content=b"x", headers=OCTET, params=decrypt_envelope)
    assert refused.status_code == 422  # envelope is an encryption's parameter
    opened = client.post(
        "/v1/aez/k/decrypt",
        content=sealed.content,
        headers=OCTET,
        params=[*params, ("key_version", "1")],
    )
    assert opened.content == plaintext
    assert opened.headers["cipherd-key-version"] == "1"


def test_rotation_keeps_old_ciphertexts(client: TestClient, key: bytes) -> None:
    old = client.post("/v1/aez/k/encrypt", json={"plaintext": b64(b"v1")}).json()
    client.post("/v1/keys/k/rotate")
    new = client.post("/v1/aez/k/encrypt", json={"plaintext": b64(b"v2")}).json()
    assert new["key_version"] == 2
    opened = client.post(
        "/v1/aez/k/decrypt", json={"ciphertext": old["ciphertext"], "key_version": 1}
    ).json()
    assert base64.b64decode(opened["plaintext"]) == b"v1"
    # Without key_version, the envelope names the version.
    named = client.post("/v1/aez/k/decrypt", json={"ciphertext": old["ciphertext"]}).json()
    assert (base64.b64decode(named["plaintext"]), named["key_version"]) == (b"v1", 1)
    # A key_version the caller gives is used exactly: the envelope may not say otherwise.
    other = client.post(
        "/v1/aez/k/decrypt", json={"ciphertext": old["ciphertext"], "key_version": 2}
    )
    assert other.status_code == 422
    # A bare payload of version 1 is a bare AEZ payload given version 2: it does not open.
    bare = client.post(
        "/v1/aez/k/encrypt", json={"plaintext": b64(b"v2"), "envelope": False}
    ).json()["ciphertext"]
    wrong = client.post("/v1/aez/k/decrypt", json={"ciphertext": bare, "key_version": 1})
    assert wrong.status_code == 400
    assert "with version 1 of key 'k'" in wrong.json()["detail"]


def test_batches(client: TestClient, key: bytes) -> None:
    items = [{"plaintext": b64(bytes([i]) * i), "nonce": b64(bytes([i]))} for i in range(6)]
    sealed = client.post("/v1/aez/k/encrypt/batch", json={"items": items}).json()["results"]
    to_open = [
        {"ciphertext": r["ciphertext"], "nonce": item["nonce"]}
        for r, item in zip(sealed, items, strict=True)
    ]
    to_open[1]["nonce"] = b64(b"wrong")
    opened = client.post("/v1/aez/k/decrypt/batch", json={"items": to_open}).json()["results"]
    assert opened[1]["error"]["type"] == "urn:cipherd:problem:authentication-failed"
    assert [base64.b64decode(r["plaintext"]) for i, r in enumerate(opened) if i != 1] == [
        bytes([i]) * i for i in range(6) if i != 1
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"plaintext": "", "tau": -1},
        {"plaintext": "", "tau": aez.MAX_TAU + 1},
        {"plaintext": "", "tau": 1.5},
        {"plaintext": "", "tau": "16"},
        {"plaintext": "", "nonce": "@@"},
        {"plaintext": "", "ad": ["ok==", "x"]},
        {"plaintext": "", "ad": "AAAA"},
        {},
    ],
)
def test_bad_input_is_422(client: TestClient, key: bytes, body: dict) -> None:
    response = client.post("/v1/aez/k/encrypt", json=body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"


def test_bad_raw_query_is_422(client: TestClient, key: bytes) -> None:
    for params in ({"tau": "-3"}, {"tau": "x"}, {"nonce": "%%"}):
        response = client.post("/v1/aez/k/encrypt", content=b"x", headers=OCTET, params=params)
        assert response.status_code == 422, (params, response.text)


def test_wrong_key_type(client: TestClient) -> None:
    client.post("/v1/keys", json={"name": "e", "type": "ecies-x25519"})
    response = client.post("/v1/aez/e/encrypt", json={"plaintext": ""})
    assert response.status_code == 409
    assert response.json()["type"] == "urn:cipherd:problem:wrong-key-type"
