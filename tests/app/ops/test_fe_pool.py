"""FE decryptions in the pool processes (CIPHERD_FE_PROCESSES): the same answers and the same
refusals as in the worker, and a pool process that dies is replaced."""

import asyncio
import base64
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops.errors import Problem
from app.settings import Settings
from core.fe.schemes import SCHEMES
from tests.conftest import ADMIN_TOKEN


@pytest.fixture
def pooled(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, fe_processes=1)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        yield client


def pool_processes() -> list[multiprocessing.process.BaseProcess]:
    return [p for p in multiprocessing.active_children() if p.pid != os.getpid()]


def fixture(client: TestClient, name: str, key_type: str, y: list[int], x: list[int]) -> dict:
    created = client.post("/v1/keys", json={"name": name, "type": key_type, "dimension": len(y)})
    assert created.status_code == 201, created.text
    key = client.post(f"/v1/fe/{name}/keygen", json={"y": y}).json()["functional_key"]
    ct = client.post(f"/v1/fe/{name}/encrypt", json={"x": x}).json()["ciphertext"]
    return {"functional_key": key, "ciphertext": ct, "bounds": [-100, 100]}


@pytest.mark.parametrize("key_type", ["ipfe-opt", "ipfe-tao", "ipfe-bjk"])
def test_the_pool_decrypts_and_refuses_as_the_worker_does(
    pooled: TestClient, key_type: str
) -> None:
    body = fixture(pooled, "fe", key_type, [1, 2, 3], [4, -5, 6])
    assert len(pool_processes()) == 1  # started with the app
    # A first decryption is cold (no table, no decoded key): the pool's.
    assert pooled.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 12}
    assert pooled.post("/v1/fe/fe/decrypt", json={**body, "bounds": [13, 20]}).json() == {
        "result": None
    }
    other = fixture(pooled, "other", key_type, [1, 1, 1], [1, 1, 1])
    mixed = pooled.post("/v1/fe/fe/decrypt", json={**body, "ciphertext": other["ciphertext"]})
    assert mixed.status_code == 422
    assert mixed.json()["type"] == "urn:cipherd:problem:key-mismatch"
    truncated = body["ciphertext"][:-8] + "AAAAAAA="
    broken = pooled.post("/v1/fe/fe/decrypt", json={**body, "ciphertext": truncated})
    assert broken.status_code == 422 and broken.json()["type"].endswith(":invalid-input")


def test_a_pool_process_that_dies_is_replaced(pooled: TestClient) -> None:
    body = fixture(pooled, "fe", "ipfe-bjk", [1, 2], [3, 4])  # bjk: never inline
    assert pooled.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 11}
    (process,) = pool_processes()
    dead = process.pid
    os.kill(dead, signal.SIGKILL)
    process.join(10)
    answer = pooled.post("/v1/fe/fe/decrypt", json=body)
    assert answer.status_code == 503 and answer.headers["Retry-After"]
    assert answer.json()["type"] == "urn:cipherd:problem:fe-pool-restarting"
    assert pooled.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 11}
    assert [p.pid for p in pool_processes()] != [dead]


def test_a_closed_pool_starts_nothing_again(tmp_path: Path) -> None:
    """After the worker's shutdown closed its pool, a decryption still under way is answered
    503 and leaves no process behind."""
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, fe_processes=1)
    with TestClient(create_app(settings), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
        body = fixture(c, "fe", "ipfe-bjk", [1, 2], [3, 4])  # bjk: never inline
        services = c.app.state.services  # type: ignore[attr-defined]
        pool = services.fe.pool
        pool.close()
        assert pool_processes() == []
        answer = c.post("/v1/fe/fe/decrypt", json=body)
        assert answer.status_code == 503
        assert answer.json()["type"] == "urn:cipherd:problem:shutting-down"
        assert pool_processes() == []


def _kill(process: multiprocessing.process.BaseProcess) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.join(10)


def test_a_warm_small_decryption_is_the_workers_own(pooled: TestClient) -> None:
    """The first decryptions under an opt key are cold: the pool's, and each warms the worker's
    own table and prepared key in the background. Once warm, the same decryption runs on the
    worker's event loop without the pool: it answers with the pool process gone."""
    body = fixture(pooled, "fe", "ipfe-opt", [1, 2, 3], [4, -5, 6])
    caches = pooled.app.state.services.fe.caches  # type: ignore[attr-defined]
    key = base64.b64decode(body["functional_key"])

    def warm() -> bool:
        return SCHEMES["ipfe-opt"].decryptor_for(caches.warm, key, -100, 100) is not None

    deadline = time.monotonic() + 30
    while not warm():
        assert time.monotonic() < deadline, "the worker's caches never warmed"
        assert pooled.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 12}
        time.sleep(0.05)
    _kill(pool_processes()[0])
    for _ in range(3):
        assert pooled.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 12}


def test_decryptions_that_arrive_together_share_the_pool(pooled: TestClient) -> None:
    """Two warm decryptions started in one turn of the event loop: the first runs on it, the
    second goes to the idle pool process. That process is killed first, so where each went
    shows in its answer: a value, and the pool's 503."""
    body = fixture(pooled, "fe", "ipfe-opt", [1, 2, 3], [4, -5, 6])
    services = pooled.app.state.services  # type: ignore[attr-defined]
    key, ct = (base64.b64decode(body[field]) for field in ("functional_key", "ciphertext"))
    job = services.fe.decryption(services.keyring.material("fe"), key, [-100, 100])
    for _ in range(2):  # decoded, then prepared
        job.built(services.fe.caches)(ct)
    _kill(pool_processes()[0])

    async def together() -> list[object]:
        one = services.fe.decrypt("fe", key, ct, [-100, 100], None)
        two = services.fe.decrypt("fe", key, ct, [-100, 100], None)
        return await asyncio.gather(one, two, return_exceptions=True)

    first, second = pooled.portal.call(together)  # type: ignore[union-attr]
    assert first == 12
    assert isinstance(second, Problem) and second.status == 503
