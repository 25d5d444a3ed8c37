"""A real `cipherd serve` with two uvicorn workers on one SQLite store."""

import base64
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def workers(pid: int) -> list[int]:
    """The uvicorn worker processes under a `cipherd serve` process."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    children = [int(p) for p in path.read_text().split()] if path.exists() else []
    return [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, subprocess.Popen]]:
    port = free_port()
    env = {**os.environ, "CIPHERD_DATA_DIR": str(tmp_path / "data"), "CIPHERD_LOG_LEVEL": "WARNING"}
    env.pop("CIPHERD_ADMIN_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if (
                httpx.get(f"{url}/readyz", timeout=1).status_code == 200
                and len(workers(process.pid)) >= 2
            ):
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(f"server did not start: {process.stdout.read().decode()[-2000:]}")
    token = (tmp_path / "data" / "admin-token").read_text().strip()
    yield url, token, process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def test_round_trips_through_both_workers(server: tuple[str, str, subprocess.Popen]) -> None:
    url, token, process = server
    pids = workers(process.pid)
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
