"""Key lifecycle across replicas on one PostgreSQL: a deletion window that ends while two
replicas of two workers run is one destruction; one that ends while the service is down is
carried out when it starts again."""

import base64
import itertools
import secrets
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kms import credentials, kms_client
from tests.e2e.server import restart, running, start

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def _env(postgres_url: str) -> dict[str, str]:
    return {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        "CIPHERD_ADMIN_TOKEN": "replica-admin-" + secrets.token_urlsafe(16),
        "CIPHERD_DELETION_MIN_WINDOW_SECONDS": "0",
        "CIPHERD_MAINTENANCE_SECONDS": "0.3",
        "CIPHERD_KEY_CACHE_SECONDS": "0.5",
    }


def _until(check: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_window_ending_under_two_replicas_destroys_once(
    tmp_path: Path, postgres_url: str
) -> None:
    env = _env(postgres_url)
    with (
        running(tmp_path / "a", env=env, workers_count=2) as first,
        running(tmp_path / "b", env=env, workers_count=2) as second,
        first.client() as on_a,
        second.client() as on_b,
    ):
        for index in range(4):
            assert (
                on_a.post("/v1/keys", json={"name": f"k{index}", "type": "aez"}).status_code == 201
            )
            window = {"window_seconds": 2}
            assert on_b.delete(f"/v1/keys/k{index}", params=window).status_code == 202
        _until(lambda: all(on_a.get(f"/v1/keys/k{i}").status_code == 404 for i in range(4)))
        time.sleep(1)  # every process has had its passes since
        records = on_b.get("/v1/audit", params={"operation": "keys_destroy_key"}).json()
        assert sorted(r["key"] for r in records["records"]) == ["k0", "k1", "k2", "k3"]
        assert {r["principal"] for r in records["records"]} == {"system"}
        assert on_b.post("/v1/keys", json={"name": "k0", "type": "aez"}).status_code == 201


def test_a_window_that_ends_while_the_service_is_down_is_kept(
    tmp_path: Path, postgres_url: str
) -> None:
    env = _env(postgres_url)
    server = start(tmp_path / "a", env=env)
    try:
        with server.client() as client:
            assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
            assert client.delete("/v1/keys/k", params={"window_seconds": 3}).status_code == 202
        server.kill()
        time.sleep(3.5)
        server = restart(server)
        with server.client() as client:
            _until(lambda: client.get("/v1/keys/k").status_code == 404)
            assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
    finally:
        server.stop()


def test_automatic_rotation_is_once_per_period_across_replicas_and_workers(
    tmp_path: Path, postgres_url: str
) -> None:
    env = _env(postgres_url) | {
        "CIPHERD_MAINTENANCE_SECONDS": "0.2",
        "CIPHERD_MIN_AUTO_ROTATE_SECONDS": "1",
    }
    period = 2
    with (
        running(tmp_path / "a", env=env, workers_count=2) as first,
        running(tmp_path / "b", env=env, workers_count=2) as second,
        first.client() as on_a,
        second.client() as on_b,
    ):
        assert on_a.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        started = time.time()
        patched = on_b.patch("/v1/keys/k", json={"auto_rotate_seconds": period})
        assert patched.status_code == 200
        time.sleep(7.2)
        on_a.patch("/v1/keys/k", json={"auto_rotate_seconds": 0})
        elapsed = time.time() - started
        versions = on_a.get("/v1/keys/k").json()["versions"]
    made = [datetime.fromisoformat(v["created_at"]).timestamp() for v in versions]
    gaps = [b - a for a, b in itertools.pairwise(made)]
    assert all(gap >= period - 0.01 for gap in gaps), gaps  # never twice in one period
    assert (
        len(versions) - 1 == int(elapsed // period)
        or len(versions) - 1 == int(elapsed // period) - 1
    ), (len(versions), elapsed)


def test_a_disabling_is_answered_once_no_replica_uses_the_key(
    tmp_path: Path, postgres_url: str
) -> None:
    """A key disabled through one replica (natively or by KMS's DisableKey) is answered once
    the other replicas' key caches have run out, as a deletion is: then no use of it succeeds
    anywhere. The answer came at once, and the other replica went on encrypting for up to
    CIPHERD_KEY_CACHE_SECONDS after it."""
    env = {**_env(postgres_url), "CIPHERD_KEY_CACHE_SECONDS": "1.5"}
    with (
        running(tmp_path / "a", env=env) as first,
        running(tmp_path / "b", env=env) as second,
        first.client() as on_a,
        second.client() as on_b,
    ):
        assert on_a.post("/v1/keys", json={"name": "off", "type": "aez"}).status_code == 201
        plaintext = {"plaintext": "aGk="}
        assert on_b.post("/v1/aez/off/encrypt", json=plaintext).status_code == 200  # cached
        asked = time.monotonic()
        assert on_a.patch("/v1/keys/off", json={"enabled": False}).status_code == 200
        assert time.monotonic() - asked >= 1.5
        refused = on_b.post("/v1/aez/off/encrypt", json=plaintext)
        assert (refused.status_code, refused.json()["type"]) == (
            409,
            "urn:cipherd:problem:key-disabled",
        )
        assert on_a.patch("/v1/keys/off", json={"enabled": True}).status_code == 200
        time.sleep(1.5)
        assert on_b.post("/v1/aez/off/encrypt", json=plaintext).status_code == 200  # cached
        kms = kms_client(first, credentials(first))
        asked = time.monotonic()
        kms.disable_key(KeyId="off")
        assert time.monotonic() - asked >= 1.5
        assert on_b.post("/v1/aez/off/encrypt", json=plaintext).status_code == 409
