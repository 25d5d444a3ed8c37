"""A second `cipherd serve` on a port already in use stops at start with one line naming the
address, also when the socket there set SO_REUSEPORT (the workers of another `cipherd serve`),
which Linux would otherwise let it share: the second server took about half of the first one's
new connections and answered them from its own store."""

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, listeners, running, workers

pytestmark = pytest.mark.e2e
REFUSAL_SECONDS = 10


def second_serve(data_dir: Path, port: int, workers_count: int) -> tuple[int, str]:
    """Run `cipherd serve` on `port` to its end (within REFUSAL_SECONDS): status and output."""
    command = [sys.executable, "-m", "app", "serve", "--port", str(port)]
    try:
        finished = subprocess.run(
            [*command, "--workers", str(workers_count)],
            env={"CIPHERD_DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=REFUSAL_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {REFUSAL_SECONDS} s") from None
    return finished.returncode, finished.stdout + finished.stderr


def assert_refused(data_dir: Path, port: int, workers_count: int) -> None:
    status, output = second_serve(data_dir, port, workers_count)
    assert status != 0, output
    assert output.splitlines() == [f"cannot listen on 127.0.0.1:{port}: Address already in use"]


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def assert_first_serves_alone(server: Server) -> None:
    """Every new connection reaches the first server: its key is known to each answer."""
    no_reuse = httpx.Limits(max_keepalive_connections=0)
    with server.client(limits=no_reuse) as client:
        assert client.post("/v1/keys", json={"name": "mine", "type": "aez"}).status_code == 201
        statuses = [client.get("/v1/keys/mine").status_code for _ in range(40)]
    assert statuses == [200] * 40


@pytest.mark.parametrize("second_workers", [2, 1])
def test_a_second_serve_on_the_port_of_a_multi_worker_serve_is_refused(
    tmp_path: Path, second_workers: int
) -> None:
    with running(tmp_path / "first", workers_count=2) as first:
        port = port_of(first)
        assert_refused(tmp_path / "second", port, second_workers)
        # The first one's workers still share the port, and nothing else joined them.
        assert len(workers(first.process.pid)) == 2
        assert listeners(port) == 2
        assert_first_serves_alone(first)


def test_a_multi_worker_serve_on_the_port_of_a_single_worker_serve_is_refused(
    tmp_path: Path,
) -> None:
    with running(tmp_path / "first", workers_count=1) as first:
        assert_refused(tmp_path / "second", port_of(first), 2)
        assert_first_serves_alone(first)


def test_a_port_held_by_another_program_with_so_reuseport_is_refused(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        other.bind(("127.0.0.1", 0))
        other.listen()
        assert_refused(tmp_path / "data", other.getsockname()[1], 2)
