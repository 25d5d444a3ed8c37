"""Ciphertexts that know their version: the envelope by default, bare payloads tried from the
newest version down (boundedly, never for AEZ with a short tag), key_version used exactly;
eciespy and the npm package aez read the bare form. SQLite and PostgreSQL."""

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ecies as eciespy
import pytest
from ecies.config import Config as PyConfig
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops import envelope
from app.settings import Settings
from tests.conftest import ADMIN_TOKEN, STORES

INTEROP = Path(__file__).resolve().parents[2] / "interop"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(params=STORES)
def settings_for(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url)


@pytest.fixture
def admin(settings_for: Settings) -> Iterator[TestClient]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings_for), headers=headers) as client:
        yield client


def _post(client: TestClient, path: str, expect: int = 200, **body: Any) -> dict[str, Any]:
    answer = client.post(path, json=body)
    assert answer.status_code == expect, answer.text
    return answer.json()


def test_the_envelope_format() -> None:
    assert envelope.seal(3, b"\x04abc") == b"cipherd:v3:\x04abc"
    assert envelope.parse(b"cipherd:v12:xyz") == (12, b"xyz")
    for bare in (b"cipherd:v0:x", b"cipherd:v01:x", b"cipherd:v3x", b"\x04cipherd:v3:", b""):
        assert envelope.parse(bare) == (None, bare)


def test_a_payload_from_before_three_rotations_decrypts_without_its_version(
    admin: TestClient,
) -> None:
    _post(admin, "/v1/keys", 201, name="k", type="ecies-secp256k1")
    public = base64.b64decode(admin.get("/v1/keys/k/public").json()["public_key"])
    enveloped = _post(admin, "/v1/ecies/k/encrypt", plaintext=b64(b"enveloped"))
    by_eciespy = eciespy.encrypt(public.hex(), b"made by eciespy")  # bare, to version 1
    for _ in range(3):
        admin.post("/v1/keys/k/rotate")
    opened = _post(admin, "/v1/ecies/k/decrypt", ciphertext=enveloped["ciphertext"])
    assert (opened["plaintext"], opened["key_version"]) == (b64(b"enveloped"), 1)
    opened = _post(admin, "/v1/ecies/k/decrypt", ciphertext=b64(by_eciespy))
    assert (opened["plaintext"], opened["key_version"]) == (b64(b"made by eciespy"), 1)
    raw = admin.post(
        "/v1/ecies/k/decrypt",
        content=by_eciespy,
        headers={"content-type": "application/octet-stream"},
    )
    assert (raw.content, raw.headers["cipherd-key-version"]) == (b"made by eciespy", "1")
    admin.patch("/v1/keys/k", json={"min_decryption_version": 2})
    for payload in (enveloped["ciphertext"], b64(by_eciespy)):
        refused = admin.post("/v1/ecies/k/decrypt", json={"ciphertext": payload})
        assert refused.status_code == 400, refused.text
    assert (
        "version-too-old"
        in admin.post("/v1/ecies/k/decrypt", json={"ciphertext": enveloped["ciphertext"]}).json()[
            "type"
        ]
    )


def test_bare_payloads_are_tried_a_bounded_number_of_versions(
    tmp_path: Path, settings_for: Settings
) -> None:
    bounded = settings_for.model_copy(update={"bare_payload_versions": 2})
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(bounded), headers=headers) as admin:
        _post(admin, "/v1/keys", 201, name="a", type="aez")
        bare = _post(admin, "/v1/aez/a/encrypt", plaintext=b64(b"old"), envelope=False)
        admin.post("/v1/keys/a/rotate")
        assert _post(admin, "/v1/aez/a/decrypt", ciphertext=bare["ciphertext"])["key_version"] == 1
        admin.post("/v1/keys/a/rotate")
        refused = _post(admin, "/v1/aez/a/decrypt", 400, ciphertext=bare["ciphertext"])
        assert refused["detail"].startswith(
            "authentication failed with versions 3 down to 2 of key 'a'"
        )
        exact = _post(admin, "/v1/aez/a/decrypt", ciphertext=bare["ciphertext"], key_version=1)
        assert exact["plaintext"] == b64(b"old")


def test_short_aez_tags_are_never_tried_against_several_versions(admin: TestClient) -> None:
    _post(admin, "/v1/keys", 201, name="a", type="aez")
    body = {"plaintext": b64(b"short tag"), "tau": 4, "envelope": False}
    bare = _post(admin, "/v1/aez/a/encrypt", **body)
    # One version: nothing to choose between.
    assert _post(admin, "/v1/aez/a/decrypt", ciphertext=bare["ciphertext"], tau=4)["key_version"]
    admin.post("/v1/keys/a/rotate")
    refused = _post(admin, "/v1/aez/a/decrypt", 422, ciphertext=bare["ciphertext"], tau=4)
    assert "tau 4" in refused["detail"]
    exact = _post(admin, "/v1/aez/a/decrypt", ciphertext=bare["ciphertext"], tau=4, key_version=1)
    assert exact["plaintext"] == b64(b"short tag")
    # The envelope names the version whatever tau is.
    sealed = _post(admin, "/v1/aez/a/encrypt", plaintext=b64(b"x"), tau=4)
    assert (
        _post(admin, "/v1/aez/a/decrypt", ciphertext=sealed["ciphertext"], tau=4)["key_version"]
        == 2
    )


def test_batches_envelope_each_item_as_asked(admin: TestClient) -> None:
    _post(admin, "/v1/keys", 201, name="e", type="ecies-x25519")
    items = [{"plaintext": b64(b"a")}, {"plaintext": b64(b"b"), "envelope": False}]
    sealed = _post(admin, "/v1/ecies/e/encrypt/batch", items=items)["results"]
    first, second = (base64.b64decode(r["ciphertext"]) for r in sealed)
    assert first.startswith(b"cipherd:v1:") and not second.startswith(b"cipherd:")
    admin.post("/v1/keys/e/rotate")
    opened = _post(
        admin,
        "/v1/ecies/e/decrypt/batch",
        items=[{"ciphertext": r["ciphertext"]} for r in sealed],
    )["results"]
    assert [(r["plaintext"], r["key_version"]) for r in opened] == [
        (b64(b"a"), 1),
        (b64(b"b"), 1),
    ]


def test_bare_bytes_are_what_eciespy_and_the_npm_aez_package_read(admin: TestClient) -> None:
    _post(admin, "/v1/keys", 201, name="k", type="ecies-secp256k1", exportable=True)
    _post(admin, "/v1/keys", 201, name="a", type="aez", exportable=True)
    secret = base64.b64decode(admin.get("/v1/keys/k/export").json()["secret"])
    bare = _post(admin, "/v1/ecies/k/encrypt", plaintext=b64(b"to eciespy"), envelope=False)
    payload = base64.b64decode(bare["ciphertext"])
    assert eciespy.decrypt(secret, payload, config=PyConfig()) == b"to eciespy"
    aez_key = base64.b64decode(admin.get("/v1/keys/a/export").json()["secret"])
    nonce = b"0123456789ab"
    sealed = _post(
        admin,
        "/v1/aez/a/encrypt",
        plaintext=b64(b"to npm aez"),
        nonce=b64(nonce),
        envelope=False,
    )
    case = {
        "key": aez_key.hex(),
        "nonce": nonce.hex(),
        "ad": None,
        "tau": 16,
        "data": base64.b64decode(sealed["ciphertext"]).hex(),
    }
    done = subprocess.run(
        ["node", str(INTEROP / "aez_peer.js")],
        input=json.dumps({"op": "decrypt", "cases": [case]}),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=INTEROP,
        check=True,
    )
    assert bytes.fromhex(json.loads(done.stdout)["results"][0]) == b"to npm aez"
