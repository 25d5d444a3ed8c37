"""HMAC keys (the MAC checked against Python's hmac with the exported secret, versions,
constant-time verification), data keys and rewrap for ECIES and AEZ, and random bytes; scopes
and bad input. SQLite and PostgreSQL where the store matters (versions)."""

import base64
import hashlib
import hmac
import os

import ecies as eciespy
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.app.routers.encryption import byok


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


@pytest.fixture
def admin(admin_on_both_stores: TestClient) -> TestClient:
    return admin_on_both_stores


def ok(response) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.mark.parametrize("algorithm", ["sha256", "sha384", "sha512"])
def test_hmac_is_the_rfc_2104_mac_of_the_key(client: TestClient, algorithm: str) -> None:
    ok(client.post("/v1/keys", json={"name": "m", "type": "hmac", "exportable": True}))
    secret = unb64(ok(client.get("/v1/keys/m/export"))["secret"])
    assert len(secret) == 64
    body = {"message": b64(b"payload"), "algorithm": algorithm}
    answer = ok(client.post("/v1/hmac/m", json=body))
    expected = hmac.digest(secret, b"payload", getattr(hashlib, algorithm))
    assert unb64(answer["hmac"]) == b"cipherd:v1:" + expected
    assert answer["key_version"] == 1
    check = {"message": b64(b"payload"), "hmac": answer["hmac"], "algorithm": algorithm}
    assert ok(client.post("/v1/hmac/m/verify", json=check)) == {"valid": True}
    assert ok(client.post("/v1/hmac/m/verify", json={**check, "hmac": b64(expected)})) == {
        "valid": True
    }
    # Over 64 KiB, the MAC is computed and checked off the event loop, with the same result.
    large = bytes(range(256)) * 400
    big = ok(client.post("/v1/hmac/m", json={"message": b64(large), "algorithm": algorithm}))
    big_mac = hmac.digest(secret, large, getattr(hashlib, algorithm))
    assert unb64(big["hmac"]) == b"cipherd:v1:" + big_mac
    big_check = {"message": b64(large), "hmac": big["hmac"], "algorithm": algorithm}
    assert ok(client.post("/v1/hmac/m/verify", json=big_check)) == {"valid": True}
    for wrong in (
        {**check, "message": b64(b"payloae")},
        {**check, "hmac": b64(expected[:-1])},
        {**check, "hmac": b64(b"cipherd:v1:" + expected[:-1] + bytes([expected[-1] ^ 1]))},
        {**check, "algorithm": "sha512" if algorithm != "sha512" else "sha256"},
    ):
        assert ok(client.post("/v1/hmac/m/verify", json=wrong)) == {"valid": False}


def test_hmac_versions(admin: TestClient) -> None:
    ok(admin.post("/v1/keys", json={"name": "m", "type": "hmac"}))
    first = ok(admin.post("/v1/hmac/m", json={"message": b64(b"x")}))
    ok(admin.post("/v1/keys/m/rotate"))
    second = ok(admin.post("/v1/hmac/m", json={"message": b64(b"x")}))
    assert second["key_version"] == 2 and second["hmac"] != first["hmac"]
    for mac in (first["hmac"], second["hmac"]):
        assert ok(admin.post("/v1/hmac/m/verify", json={"message": b64(b"x"), "hmac": mac}))[
            "valid"
        ]
    clash = {"message": b64(b"x"), "hmac": first["hmac"], "key_version": 2}
    assert admin.post("/v1/hmac/m/verify", json=clash).status_code == 422
    batch = ok(
        admin.post("/v1/hmac/m/batch", json={"items": [{"message": b64(b"x")}, {"message": ""}]})
    )
    assert batch["results"][0] == second and batch["results"][1]["key_version"] == 2
    bad = {"items": [{"message": b64(b"y"), "algorithm": "md5"}]}
    assert admin.post("/v1/hmac/m/batch", json=bad).status_code == 422
    checks = [{"message": b64(b"x"), "hmac": first["hmac"]}, {"message": "", "hmac": ""}]
    verdicts = ok(admin.post("/v1/hmac/m/verify/batch", json={"items": checks}))
    assert verdicts["results"] == [{"valid": True}, {"valid": False}]
    ok(admin.patch("/v1/keys/m", json={"min_decryption_version": 2}))
    old = admin.post("/v1/hmac/m/verify", json={"message": b64(b"x"), "hmac": first["hmac"]})
    assert old.status_code == 400 and old.json()["type"].endswith("version-too-old")


def test_ecies_datakey_and_rewrap(admin: TestClient) -> None:
    ok(admin.post("/v1/keys", json={"name": "e", "type": "ecies-secp256k1", "exportable": True}))
    key = ok(admin.post("/v1/ecies/e/datakey", json={}))
    assert len(unb64(key["plaintext"])) == 32 and key["key_version"] == 1
    opened = ok(admin.post("/v1/ecies/e/decrypt", json={"ciphertext": key["ciphertext"]}))
    assert opened["plaintext"] == key["plaintext"]
    # The bare payload is eciespy's: it opens with the key's secret there too.
    secret = unb64(ok(admin.get("/v1/keys/e/export"))["secret"])
    bare = unb64(key["ciphertext"]).removeprefix(b"cipherd:v1:")
    assert eciespy.decrypt(secret, bare) == unb64(key["plaintext"])
    wrapped_only = ok(admin.post("/v1/ecies/e/datakey", json={"bytes": 64, "plaintext": False}))
    assert wrapped_only["plaintext"] is None
    opened = ok(admin.post("/v1/ecies/e/decrypt", json={"ciphertext": wrapped_only["ciphertext"]}))
    assert len(unb64(opened["plaintext"])) == 64

    old = key["ciphertext"]
    ok(admin.post("/v1/keys/e/rotate"))
    ok(admin.post("/v1/keys/e/rotate"))
    moved = ok(admin.post("/v1/ecies/e/rewrap", json={"ciphertext": old}))
    assert moved["key_version"] == 3 and "plaintext" not in moved
    assert unb64(moved["ciphertext"]).startswith(b"cipherd:v3:")
    payload = unb64(moved["ciphertext"]).removeprefix(b"cipherd:v3:")
    latest = ok(
        admin.post("/v1/ecies/e/decrypt", json={"ciphertext": b64(payload), "key_version": 3})
    )
    assert latest["plaintext"] == key["plaintext"]
    for version in (1, 2):
        refused = admin.post(
            "/v1/ecies/e/decrypt", json={"ciphertext": b64(payload), "key_version": version}
        )
        assert refused.status_code == 400, version
    bare_moved = ok(
        admin.post(
            "/v1/ecies/e/rewrap",
            json={"ciphertext": b64(bare), "key_version": 1, "envelope": False},
        )
    )
    assert not unb64(bare_moved["ciphertext"]).startswith(b"cipherd:")
    tampered = bytearray(unb64(old))
    tampered[-1] ^= 1
    refused = admin.post("/v1/ecies/e/rewrap", json={"ciphertext": b64(bytes(tampered))})
    assert refused.status_code == 400 and refused.json()["type"].endswith("decryption-failed")
    batch = ok(
        admin.post(
            "/v1/ecies/e/rewrap/batch",
            json={"items": [{"ciphertext": old}, {"ciphertext": b64(bytes(tampered))}]},
        )
    )
    assert batch["results"][0]["key_version"] == 3 and batch["results"][1]["error"]
    keys = ok(admin.post("/v1/ecies/e/datakey/batch", json={"items": [{}, {"plaintext": False}]}))
    assert [r["key_version"] for r in keys["results"]] == [3, 3]
    assert "plaintext" not in keys["results"][1]


def test_aez_datakey_and_rewrap(admin: TestClient) -> None:
    ok(admin.post("/v1/keys", json={"name": "a", "type": "aez"}))
    key = ok(admin.post("/v1/aez/a/datakey", json={"bytes": 16}))
    assert key["tau"] == 16 and len(unb64(key["nonce"])) == 16
    assert len(unb64(key["plaintext"])) == 16
    back = {"ciphertext": key["ciphertext"], "nonce": key["nonce"], "tau": key["tau"]}
    assert ok(admin.post("/v1/aez/a/decrypt", json=back))["plaintext"] == key["plaintext"]
    other = ok(admin.post("/v1/aez/a/datakey", json={}))
    assert other["nonce"] != key["nonce"]

    sealed = ok(
        admin.post(
            "/v1/aez/a/encrypt",
            json={"plaintext": b64(b"secret"), "nonce": b64(b"n"), "ad": [b64(b"h")], "tau": 12},
        )
    )
    ok(admin.post("/v1/keys/a/rotate"))
    ok(admin.post("/v1/keys/a/rotate"))
    params = {"nonce": b64(b"n"), "ad": [b64(b"h")], "tau": 12}
    moved = ok(admin.post("/v1/aez/a/rewrap", json={"ciphertext": sealed["ciphertext"], **params}))
    assert moved["key_version"] == 3
    payload = b64(unb64(moved["ciphertext"]).removeprefix(b"cipherd:v3:"))
    opened = ok(admin.post("/v1/aez/a/decrypt", json={"ciphertext": payload, **params}))
    assert unb64(opened["plaintext"]) == b"secret" and opened["key_version"] == 3
    for version in (1, 2):
        refused = admin.post(
            "/v1/aez/a/decrypt", json={"ciphertext": payload, "key_version": version, **params}
        )
        assert refused.status_code == 400
    wrong_ad = {**params, "ad": [b64(b"x")]}
    refused = admin.post("/v1/aez/a/rewrap", json={"ciphertext": sealed["ciphertext"], **wrong_ad})
    assert refused.status_code == 400 and refused.json()["type"].endswith("authentication-failed")
    batch = ok(
        admin.post(
            "/v1/aez/a/rewrap/batch",
            json={"items": [{"ciphertext": sealed["ciphertext"], **params}]},
        )
    )
    assert batch["results"][0]["key_version"] == 3
    keys = ok(admin.post("/v1/aez/a/datakey/batch", json={"items": [{"bytes": 8}]}))
    result = keys["results"][0]
    back = {"ciphertext": result["ciphertext"], "nonce": result["nonce"], "tau": result["tau"]}
    assert ok(admin.post("/v1/aez/a/decrypt", json=back))["plaintext"] == result["plaintext"]


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/ecies/k/datakey", {"bytes": 0}),
        ("/v1/ecies/k/datakey", {"bytes": 1025}),
        ("/v1/ecies/k/datakey", {"bytes": "32"}),
        ("/v1/aez/a/datakey", {"plaintext": "no"}),
        ("/v1/aez/a/datakey", {"nonce": "AA=="}),
        ("/v1/ecies/k/rewrap", {"ciphertext": "@@"}),
        ("/v1/aez/a/rewrap", {"ciphertext": "AA==", "tau": -1}),
        ("/v1/hmac/m", {"message": "AA==", "algorithm": "md5"}),
        ("/v1/hmac/m/verify", {"message": "AA=="}),
        ("/v1/random", {"bytes": 0}),
        ("/v1/random", {"bytes": 4097}),
        ("/v1/random", {}),
    ],
)
def test_bad_input_is_422(client: TestClient, path: str, body: dict) -> None:
    for name, key_type in (("k", "ecies-x25519"), ("a", "aez"), ("m", "hmac")):
        client.post("/v1/keys", json={"name": name, "type": key_type})
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text


def test_random(client: TestClient, app: FastAPI, anonymous: TestClient) -> None:
    drawn = {unb64(ok(client.post("/v1/random", json={"bytes": 48}))["random"]) for _ in range(3)}
    assert len(drawn) == 3 and all(len(d) == 48 for d in drawn)
    token = ok(client.post("/v1/tokens", json={"keys": ["nothing"], "operations": ["read"]}))
    headers = {"Authorization": f"Bearer {token['token']}"}
    assert anonymous.post("/v1/random", json={"bytes": 1}, headers=headers).status_code == 200
    assert anonymous.post("/v1/random", json={"bytes": 1}).status_code == 401


def test_scopes(client: TestClient, anonymous: TestClient) -> None:
    for name, key_type in (("k", "ecies-x25519"), ("a", "aez"), ("m", "hmac")):
        client.post("/v1/keys", json={"name": name, "type": key_type})
    sealed = ok(client.post("/v1/ecies/k/encrypt", json={"plaintext": "AA=="}))
    calls = {
        "ecies datakey": ("/v1/ecies/k/datakey", {}),
        "aez datakey": ("/v1/aez/a/datakey", {}),
        "rewrap": ("/v1/ecies/k/rewrap", {"ciphertext": sealed["ciphertext"]}),
        "hmac": ("/v1/hmac/m", {"message": "AA=="}),
        "hmac verify": ("/v1/hmac/m/verify", {"message": "AA==", "hmac": "AA=="}),
    }
    allowed = {
        ("encrypt",): {"ecies datakey", "aez datakey"},
        ("decrypt",): set(),
        ("encrypt", "decrypt"): {"ecies datakey", "aez datakey", "rewrap"},
        ("hmac",): {"hmac", "hmac verify"},
        ("sign", "verify", "public"): set(),
    }
    for operations, admitted in allowed.items():
        token = ok(client.post("/v1/tokens", json={"keys": ["*"], "operations": list(operations)}))
        headers = {"Authorization": f"Bearer {token['token']}"}
        for call, (path, body) in calls.items():
            status = anonymous.post(path, json=body, headers=headers).status_code
            assert status == (200 if call in admitted else 403), (operations, call, status)


def test_byok_takes_hmac_keys_of_32_to_512_bytes(client: TestClient) -> None:
    """Vault's hmac keys are of 32 to 512 bytes: each size comes in and MACs as RFC 2104 says."""
    for size in (32, 64, 100, 512):
        secret = os.urandom(size)
        assert byok(client, f"h{size}", "hmac", secret).status_code == 201
        answer = ok(client.post(f"/v1/hmac/h{size}", json={"message": b64(b"ledger")}))
        expected = hmac.digest(secret, b"ledger", hashlib.sha256)
        assert unb64(answer["hmac"]).removeprefix(b"cipherd:v1:") == expected
    for size in (31, 513):
        refused = byok(client, f"bad{size}", "hmac", os.urandom(size))
        assert refused.status_code == 422
        assert f"an hmac key of 32 to 512 bytes, not {size}" in refused.json()["detail"]
        assert client.get(f"/v1/keys/bad{size}").status_code == 404
