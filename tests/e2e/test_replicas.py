"""Two `cipherd serve` replicas on one PostgreSQL database, as in a deployment behind a balancer.

Both take the root key and the admin token from the environment and share nothing but the
database: a key made on one must work on the other, a rotation must reach the other within
CIPHERD_KEY_CACHE_SECONDS, and rotations racing on both must all land as distinct versions.
"""

import base64
import os
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from core import ecies
from tests.e2e.server import Server, running

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

KEY_CACHE_SECONDS = 1.0
# What a request may add to the cache bound on a loaded 2-core machine.
REQUEST_SLACK_SECONDS = 0.5


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[tuple[Server, Server]]:
    env = {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY": b64(secrets.token_bytes(32)),
        "CIPHERD_ADMIN_TOKEN": "replica-admin-" + secrets.token_urlsafe(16),
        "CIPHERD_KEY_CACHE_SECONDS": str(KEY_CACHE_SECONDS),
    }
    with (
        running(tmp_path / "a", env=env) as first,
        running(tmp_path / "b", env=env) as second,
    ):
        assert first.url != second.url
        yield first, second


def create_key(client: httpx.Client, name: str, key_type: str) -> dict:
    response = client.post("/v1/keys", json={"name": name, "type": key_type})
    assert response.status_code == 201, response.text
    return response.json()


def test_key_made_on_one_replica_works_on_the_other_at_once(
    replicas: tuple[Server, Server],
) -> None:
    a, b = replicas
    with a.client() as on_a, b.client() as on_b:
        for name, key_type, family in (
            ("orders", "ecies-secp256k1", "ecies"),
            ("sessions", "aez", "aez"),
        ):
            create_key(on_a, name, key_type)
            plaintext = os.urandom(100)
            sealed = on_a.post(f"/v1/{family}/{name}/encrypt", json={"plaintext": b64(plaintext)})
            assert sealed.status_code == 200, sealed.text
            opened = on_b.post(
                f"/v1/{family}/{name}/decrypt", json={"ciphertext": sealed.json()["ciphertext"]}
            )
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext
            assert on_b.get(f"/v1/keys/{name}").json()["latest_version"] == 1


def test_rotation_on_one_replica_reaches_the_other_within_the_cache_bound(
    replicas: tuple[Server, Server],
) -> None:
    a, b = replicas
    with a.client() as on_a, b.client() as on_b:
        create_key(on_a, "rotating", "aez")

        def version_used_by_b() -> int:
            response = on_b.post("/v1/aez/rotating/encrypt", json={"plaintext": b64(b"x")})
            assert response.status_code == 200, response.text
            return response.json()["key_version"]

        assert version_used_by_b() == 1  # B now holds version 1 in its cache
        rotated = on_a.post("/v1/keys/rotating/rotate")
        assert rotated.status_code == 200 and rotated.json()["latest_version"] == 2
        started = time.monotonic()
        while version_used_by_b() != 2:
            assert time.monotonic() - started < 10 * KEY_CACHE_SECONDS, "rotation never seen"
            time.sleep(0.02)
        lag = time.monotonic() - started
        assert lag <= KEY_CACHE_SECONDS + REQUEST_SLACK_SECONDS, lag
        # An explicit version is read from the store when not cached: no lag at all.
        sealed = on_a.post("/v1/aez/rotating/encrypt", json={"plaintext": b64(b"y")}).json()
        assert sealed["key_version"] == 2
        opened = on_b.post(
            "/v1/aez/rotating/decrypt", json={"ciphertext": sealed["ciphertext"], "key_version": 2}
        )
        assert opened.status_code == 200 and base64.b64decode(opened.json()["plaintext"]) == b"y"


def test_concurrent_rotations_on_both_replicas_give_consecutive_versions(
    replicas: tuple[Server, Server],
) -> None:
    a, b = replicas
    rotations = 50
    with a.client() as on_a, b.client() as on_b:
        create_key(on_a, "hot", "ecies-secp256k1")
        clients = (on_a, on_b)

        def rotate(i: int) -> int:
            response = clients[i % 2].post("/v1/keys/hot/rotate")
            assert response.status_code == 200, response.text
            return response.json()["latest_version"]

        def encrypt(i: int) -> tuple[bytes, dict]:
            plaintext = i.to_bytes(2, "big") + os.urandom(30)
            response = clients[i % 2].post(
                "/v1/ecies/hot/encrypt", json={"plaintext": b64(plaintext)}
            )
            assert response.status_code == 200, response.text
            return plaintext, response.json()

        with ThreadPoolExecutor(max_workers=16) as pool:
            rotated = pool.map(rotate, range(rotations))
            sealed = pool.map(encrypt, range(rotations))
            versions = sorted(rotated)
            messages = list(sealed)

        assert versions == list(range(2, rotations + 2))  # distinct, consecutive, none lost
        listed = on_b.get("/v1/keys/hot").json()
        assert [v["version"] for v in listed["versions"]] == list(range(1, rotations + 2))

        # What was encrypted during the storm decrypts under the version it reported.
        for i, (plaintext, response) in enumerate(messages):
            opened = clients[(i + 1) % 2].post(
                "/v1/ecies/hot/decrypt",
                json={"ciphertext": response["ciphertext"], "key_version": response["key_version"]},
            )
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext

        # Every version is its own key pair, and its secret opens what its public part sealed.
        publics = set()
        for version in range(1, rotations + 2):
            client = clients[version % 2]
            public = client.get("/v1/keys/hot/public", params={"version": version})
            assert public.status_code == 200, public.text
            public_key = base64.b64decode(public.json()["public_key"])
            publics.add(public_key)
            plaintext = f"version {version}".encode()
            payload = ecies.encrypt(public_key, plaintext, ecies.Config())
            opened = clients[(version + 1) % 2].post(
                "/v1/ecies/hot/decrypt", json={"ciphertext": b64(payload), "key_version": version}
            )
            assert opened.status_code == 200, opened.text
            assert base64.b64decode(opened.json()["plaintext"]) == plaintext
        assert len(publics) == rotations + 1
