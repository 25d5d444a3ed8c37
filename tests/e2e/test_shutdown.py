"""`cipherd serve` stops cleanly, with its FE pool processes: after a worker was killed outright
(the supervisor then warned of leaked semaphores, five for each FE pool of a killed worker), and
on Ctrl-C, which a terminal sends to every process of the group (workers and pool processes then
ended in KeyboardInterrupt tracebacks). Its output holds no traceback, no resource warning."""

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.server import Server, listeners, running, wait_for, workers

pytestmark = pytest.mark.e2e
UNCLEAN = ("Traceback", "KeyboardInterrupt", "leaked", "Warning:", "resource_tracker")


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def _descendants(pid: int) -> list[int]:
    return [d for child in _children(pid) for d in (child, *_descendants(child))]


def _fe_processes(server: Server, workers_count: int) -> list[int]:
    """The FE pool processes: the children spawned by each worker (by the server itself when
    it is its only worker)."""
    serving = [server.process.pid] if workers_count == 1 else workers(server.process.pid)
    return [
        child for pid in serving for child in _children(pid) if b"spawn_main" in _cmdline(child)
    ]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def _ignores_sigint(pid: int) -> bool:
    """Whether `pid` has set SIGINT aside (its SigIgn mask), as a pool process does once it has
    started, and a worker once it runs."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    mask = int(
        next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16
    )
    return bool(mask & 1 << (signal.SIGINT - 1))


def _pools_ready(server: Server, workers_count: int) -> bool:
    """Whether every worker's FE pool process (one each, the default) has started serving: it
    sets SIGINT aside then."""
    processes = _fe_processes(server, workers_count)
    return len(processes) == workers_count and all(_ignores_sigint(pid) for pid in processes)


def _assert_clean(server: Server) -> None:
    output = server.output()
    assert server.process.returncode == 0, output[-3000:]
    found = [word for word in UNCLEAN if word in output]
    assert not found, output[-3000:]


def test_a_worker_killed_outright_leaves_nothing_behind(tmp_path: Path) -> None:
    with running(tmp_path / "data", workers_count=2) as server:
        wait_for(lambda: len(_fe_processes(server, 2)) == 2, 60, "two FE pool processes")
        first, _ = workers(server.process.pid)
        os.kill(first, signal.SIGKILL)
        port = int(server.url.rsplit(":", 1)[1])
        wait_for(
            lambda: (
                first not in (now := workers(server.process.pid))
                and len(now) == 2
                and listeners(port) == 2
            ),
            60,
            "the killed worker's replacement",
        )
        wait_for(lambda: len(_fe_processes(server, 2)) == 2, 60, "the replacement's pool")
        server.stop()
    _assert_clean(server)
    assert "restarting" in server.output()


@pytest.mark.parametrize("workers_count", [1, 2])
def test_ctrl_c_stops_every_process_quietly(tmp_path: Path, workers_count: int) -> None:
    with running(tmp_path / "data", workers_count=workers_count) as server:
        wait_for(lambda: _pools_ready(server, workers_count), 60, "the FE pool processes")
        everyone = _descendants(server.process.pid)
        os.killpg(server.process.pid, signal.SIGINT)
        server.process.wait(timeout=30)
    _assert_clean(server)
    wait_for(lambda: not any(_cmdline(pid) for pid in everyone), 30, "every process gone")
