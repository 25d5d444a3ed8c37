"""Real `cipherd serve` processes for end-to-end tests.

Each server is `python -m app serve` in a subprocess with its own environment, its output going
to a file (a pipe would fill and stall a server that logs at DEBUG). `start` returns once
/readyz answers 200 and, with several workers, every worker process is up and listening.
"""

import http.server
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import httpx

STARTUP_SECONDS = 60


@cache
def _default_tls() -> ssl.SSLContext:
    """httpx's default TLS context, built once: httpx builds one (loading certifi's roots) for
    every client made without one, about 40 ms of CPU each, and tests make clients by the
    hundred."""
    return httpx.create_ssl_context()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(port: int, handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[None]:
    """`handler` answering on 127.0.0.1:`port`, in threads of this process, for the block."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def workers(pid: int) -> list[int]:
    """The uvicorn worker processes under a multi-worker `cipherd serve` process."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    children = [int(p) for p in path.read_text().split()] if path.exists() else []
    return [c for c in children if b"spawn_main" in _command_line(c)]


def _command_line(pid: int) -> bytes:
    """A process's command line; empty once it has gone (a killed worker may go between the
    listing of the children and the reading)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


_LISTEN, _ESTABLISHED = "0A", "01"  # TCP states as /proc/net/tcp writes them


def _sockets(port: int, state: str) -> list[str]:
    """The inodes of the IPv4 TCP sockets on local `port` in `state`, from /proc/net/tcp."""
    inodes = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
            inodes.append(fields[9])
    return inodes


def listeners(port: int) -> int:
    """How many sockets listen on local TCP `port`: one per worker with several workers."""
    return len(_sockets(port, _LISTEN))


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: state, ppid, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_ticks(pid: int) -> int:
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12])  # utime + stime


def is_running(pid: int) -> bool:
    """Whether `pid` exists and has not exited (an exited orphan may wait as a zombie)."""
    try:
        return _stat_fields(pid)[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(check: Callable[[], object], seconds: float = 30, what: str = "the condition") -> None:
    """Return once `check()` is true; AssertionError naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds} s")


class ServerError(RuntimeError):
    """The server did not come up; the message ends with its last output."""


@dataclass
class Server:
    url: str
    admin_token: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path
    command: list[str]
    env: dict[str, str]
    # httpx options of every client (`verify`, `cert` for a TLS server).
    client_options: dict[str, object] = field(default_factory=dict)

    def client(self, token: str | None = None, **kwargs: object) -> httpx.Client:
        """An HTTP client for this server with the admin token (or `token`)."""
        headers = {"Authorization": f"Bearer {token or self.admin_token}"}
        options = {"timeout": 30, **self.client_options, **kwargs}
        if self.url.startswith("http:") and "cert" not in options:
            options.setdefault("verify", _default_tls())  # used only if redirected to https
        return httpx.Client(base_url=self.url, headers=headers, **options)  # type: ignore[arg-type]

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole process group: no shutdown code runs, as in a power cut."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=15)

    def stop(self) -> None:
        """SIGTERM and wait for a clean exit; SIGKILL if it does not come."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()
            raise


def _environment(data_dir: Path, settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without its CIPHERD_* settings, plus the data directory and
    `settings`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CIPHERD_")}
    return env | {"CIPHERD_DATA_DIR": str(data_dir), **settings}


def _command(port: int, workers_count: int, extra: Sequence[str] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "app",
        "serve",
        "--port",
        str(port),
        "--workers",
        str(workers_count),
        *extra,
    ]


def serve_process(
    data_dir: Path, port: int, settings: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """`cipherd serve --workers 2` on `port` (0: any), its output on one pipe, not waited for:
    for tests of how it starts, or refuses to."""
    return subprocess.Popen(
        _command(port, 2),
        env=_environment(data_dir, settings or {}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def start(
    data_dir: Path,
    *,
    workers_count: int = 1,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    port: int | None = None,
    args: Sequence[str] = (),
    client_options: Mapping[str, object] | None = None,
    ready: bool = True,
) -> Server:
    """Start `cipherd serve` on a free loopback port and wait until it is ready (or, with
    `ready` False, for a server meant not to be, until it is alive).

    `env` adds or overrides CIPHERD_* settings; without CIPHERD_ADMIN_TOKEN in it the server
    generates one into the data directory and this reads it from there. `args` go to `serve`;
    `client_options` (httpx's `verify` and `cert`) make the server's URL https.
    """
    port = port or free_port()
    full_env = _environment(data_dir, {"CIPHERD_LOG_LEVEL": "WARNING", **(env or {})})
    log_path = log_path or data_dir.parent / f"server-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = _command(port, workers_count, args)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so kill() reaches the workers
        )
    scheme = "https" if client_options is not None else "http"
    url = f"{scheme}://127.0.0.1:{port}"
    server = Server(
        url, "", process, data_dir, log_path, command, full_env, dict(client_options or {})
    )
    try:
        _wait_ready(server, workers_count, "/readyz" if ready else "/healthz")
    except BaseException:
        server.kill()
        raise
    server.admin_token = full_env.get("CIPHERD_ADMIN_TOKEN") or (
        (data_dir / "admin-token").read_text().strip()
    )
    return server


def restart(server: Server) -> Server:
    """Start the same command with the same settings again, after a kill or a stop."""
    port = int(server.command[server.command.index("--port") + 1])
    workers_count = int(server.command[server.command.index("--workers") + 1])
    return start(
        server.data_dir,
        workers_count=workers_count,
        env=server.env,
        log_path=server.log_path,
        port=port,
        args=server.command[server.command.index("--workers") + 2 :],
        client_options=server.client_options if server.url.startswith("https") else None,
    )


def _wait_ready(server: Server, workers_count: int, path: str = "/readyz") -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    # A TLS context built for every poll would take CPU from the starting server.
    options = server.client_options or {"verify": _default_tls()}
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerError(f"server exited with {server.process.returncode}: {_tail(server)}")
        try:
            answer = httpx.get(f"{server.url}{path}", timeout=1, **options)  # type: ignore[arg-type]
            ready = answer.status_code == 200
        except httpx.HTTPError:
            ready = False
        if ready and (
            workers_count == 1
            or (
                len(workers(server.process.pid)) >= workers_count
                and listeners(int(server.url.rsplit(":", 1)[1])) >= workers_count
            )
        ):
            return
        time.sleep(0.1)
    raise ServerError(f"server not ready after {STARTUP_SECONDS} s: {_tail(server)}")


def _tail(server: Server) -> str:
    return server.output()[-3000:]


@contextmanager
def running(data_dir: Path, **kwargs: object) -> Iterator[Server]:
    """A started server, stopped on the way out (killed if it does not stop)."""
    server = start(data_dir, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def connections_by_process(port: int, pids: list[int]) -> dict[int, int]:
    """How many established TCP connections to local `port` each of `pids` holds (/proc)."""
    inodes = {f"socket:[{inode}]" for inode in _sockets(port, _ESTABLISHED)}
    counts = {}
    for pid in pids:
        held = 0
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                held += os.readlink(fd) in inodes
            except OSError:  # closed since the listing
                continue
        counts[pid] = held
    return counts
