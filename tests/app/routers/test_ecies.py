"""ECIES over HTTP: JSON, raw bodies, batches, rotation, interop with eciespy, bad input."""

import base64
import os

import ecies as eciespy
import pytest
from ecies.config import Config as PyConfig
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from core import ecies as core_ecies

OCTET = {"content-type": "application/octet-stream"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def make_key(client: TestClient, name: str, key_type: str = "ecies-secp256k1") -> None:
    assert client.post("/v1/keys", json={"name": name, "type": key_type}).status_code == 201


CONFIGS = [
    {},
    {"is_ephemeral_key_compressed": True, "is_hkdf_key_compressed": True},
    {"symmetric_nonce_length": 12},
    {"symmetric_algorithm": "xchacha20"},
]


@pytest.mark.parametrize("key_type", ["ecies-secp256k1", "ecies-x25519", "ecies-ed25519"])
@pytest.mark.parametrize("config", CONFIGS)
def test_json_round_trip(client: TestClient, key_type: str, config: dict) -> None:
    make_key(client, "k", key_type)
    for size in (0, 1, 1000):
        plaintext = os.urandom(size)
        sealed = client.post(
            "/v1/ecies/k/encrypt", json={"plaintext": b64(plaintext), "config": config}
        ).json()
        assert sealed["key_version"] == 1
        opened = client.post(
            "/v1/ecies/k/decrypt", json={"ciphertext": sealed["ciphertext"], "config": config}
        ).json()
        assert base64.b64decode(opened["plaintext"]) == plaintext


def test_raw_round_trip_with_query_parameters(client: TestClient) -> None:
    make_key(client, "k")
    plaintext = os.urandom(3 * 1024 * 1024 + 7)
    params = {"is_ephemeral_key_compressed": "true", "symmetric_algorithm": "xchacha20"}
    sealed = client.post("/v1/ecies/k/encrypt", content=plaintext, headers=OCTET, params=params)
    assert sealed.status_code == 200
    assert sealed.headers["content-type"] == "application/octet-stream"
    assert sealed.headers["cipherd-key-version"] == "1"
    assert sealed.content.startswith(b"cipherd:v1:")
    assert len(sealed.content) == len(b"cipherd:v1:") + 33 + 24 + 16 + len(plaintext)
    opened = client.post(
        "/v1/ecies/k/decrypt",
        content=sealed.content,
        headers=OCTET,
        params={**params, "key_version": 1},
    )
    assert opened.content == plaintext


def test_the_raw_path_takes_raw_bytes_only(client: TestClient) -> None:
    """`.../raw` is the raw form's own path, interchangeable with the JSON path's raw form."""
    make_key(client, "k")
    params = {"symmetric_algorithm": "xchacha20"}
    sealed = client.post("/v1/ecies/k/encrypt/raw", content=b"m", headers=OCTET, params=params)
    assert sealed.status_code == 200 and sealed.headers["cipherd-key-version"] == "1"
    opened = client.post(
        "/v1/ecies/k/decrypt", content=sealed.content, headers=OCTET, params=params
    )
    assert opened.content == b"m"
    as_json = client.post("/v1/ecies/k/encrypt/raw", json={"plaintext": b64(b"m")})
    assert as_json.status_code == 415
    assert as_json.json()["type"] == "urn:cipherd:problem:unsupported-media-type"


def test_old_versions_decrypt_after_rotation(client: TestClient) -> None:
    make_key(client, "k")
    old = client.post("/v1/ecies/k/encrypt", json={"plaintext": b64(b"before")}).json()
    client.post("/v1/keys/k/rotate")
    new = client.post("/v1/ecies/k/encrypt", json={"plaintext": b64(b"after")}).json()
    assert (old["key_version"], new["key_version"]) == (1, 2)
    opened_old = client.post(
        "/v1/ecies/k/decrypt", json={"ciphertext": old["ciphertext"], "key_version": 1}
    ).json()
    assert base64.b64decode(opened_old["plaintext"]) == b"before"
    # Without key_version, the envelope names the version.
    named = client.post("/v1/ecies/k/decrypt", json={"ciphertext": old["ciphertext"]}).json()
    assert (base64.b64decode(named["plaintext"]), named["key_version"]) == (b"before", 1)
    # A bare payload that no version tried opens names the versions tried.
    junk = b64(b"\x04" + os.urandom(64 + 16 + 16 + 5))
    wrong = client.post("/v1/ecies/k/decrypt", json={"ciphertext": junk})
    assert wrong.status_code in (400, 422)
    if wrong.status_code == 400:
        assert wrong.json()["type"] == "urn:cipherd:problem:decryption-failed"
    # Given key_version 2, an old bare payload does not open.
    bare = client.post(
        "/v1/ecies/k/encrypt", json={"plaintext": b64(b"x"), "envelope": False}
    ).json()["ciphertext"]
    client.post("/v1/keys/k/rotate")
    wrong = client.post("/v1/ecies/k/decrypt", json={"ciphertext": bare, "key_version": 3})
    assert wrong.status_code == 400
    assert wrong.json()["detail"] == (
        "decryption failed with version 3 of key 'k'; "
        "a payload made under an earlier version needs that key_version"
    )


def test_eciespy_encrypts_to_the_public_part_and_the_service_decrypts(client: TestClient) -> None:
    make_key(client, "k")
    public = base64.b64decode(client.get("/v1/keys/k/public").json()["public_key"])
    config = PyConfig(is_ephemeral_key_compressed=True, symmetric_nonce_length=12)
    payload = eciespy.encrypt(public.hex(), b"from eciespy", config=config)
    opened = client.post(
        "/v1/ecies/k/decrypt",
        json={
            "ciphertext": b64(payload),
            "config": {"is_ephemeral_key_compressed": True, "symmetric_nonce_length": 12},
        },
    ).json()
    assert base64.b64decode(opened["plaintext"]) == b"from eciespy"


def test_encrypt_to_a_given_public_key_decrypts_with_eciespy(client: TestClient) -> None:
    for curve in ("secp256k1", "x25519", "ed25519"):
        secret, public = core_ecies.generate_keypair(curve)
        response = client.post(
            "/v1/ecies/encrypt",
            json={
                "public_key": b64(public),
                "plaintext": b64(b"to you"),
                "config": {"elliptic_curve": curve},
            },
        )
        assert response.status_code == 200, response.text
        payload = base64.b64decode(response.json()["ciphertext"])
        assert eciespy.decrypt(secret, payload, config=PyConfig(elliptic_curve=curve)) == b"to you"


def test_batch_reports_each_failure_in_place(client: TestClient) -> None:
    make_key(client, "k")
    sealed = client.post(
        "/v1/ecies/k/encrypt/batch",
        json={"items": [{"plaintext": b64(bytes([i]) * i)} for i in range(5)]},
    ).json()["results"]
    assert [r["key_version"] for r in sealed] == [1] * 5
    items = [{"ciphertext": r["ciphertext"]} for r in sealed]
    items[2] = {"ciphertext": b64(b"\x04" + b"\x00" * 100)}
    opened = client.post("/v1/ecies/k/decrypt/batch", json={"items": items}).json()["results"]
    assert base64.b64decode(opened[4]["plaintext"]) == bytes([4]) * 4
    assert opened[2]["error"]["type"] == "urn:cipherd:problem:decryption-failed"
    assert "plaintext" not in opened[2]


def test_batch_size_is_bounded(client: TestClient, app) -> None:
    make_key(client, "k")
    limit = app.state.services.settings.max_batch_items
    response = client.post(
        "/v1/ecies/k/encrypt/batch", json={"items": [{"plaintext": ""}] * (limit + 1)}
    )
    assert response.status_code == 422
    assert "CIPHERD_MAX_BATCH_ITEMS" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body", "status", "problem"),
    [
        ("/v1/ecies/k/decrypt", {"ciphertext": "%%%"}, 422, "invalid-input"),
        ("/v1/ecies/k/decrypt", {"ciphertext": "AAA"}, 422, "invalid-input"),
        ("/v1/ecies/k/decrypt", {"ciphertext": b64(b"short")}, 400, "decryption-failed"),
        (
            "/v1/ecies/k/decrypt",
            {"ciphertext": b64(b"\x05" + b"\x01" * 200)},
            400,
            "decryption-failed",
        ),
        ("/v1/ecies/k/decrypt", {}, 422, "invalid-input"),
        ("/v1/ecies/k/encrypt", {"plaintext": 5}, 422, "invalid-input"),
        (
            "/v1/ecies/k/encrypt",
            {
                "plaintext": "",
                "config": {"symmetric_algorithm": "aes-256-gcm", "symmetric_nonce_length": 24},
            },
            422,
            "invalid-input",
        ),
        (
            "/v1/ecies/k/encrypt",
            {"plaintext": "", "config": {"symmetric_nonce_length": 8}},
            422,
            "invalid-input",
        ),
        ("/v1/ecies/k/decrypt", {"ciphertext": "", "key_version": 7}, 404, "key-not-found"),
        ("/v1/ecies/k/decrypt", {"ciphertext": "", "key_version": 0}, 422, "invalid-input"),
        ("/v1/ecies/missing/encrypt", {"plaintext": ""}, 404, "key-not-found"),
        ("/v1/ecies/sym/encrypt", {"plaintext": ""}, 409, "wrong-key-type"),
        (
            "/v1/ecies/encrypt",
            {"public_key": b64(b"\x02" + b"\xff" * 32), "plaintext": ""},
            422,
            "invalid-input",
        ),
        (
            "/v1/ecies/encrypt",
            {"public_key": b64(b"\x04" * 10), "plaintext": ""},
            422,
            "invalid-input",
        ),
    ],
)
def test_bad_input_is_a_clear_4xx(
    client: TestClient, path: str, body: dict, status: int, problem: str
) -> None:
    make_key(client, "k")
    client.post("/v1/keys", json={"name": "sym", "type": "aez"})
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == f"urn:cipherd:problem:{problem}"


def test_unsupported_media_type(client: TestClient) -> None:
    make_key(client, "k")
    response = client.post(
        "/v1/ecies/k/encrypt", content=b"x", headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415


def test_body_over_the_limit_is_refused_and_nothing_changes(
    settings: Settings, client: TestClient
) -> None:
    limits = {"max_body_bytes": 4096, "max_json_body_bytes": 4096}
    small = create_app(settings.model_copy(update=limits))
    with TestClient(small, headers=dict(client.headers)) as limited:
        make_key(limited, "k")
        declared = limited.post("/v1/ecies/k/encrypt", content=b"x" * 5000, headers=OCTET)
        assert declared.status_code == 413
        assert declared.json()["type"] == "urn:cipherd:problem:body-too-large"

        def chunks():
            for _ in range(5):
                yield b"y" * 1000

        streamed = limited.post("/v1/ecies/k/encrypt", content=chunks(), headers=OCTET)
        assert streamed.status_code == 413
        as_json = limited.post("/v1/ecies/k/encrypt", json={"plaintext": b64(b"z" * 4000)})
        assert as_json.status_code == 413
        assert limited.get("/v1/keys/k").json()["latest_version"] == 1
