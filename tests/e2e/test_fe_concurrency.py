"""Many FE requests at once on two workers: RELIC is serialised per process, results stay right."""

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, cpu_ticks, is_running, running, workers

pytestmark = pytest.mark.e2e

SCHEMES = {"ipfe-opt": 10, "ipfe-kim": 4, "ipfe-tao": 4, "qfe-sgp": 3, "qfe-bcfg": 2}
CLIENTS = 8
REQUESTS_PER_CLIENT = 70  # 560 in all


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running(tmp_path / "data", workers_count=2) as started:
        yield started


def inner(a: list[int], b: list[int]) -> int:
    return sum(x * y for x, y in zip(a, b, strict=True))


def quadratic(x: list[int], f: list[list[int]], y: list[int]) -> int:
    return sum(x[i] * f[i][j] * y[j] for i in range(len(x)) for j in range(len(y)))


def test_mixed_fe_requests_from_eight_clients(server: Server) -> None:
    rng = random.Random(7)
    fixtures = {}
    with server.client() as admin:
        for key_type, n in SCHEMES.items():
            assert (
                admin.post(
                    "/v1/keys", json={"name": key_type, "type": key_type, "dimension": n}
                ).status_code
                == 201
            )
            quad = key_type.startswith("qfe")
            function = (
                [[rng.randint(-3, 3) for _ in range(n)] for _ in range(n)]
                if quad
                else [rng.randint(-9, 9) for _ in range(n)]
            )
            key = admin.post(
                f"/v1/fe/{key_type}/keygen", json={"f": function} if quad else {"y": function}
            ).json()
            fixtures[key_type] = (n, quad, function, key["functional_key"])

    pids = workers(server.process.pid)
    before = {pid: cpu_ticks(pid) for pid in pids}
    wrong: list[str] = []
    done = [0]
    lock = threading.Lock()

    def client_loop(seed: int) -> None:
        local = random.Random(seed)
        limits = httpx.Limits(max_keepalive_connections=0)
        with server.client(limits=limits) as client:
            for _ in range(REQUESTS_PER_CLIENT):
                key_type = local.choice(list(SCHEMES))
                n, quad, function, functional_key = fixtures[key_type]
                x = [local.randint(-9, 9) for _ in range(n)]
                y = [local.randint(-9, 9) for _ in range(n)]
                body = {"x": x, "y": y} if quad else {"x": x}
                expected = quadratic(x, function, y) if quad else inner(x, function)
                ct = client.post(f"/v1/fe/{key_type}/encrypt", json=body)
                # Half the decryptions use a range that excludes the answer: null expected.
                inside = local.random() < 0.5
                bounds = [-2000, 2000] if inside else [expected + 1, expected + 100]
                result = client.post(
                    f"/v1/fe/{key_type}/decrypt",
                    json={
                        "functional_key": functional_key,
                        "ciphertext": ct.json()["ciphertext"],
                        "bounds": bounds,
                    },
                )
                got = (
                    result.json().get("result", "error")
                    if result.status_code == 200
                    else (f"status {result.status_code}")
                )
                if got != (expected if inside else None):
                    with lock:
                        wrong.append(f"{key_type}: {got} != {expected} ({bounds})")
                with lock:
                    done[0] += 2

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert done[0] == CLIENTS * REQUESTS_PER_CLIENT * 2 >= 500
    assert wrong == []
    assert all(cpu_ticks(pid) > before[pid] for pid in pids)


def test_the_fe_pool_takes_decryptions_and_goes_with_its_worker(tmp_path: Path) -> None:
    """One worker with one FE pool process (the default): decryptions of a per-pair scheme,
    never run on the event loop, are the pool process's work; killing the worker outright
    ends the pool process too."""
    with running(tmp_path / "data") as server:
        (pool,) = workers(server.process.pid)  # the pool process, spawned like a worker
        with server.client() as client:
            key = {"name": "fe", "type": "ipfe-bjk", "dimension": 3}
            assert client.post("/v1/keys", json=key).status_code == 201
            functional = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()
            sealed = client.post("/v1/fe/fe/encrypt", json={"x": [3, 2, 1]}).json()
            body = {
                "functional_key": functional["functional_key"],
                "ciphertext": sealed["ciphertext"],
                "bounds": [0, 20],
            }
            before = cpu_ticks(pool)
            for _ in range(10):
                assert client.post("/v1/fe/fe/decrypt", json=body).json() == {"result": 10}
            assert cpu_ticks(pool) > before
        os.kill(server.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while is_running(pool) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not is_running(pool)
