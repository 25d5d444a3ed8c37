"""A real `cipherd serve` with two uvicorn workers on one SQLite store, and its supervisor:
a listening socket per worker, restarts, a port in use, port 0."""

import base64
import http.client
import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.e2e.server import (
    Server,
    connections_by_process,
    cpu_ticks,
    is_running,
    listeners,
    running,
    serve_process,
    wait_for,
    workers,
)

pytestmark = pytest.mark.e2e
INFO = {"CIPHERD_LOG_LEVEL": "INFO"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    # FE decryptions in the workers themselves: their caches are what /metrics reports, and
    # what a dead worker's figures must leave.
    env = {"CIPHERD_FE_PROCESSES": "0"}
    with running(tmp_path / "data", workers_count=2, env=env) as started:
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


def test_each_worker_listens_and_keep_alive_connections_spread(server: Server) -> None:
    """With one shared accept queue, 32 connections to 2 workers split 0/32 in 2 of 8 tries;
    with a socket per worker the kernel hashes each connection to one of them."""
    port = urlsplit(server.url).port
    assert port is not None
    pids = workers(server.process.pid)
    connections = []
    try:
        for _ in range(64):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", "/healthz")
            assert connection.getresponse().read() == b'{"status":"ok"}'
            connections.append(connection)  # kept open: keep-alive, as a pool would
        counts = connections_by_process(port, pids)
    finally:
        for connection in connections:
            connection.close()
    assert sum(counts.values()) == 64, counts
    # Binomial(64, 1/2): below 8 on either side has probability about 2e-10.
    assert min(counts.values()) >= 8, counts


def test_a_dead_worker_is_replaced_and_stop_is_clean(server: Server) -> None:
    first, second = workers(server.process.pid)
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: first not in (now := workers(server.process.pid)) and len(now) == 2)
    replacement = next(pid for pid in workers(server.process.pid) if pid != second)
    port = urlsplit(server.url).port
    assert port is not None

    def serves_on_both() -> bool:
        # New connections reach the replacement once its socket listens.
        connections = [http.client.HTTPConnection("127.0.0.1", port) for _ in range(32)]
        for connection in connections:
            connection.request("GET", "/healthz")
            assert connection.getresponse().status == 200
        counts = connections_by_process(port, [replacement, second])
        for connection in connections:
            connection.close()
        return min(counts.values()) > 0

    wait_for(serves_on_both)
    server.stop()
    assert server.process.returncode == 0
    assert "restarting" in server.output()


def test_a_hung_worker_is_killed_and_replaced(tmp_path: Path) -> None:
    env = {"CIPHERD_WORKER_UNRESPONSIVE_SECONDS": "2", "CIPHERD_LOG_LEVEL": "INFO"}
    with running(tmp_path / "data", workers_count=2, env=env) as server:
        hung, healthy = workers(server.process.pid)
        os.kill(hung, signal.SIGSTOP)  # its event loop stops, its socket still listens
        wait_for(lambda: hung not in (now := workers(server.process.pid)) and len(now) == 2)
        assert not is_running(hung)
        assert healthy in workers(server.process.pid)
        assert re.search(rf"worker {hung} unresponsive for \d+ s; killing it", server.output())
        port = urlsplit(server.url).port
        assert port is not None
        wait_for(lambda: listeners(port) == 2)
        for _ in range(20):  # new connections, hashed over both sockets, are all answered
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_a_pause_of_the_whole_service_kills_no_worker(tmp_path: Path) -> None:
    env = {"CIPHERD_WORKER_UNRESPONSIVE_SECONDS": "2"}
    with running(tmp_path / "data", workers_count=2, env=env) as server:
        before = workers(server.process.pid)
        os.killpg(server.process.pid, signal.SIGSTOP)  # as a shell stops a job: every process
        time.sleep(4)
        os.killpg(server.process.pid, signal.SIGCONT)
        time.sleep(3)
        assert workers(server.process.pid) == before
        assert "unresponsive" not in server.output()


def test_workers_stop_when_their_supervisor_is_killed(server: Server) -> None:
    port = urlsplit(server.url).port
    assert port is not None
    pids = workers(server.process.pid)
    assert listeners(port) == 2
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=15)
    wait_for(lambda: not any(is_running(pid) for pid in pids))
    assert listeners(port) == 0


def _dlog_table_bytes(url: str) -> float:
    """`cipherd_cache_bytes` of the discrete-log tables, summed over the live workers."""
    metrics = httpx.get(f"{url}/metrics").text
    found = re.search(r'^cipherd_cache_bytes\{cache="dlog_tables"\} (\S+)$', metrics, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_dead_workers_cache_figures_leave_the_metrics(server: Server) -> None:
    port = urlsplit(server.url).port
    assert port is not None
    headers = {"Authorization": f"Bearer {server.admin_token}"}
    # One keep-alive connection, so one worker serves all of it and builds the table.
    with httpx.Client(base_url=server.url, headers=headers) as client:
        key = {"name": "fe", "type": "ipfe-opt", "dimension": 3}
        assert client.post("/v1/keys", json=key).status_code == 201
        function = client.post("/v1/fe/fe/keygen", json={"y": [1, 2, 3]}).json()
        sealed = client.post("/v1/fe/fe/encrypt", json={"x": [1, 1, 1]}).json()
        request = {
            "functional_key": function["functional_key"],
            "ciphertext": sealed["ciphertext"],
            "bounds": [0, 100],
        }
        assert client.post("/v1/fe/fe/decrypt", json=request).json() == {"result": 6}
        held = connections_by_process(port, workers(server.process.pid))
    builder = next(pid for pid, count in held.items() if count)
    assert _dlog_table_bytes(server.url) > 0

    os.kill(builder, signal.SIGKILL)
    wait_for(lambda: builder not in (now := workers(server.process.pid)) and len(now) == 2)
    assert _dlog_table_bytes(server.url) == 0


def test_a_port_in_use_fails_at_start(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        process = serve_process(tmp_path / "data", port, INFO)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 1, output
    assert output.splitlines() == [f"cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_port_zero_gives_every_worker_the_same_port(tmp_path: Path) -> None:
    process = serve_process(tmp_path / "data", 0, INFO)
    try:
        assert process.stdout is not None
        port = 0
        for line in process.stdout:
            if found := re.search(r"serving on 127\.0\.0\.1:(\d+) with 2 workers", line):
                port = int(found.group(1))
                break
        assert port > 0

        def both_listen() -> bool:
            return len(workers(process.pid)) == 2 and listeners(port) == 2

        wait_for(both_listen)
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    assert process.returncode == 0
