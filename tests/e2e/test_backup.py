"""Backup, restore and BYOK between two real instances with different root keys, with eciespy
as the peer that makes key material and ciphertexts elsewhere."""

import base64
import hmac
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import ecies  # eciespy
import httpx
import pytest
from ecies.keys import PrivateKey

from core import aez
from tests.app.routers.backup_documents import FORGER, document, fe_version, seal
from tests.e2e import server as e2e


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[tuple[e2e.Server, e2e.Server]]:
    """Two instances with their own root keys; B takes the backups A signs, and those signed
    by the key the tests make forgeries with."""
    roots = [b64(secrets.token_bytes(32)) for _ in range(2)]
    assert roots[0] != roots[1]
    with e2e.running(tmp_path / "a", env={"CIPHERD_ROOT_KEY": roots[0]}) as a:
        with a.client() as on_a:
            signer = on_a.get("/v1/sys/wrapping-key").json()["signing_key"]
        signers = f"{signer},{b64(FORGER.public)}"
        env = {"CIPHERD_ROOT_KEY": roots[1], "CIPHERD_BACKUP_SIGNERS": signers}
        with e2e.running(tmp_path / "b", env=env) as b:
            yield a, b


def _wrapping_key(http: httpx.Client) -> bytes:
    answer = http.get("/v1/sys/wrapping-key")
    assert answer.status_code == 200, answer.text
    public = base64.b64decode(answer.json()["public_key"])
    assert len(public) == 65 and public[0] == 4
    return public


def test_a_backup_moves_every_version_to_an_instance_with_another_root_key(
    instances: tuple[e2e.Server, e2e.Server],
) -> None:
    a, b = instances
    with a.client() as on_a, b.client() as on_b:
        made = on_a.post(
            "/v1/keys",
            json={
                "name": "orders",
                "type": "ecies-secp256k1",
                "allow_backup": True,
                "deletion_protection": True,
            },
        )
        assert made.status_code == 201 and made.json()["allow_backup"] is True
        sealed = []
        for version in (1, 2):
            if version == 2:
                assert on_a.post("/v1/keys/orders/rotate").status_code == 200
            plaintext = os.urandom(24)
            answer = on_a.post("/v1/ecies/orders/encrypt", json={"plaintext": b64(plaintext)})
            sealed.append((answer.json(), plaintext))
        on_a.post("/v1/keys", json={"name": "session", "type": "aez", "allow_backup": True})
        aez_body = {"plaintext": b64(b"aez too"), "nonce": b64(b"n"), "tau": 16}
        aez_sealed = on_a.post("/v1/aez/session/encrypt", json=aez_body).json()
        on_a.post("/v1/keys", json={"name": "plain", "type": "aez"})
        assert on_a.get("/v1/keys/plain").json()["allow_backup"] is False

        to_b = {"wrapping_key": b64(_wrapping_key(on_b))}
        refused = on_a.post("/v1/keys/plain/backup", json=to_b)
        assert refused.status_code == 403
        assert refused.json()["type"] == "urn:cipherd:problem:backup-not-allowed"
        backup = on_a.post("/v1/keys/orders/backup", json=to_b)
        assert backup.status_code == 200, backup.text
        blob = backup.json()["backup"]
        session_blob = on_a.post("/v1/keys/session/backup", json=to_b).json()["backup"]

        # Only the instance that holds the wrapping key opens it.
        mine = on_a.post("/v1/keys/import", json={"backup": blob})
        assert mine.status_code == 422
        assert mine.json()["type"] == "urn:cipherd:problem:unwrap-failed"

        restored = on_b.post("/v1/keys/import", json={"backup": blob})
        assert restored.status_code == 201, restored.text
        info = restored.json()
        assert (info["name"], info["type"], info["latest_version"]) == (
            "orders",
            "ecies-secp256k1",
            2,
        )
        assert [v["version"] for v in info["versions"]] == [1, 2]
        assert info["allow_backup"] is True
        assert info["deletion_protection"] is True  # the policies travel with the versions
        for ciphertext, plaintext in sealed:
            opened = on_b.post("/v1/ecies/orders/decrypt", json=ciphertext)
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext
        assert (
            on_b.get("/v1/keys/orders/public").json() == on_a.get("/v1/keys/orders/public").json()
        )

        again = on_b.post("/v1/keys/import", json={"backup": blob})
        assert again.status_code == 409
        copy = on_b.post("/v1/keys/import", json={"backup": blob, "name": "orders-copy"})
        assert copy.status_code == 201 and copy.json()["name"] == "orders-copy"
        assert on_b.post("/v1/keys/import", json={"backup": session_blob}).status_code == 201
        opened = on_b.post(
            "/v1/aez/session/decrypt",
            json={**aez_sealed, "nonce": aez_body["nonce"], "tau": 16},
        )
        assert base64.b64decode(opened.json()["plaintext"]) == b"aez too"

        # The blob is ECIES to B's wrapping key: nothing of the secret shows in it.
        assert info["name"].encode() not in base64.b64decode(blob)
        records = on_b.get("/v1/audit", params={"operation": "keys_import_key"}).json()
        assert [r["key"] for r in records["records"]] == [
            "orders",
            "orders",
            "orders-copy",
            "session",
        ]
        assert blob not in str(records)
        backups = on_a.get("/v1/audit", params={"operation": "keys_backup_key"}).json()
        assert [(r["key"], r["status"]) for r in backups["records"]] == [
            ("plain", 403),
            ("orders", 200),
            ("session", 200),
        ]


def test_byok_material_from_eciespy_decrypts_eciespy_ciphertexts(
    instances: tuple[e2e.Server, e2e.Server],
) -> None:
    _, b = instances
    with b.client() as http:
        wrapping = _wrapping_key(http)
        peer = PrivateKey("secp256k1")  # made elsewhere, by eciespy
        body = {
            "name": "byok",
            "type": "ecies-secp256k1",
            "wrapped_material": b64(ecies.encrypt(wrapping, peer.secret)),
        }
        imported = http.post("/v1/keys/import", json=body)
        assert imported.status_code == 201, imported.text
        assert imported.json()["latest_version"] == 1
        public = base64.b64decode(http.get("/v1/keys/byok/public").json()["public_key"])
        assert public == peer.public_key.to_bytes(compressed=False)
        message = os.urandom(100)
        ciphertext = ecies.encrypt(peer.public_key.to_bytes(compressed=True), message)
        opened = http.post("/v1/ecies/byok/decrypt", json={"ciphertext": b64(ciphertext)})
        assert opened.status_code == 200, opened.text
        assert base64.b64decode(opened.json()["plaintext"]) == message

        # The next piece of material for the same name becomes its version 2.
        second = PrivateKey("secp256k1")
        body["wrapped_material"] = b64(ecies.encrypt(wrapping, second.secret))
        rotated = http.post("/v1/keys/import", json=body)
        assert rotated.status_code == 200 and rotated.json()["latest_version"] == 2
        ciphertext = ecies.encrypt(second.public_key.to_bytes(compressed=False), b"second")
        opened = http.post("/v1/ecies/byok/decrypt", json={"ciphertext": b64(ciphertext)})
        assert base64.b64decode(opened.json()["plaintext"]) == b"second"

        # A 48-byte AEZ key made elsewhere.
        aez_key = os.urandom(48)
        aez_body = {
            "name": "byok-aez",
            "type": "aez",
            "wrapped_material": b64(ecies.encrypt(wrapping, aez_key)),
        }
        assert http.post("/v1/keys/import", json=aez_body).status_code == 201
        local = aez.encrypt(aez_key, b"nonce", None, 16, b"sealed elsewhere")
        opened = http.post(
            "/v1/aez/byok-aez/decrypt",
            json={"ciphertext": b64(local), "nonce": b64(b"nonce"), "tau": 16},
        )
        assert base64.b64decode(opened.json()["plaintext"]) == b"sealed elsewhere"

        # Refusals: another type under the name, a wrong length, material for another instance,
        # a type BYOK does not take, a body of both forms.
        wrong_type = {**aez_body, "name": "byok"}
        assert http.post("/v1/keys/import", json=wrong_type).status_code == 409
        short = {
            **aez_body,
            "name": "short",
            "wrapped_material": b64(ecies.encrypt(wrapping, b"x" * 32)),
        }
        answer = http.post("/v1/keys/import", json=short)
        assert answer.status_code == 422 and "48 bytes" in answer.json()["detail"]
        elsewhere = PrivateKey("secp256k1").public_key.to_bytes(compressed=False)
        stray = {
            **aez_body,
            "name": "stray",
            "wrapped_material": b64(ecies.encrypt(elsewhere, aez_key)),
        }
        assert http.post("/v1/keys/import", json=stray).json()["type"].endswith("unwrap-failed")
        fe = {**aez_body, "name": "fe", "type": "ipfe-opt"}
        assert http.post("/v1/keys/import", json=fe).status_code == 422
        both = {**aez_body, "backup": aez_body["wrapped_material"]}
        assert http.post("/v1/keys/import", json=both).status_code == 422
        assert http.get("/v1/keys/stray").status_code == 404


def test_signing_and_hmac_keys_travel_by_backup_and_byok(
    instances: tuple[e2e.Server, e2e.Server],
) -> None:
    a, b = instances
    with a.client() as on_a, b.client() as on_b:
        on_a.post("/v1/keys", json={"name": "ed", "type": "ed25519", "allow_backup": True})
        first = on_a.post("/v1/sign/ed", json={"message": b64(b"m")}).json()
        assert on_a.post("/v1/keys/ed/rotate").status_code == 200
        to_b = {"wrapping_key": b64(_wrapping_key(on_b))}
        blob = on_a.post("/v1/keys/ed/backup", json=to_b).json()["backup"]
        assert on_b.post("/v1/keys/import", json={"backup": blob}).status_code == 201
        check = {"message": b64(b"m"), "signature": first["signature"], "key_version": 1}
        assert on_b.post("/v1/verify/ed", json=check).json() == {"valid": True}
        # Ed25519 is deterministic: both instances make the same signature with version 2.
        latest = [c.post("/v1/sign/ed", json={"message": b64(b"x")}).json() for c in (on_a, on_b)]
        assert latest[0] == latest[1] and latest[0]["key_version"] == 2

        wrapping = _wrapping_key(on_b)
        eth_secret = bytes.fromhex(
            "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
        )
        body = {
            "name": "eth",
            "type": "ecdsa-secp256k1",
            "wrapped_material": b64(ecies.encrypt(wrapping, eth_secret)),
        }
        assert on_b.post("/v1/keys/import", json=body).status_code == 201
        public = base64.b64decode(on_b.get("/v1/keys/eth/public").json()["public_key"])
        assert public == PrivateKey("secp256k1", eth_secret).public_key.to_bytes(compressed=False)

        mac_key = os.urandom(64)
        body = {
            "name": "mac",
            "type": "hmac",
            "wrapped_material": b64(ecies.encrypt(wrapping, mac_key)),
        }
        assert on_b.post("/v1/keys/import", json=body).status_code == 201
        answer = on_b.post("/v1/hmac/mac", json={"message": b64(b"m")}).json()
        expected = hmac.digest(mac_key, b"m", "sha256")
        assert base64.b64decode(answer["hmac"]) == b"cipherd:v1:" + expected


def test_a_forged_backup_is_refused_and_the_listing_still_answers(
    instances: tuple[e2e.Server, e2e.Server],
) -> None:
    """A backup of an FE key whose fe_policy is not a policy, from a signer B trusts: once, it
    was stored, and every `GET /v1/keys` after it answered 500."""
    _, b = instances
    with b.client() as on_b:
        recipient = _wrapping_key(on_b)
        key = {
            "name": "fe",
            "type": "ipfe-opt",
            "dimension": 3,
            "curve": "bls12-381",
            "allow_backup": True,
            "fe_policy": {"max_rank": {"$gt": 0}},
        }
        forged = document(recipient, key=key, versions=[fe_version(3)])
        answer = on_b.post("/v1/keys/import", json={"backup": seal(forged, recipient)})
        assert answer.status_code == 422, answer.text
        assert "fe_policy" in answer.json()["detail"]
        listing = on_b.get("/v1/keys")
        assert listing.status_code == 200 and listing.json()["keys"] == []
        assert on_b.get("/v1/keys/fe").status_code == 404
