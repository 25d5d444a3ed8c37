"""FE decryptions in the pool processes (CIPHERD_FE_PROCESSES): the same answers and the same
refusals as in the worker, and a pool process that dies is replaced."""

import multiprocessing
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
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
    os.kill(process.pid, signal.SIGKILL)
    process.join(10)
    answer = pooled.post("/v1/fe/fe/decrypt", json=body)
    assert answer.status_code == 503 and answer.headers["Retry-After"]
    assert answer.json()["type"] == "urn:cipherd:problem:fe-pool-restarting"
    assert pooled.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 11}
    assert [p.pid for p in pool_processes()] != [process.pid]
