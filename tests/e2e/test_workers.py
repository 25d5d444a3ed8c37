"""A real `cipherd serve` with two uvicorn workers on one SQLite store."""

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, cpu_ticks, running, workers

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running(tmp_path / "data", workers_count=2) as started:
        yield started


def test_round_trips_through_both_workers(server: Server) -> None:
    url, token = server.url, server.admin_token
    pids = workers(server.process.pid)
    assert len(pids) == 2
    before = {pid: cpu_ticks(pid) for pid in pids}
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(
        f"{url}/v1/keys", headers=headers, json={"name": "shared", "type": "ecies-secp256k1"}
    )
    assert created.status_code == 201

    failures = 0
    # No keep-alive: every request opens a connection, which the kernel hands to either worker.
    no_reuse = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=url, headers=headers, limits=no_reuse) as client:
        for i in range(240):
            plaintext = os.urandom(i % 300)
            sealed = client.post(
                "/v1/ecies/shared/encrypt", json={"plaintext": base64.b64encode(plaintext).decode()}
            )
            opened = client.post(
                "/v1/ecies/shared/decrypt", json={"ciphertext": sealed.json()["ciphertext"]}
            )
            if opened.status_code != 200 or (
                base64.b64decode(opened.json()["plaintext"]) != plaintext
            ):
                failures += 1
    assert failures == 0
    # Both workers did part of the work.
    grown = [cpu_ticks(pid) - before[pid] for pid in pids]
    assert all(ticks > 0 for ticks in grown), grown

    metrics = httpx.get(f"{url}/metrics").text
    assert 'route="/v1/ecies/{name}/decrypt"' in metrics
