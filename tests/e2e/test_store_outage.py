"""A PostgreSQL cluster of the test's own stopped under a running `cipherd serve`: every verb on
a key used a moment before serves from the worker's memory, for the admin token and for a scoped
token used then, while what needs the store answers 503 with Retry-After within a second; once
the cluster is back, everything serves again and the records of what was served meanwhile are
in the store.

(tests/e2e/test_database_outage.py does the same to the machine's own PostgreSQL server, for a
run where nothing else uses it.)
"""

import base64
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e import clusters
from tests.e2e.server import Server, running, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not clusters.available(), reason="PostgreSQL's server binaries"),
]

KEY_CACHE_SECONDS = 1.0
# Fast, not at the end of a wait: under the store's connect timeout (3 s), with room for a
# loaded machine (the first refusal, which finds the outage, took 1.2 s on a busy 2-core one;
# the others 0.25 s).
FAIL_SECONDS = 2.0
MESSAGE = b"served from memory"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def cluster() -> Iterator[clusters.Cluster]:
    with clusters.cluster() as made:
        yield made


@pytest.fixture
def server(tmp_path: Path, cluster: clusters.Cluster) -> Iterator[Server]:
    env = {
        "CIPHERD_DATABASE_URL": cluster.url(),
        "CIPHERD_KEY_CACHE_SECONDS": str(KEY_CACHE_SECONDS),
        "CIPHERD_ROOT_KEY": b64(os.urandom(32)),
    }
    with running(tmp_path / "data", env=env) as started:
        yield started


KEYS = {
    "aez": {"type": "aez"},
    "ecies": {"type": "ecies-secp256k1"},
    "ed": {"type": "ed25519"},
    "ecdsa": {"type": "ecdsa-secp256k1"},
    "mac": {"type": "hmac"},
    "fe": {"type": "ipfe-opt", "dimension": 3},
    "older": {"type": "aez"},  # rotated: its version 1 decrypts a ciphertext made before
}
SCOPE = ["encrypt", "decrypt", "sign", "verify", "hmac"]


def _ok(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _made(client: httpx.Client) -> dict[str, Any]:
    """What each key makes: the inputs of the verbs that take them back."""
    message = {"message": b64(MESSAGE)}
    return {
        "aez": _ok(client.post("/v1/aez/aez/encrypt", json={"plaintext": b64(MESSAGE)})),
        "aez-bare": _ok(
            client.post("/v1/aez/aez/encrypt", json={"plaintext": b64(MESSAGE), "envelope": False})
        ),
        "ecies": _ok(client.post("/v1/ecies/ecies/encrypt", json={"plaintext": b64(MESSAGE)})),
        "ed": _ok(client.post("/v1/sign/ed", json=message)),
        "ecdsa": _ok(client.post("/v1/sign/ecdsa", json=message)),
        "mac": _ok(client.post("/v1/hmac/mac", json=message)),
        "fe-ct": _ok(client.post("/v1/fe/fe/encrypt", json={"x": [1, 2, 3]})),
    }


def _every_verb(client: httpx.Client, made: dict[str, Any], functional_key: str) -> None:
    """Every verb on the keys, on what `made` holds; each must answer 200 and be right."""
    message = {"message": b64(MESSAGE)}

    def opened(answer: httpx.Response) -> None:
        assert base64.b64decode(_ok(answer)["plaintext"]) == MESSAGE

    for sealed in (made["aez"], _made(client)["aez"]):  # made before, and made now
        opened(client.post("/v1/aez/aez/decrypt", json={"ciphertext": sealed["ciphertext"]}))
        with_version = {"ciphertext": sealed["ciphertext"], "key_version": 1}
        opened(client.post("/v1/aez/aez/decrypt", json=with_version))
        rewrapped = _ok(
            client.post("/v1/aez/aez/rewrap", json={"ciphertext": sealed["ciphertext"]})
        )
        opened(client.post("/v1/aez/aez/decrypt", json={"ciphertext": rewrapped["ciphertext"]}))
    bare = {"ciphertext": made["aez-bare"]["ciphertext"]}
    opened(client.post("/v1/aez/aez/decrypt", json=bare))
    batch = {"items": [{"ciphertext": made["aez"]["ciphertext"]}] * 3}
    results = _ok(client.post("/v1/aez/aez/decrypt/batch", json=batch))["results"]
    assert [base64.b64decode(r["plaintext"]) for r in results] == [MESSAGE] * 3
    datakey = _ok(client.post("/v1/aez/aez/datakey", json={}))
    assert datakey["ciphertext"]
    opened(client.post("/v1/aez/older/decrypt", json={"ciphertext": made["older"]}))
    opened(client.post("/v1/ecies/ecies/decrypt", json={"ciphertext": made["ecies"]["ciphertext"]}))
    rewrapped = _ok(
        client.post("/v1/ecies/ecies/rewrap", json={"ciphertext": made["ecies"]["ciphertext"]})
    )
    opened(client.post("/v1/ecies/ecies/decrypt", json={"ciphertext": rewrapped["ciphertext"]}))
    raw = client.post(
        "/v1/ecies/ecies/encrypt/raw",
        content=MESSAGE,
        headers={"content-type": "application/octet-stream"},
    )
    assert raw.status_code == 200, raw.text
    back = client.post(
        "/v1/ecies/ecies/decrypt/raw",
        content=raw.content,
        headers={"content-type": "application/octet-stream"},
    )
    assert back.status_code == 200 and back.content == MESSAGE
    for name in ("ed", "ecdsa"):
        signature = {**message, "signature": made[name]["signature"]}
        assert _ok(client.post(f"/v1/verify/{name}", json=signature))["valid"] is True
        fresh = _ok(client.post(f"/v1/sign/{name}", json=message))
        assert _ok(client.post(f"/v1/verify/{name}", json={**message, **fresh}))["valid"] is True
    checked = {**message, "hmac": made["mac"]["hmac"]}
    assert _ok(client.post("/v1/hmac/mac/verify", json=checked))["valid"] is True
    assert _ok(client.post("/v1/hmac/mac", json=message))["hmac"] == made["mac"]["hmac"]
    decryption = {
        "functional_key": functional_key,
        "ciphertext": made["fe-ct"]["ciphertext"],
        "bounds": [0, 100],
    }
    assert _ok(client.post("/v1/fe/fe/decrypt", json=decryption))["result"] == 1 + 4 + 9
    fresh_ct = _ok(client.post("/v1/fe/fe/encrypt", json={"x": [2, 0, 1]}))["ciphertext"]
    decryption["ciphertext"] = fresh_ct
    assert _ok(client.post("/v1/fe/fe/decrypt", json=decryption))["result"] == 2 + 3


def _fails_fast(call: Callable[[], httpx.Response]) -> float:
    started = time.monotonic()
    answer = call()
    seconds = time.monotonic() - started
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["type"] == "urn:cipherd:problem:store-unavailable"
    return seconds


def test_every_verb_on_a_hot_key_rides_out_an_outage(
    server: Server, cluster: clusters.Cluster
) -> None:
    with server.client() as client:
        for name, body in KEYS.items():
            created = client.post("/v1/keys", json={"name": name, **body})
            assert created.status_code == 201, created.text
        assert client.post("/v1/keys", json={"name": "cold", "type": "aez"}).status_code == 201
        older = _ok(client.post("/v1/aez/older/encrypt", json={"plaintext": b64(MESSAGE)}))
        assert client.post("/v1/keys/older/rotate").status_code == 200
        scope = {"keys": list(KEYS), "operations": SCOPE}
        token = client.post("/v1/tokens", json=scope).json()["token"]
        functional_key = _ok(client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}))
        with server.client(token) as scoped:
            made = {**_made(client), "older": older["ciphertext"]}
            # Each verb once before the outage, as a client would: the keys it reads (and the
            # scoped token) are in the worker's memory now.
            for caller in (client, scoped):
                _every_verb(caller, made, functional_key["functional_key"])

            cluster.stop()
            stopped = time.monotonic()
            try:
                # Past the key cache's time (1 s): what serves now is the outage's grace.
                time.sleep(KEY_CACHE_SECONDS + 0.5)
                for caller in (client, scoped):
                    _every_verb(caller, made, functional_key["functional_key"])
                # What needs the store answers 503 with Retry-After within a second.
                seconds = [
                    _fails_fast(
                        lambda: client.post("/v1/keys", json={"name": "new", "type": "aez"})
                    ),
                    _fails_fast(lambda: client.get("/v1/keys/aez")),
                    _fails_fast(lambda: client.get("/v1/keys")),
                    _fails_fast(lambda: client.post("/v1/keys/aez/rotate")),
                    _fails_fast(
                        lambda: client.post("/v1/aez/cold/encrypt", json={"plaintext": ""})
                    ),
                    _fails_fast(lambda: client.post("/v1/fe/fe/keygen", json={"y": [1, 0, 0]})),
                    _fails_fast(lambda: client.post("/v1/tokens", json=scope)),
                ]
                assert max(seconds) < FAIL_SECONDS, seconds
                ready = client.get("/readyz")
                assert ready.status_code == 503
                print(f"503 in {min(seconds):.3f}-{max(seconds):.3f} s")
            finally:
                cluster.start()
            outage = time.monotonic() - stopped
            wait_for(lambda: client.get("/readyz").status_code == 200, what="ready again")
            # Everything serves again; what failed stored nothing.
            assert client.get("/v1/keys/new").status_code == 404
            assert client.post("/v1/keys", json={"name": "new", "type": "aez"}).status_code == 201
            assert client.post("/v1/keys/aez/rotate").status_code == 200
            assert client.post("/v1/aez/cold/encrypt", json={"plaintext": ""}).status_code == 200
            # The records of what was served during the outage reached the store.
            listed = client.get("/v1/audit", params={"key": "ed", "operation": "verify_verify"})
            verified = [r for r in listed.json()["records"] if r["status"] == 200]
            assert len(verified) >= 4 * 2, (outage, listed.json())
