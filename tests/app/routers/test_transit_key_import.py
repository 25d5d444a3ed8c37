"""Transit's key import, refusals and races: an import never lands on a name taken (by a key
made before it or meanwhile, or scheduled for deletion), and of two imports of one name at once
exactly one is taken, with its own material. Interoperation with OpenBao is in
tests/e2e/test_transit_import.py."""

import base64
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from core import keywrap


def vault(client: TestClient) -> TestClient:
    client.headers["X-Vault-Token"] = client.headers.pop("Authorization").removeprefix("Bearer ")
    return client


def wrapped(client: TestClient, material: bytes) -> str:
    pem = client.get("/v1/transit/wrapping_key").json()["data"]["public_key"]
    public = serialization.load_pem_public_key(pem.encode())
    assert isinstance(public, rsa.RSAPublicKey)
    return base64.b64encode(keywrap.wrap(public, material)).decode()


def test_an_import_never_lands_on_a_taken_name(client: TestClient) -> None:
    transit = vault(client)
    transit.post("/v1/transit/keys/made").raise_for_status()
    over = transit.post("/v1/transit/keys/made/import", json={"ciphertext": "AAAA"})
    assert over.status_code == 400 and "existing key" in over.text
    transit.post("/v1/transit/keys/going").raise_for_status()
    transit.post("/v1/transit/keys/going/config", json={"deletion_allowed": True})
    assert transit.delete("/v1/transit/keys/going").status_code == 204
    going = transit.post("/v1/transit/keys/going/import", json={"ciphertext": "AAAA"})
    assert going.status_code == 400 and "scheduled for deletion" in going.text


def _import(
    client: TestClient, name: str, body: dict[str, object], start: threading.Barrier
) -> int:
    start.wait()
    return client.post(f"/v1/transit/keys/{name}/import", json=body).status_code


def test_of_two_imports_of_one_name_at_once_one_is_taken(client: TestClient) -> None:
    transit = vault(client)
    for trial in range(8):
        name = f"raced-{trial}"
        materials = [os.urandom(32), os.urandom(32)]
        bodies = [
            {"ciphertext": wrapped(transit, m), "exportable": True, "allow_plaintext_backup": True}
            for m in materials
        ]
        start = threading.Barrier(2)
        with ThreadPoolExecutor(2) as pool:
            sent = [pool.submit(_import, transit, name, body, start) for body in bodies]
            statuses = [future.result() for future in sent]
        assert sorted(statuses) == [204, 400], (trial, statuses)
        exported = transit.get(f"/v1/transit/export/encryption-key/{name}/1").json()["data"]
        winner = materials[statuses.index(204)]
        assert base64.b64decode(exported["keys"]["1"]) == winner
