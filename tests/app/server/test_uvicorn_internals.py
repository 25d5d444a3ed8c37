"""The adapter over uvicorn, held to what the installed release does: a real uvicorn server in its
own process tells a connection's steps in order, lets a connection be answered and closed,
calls on each tick of its loop, and exits with STARTUP_FAILURE when its app cannot start. A
release that changes what the adapter reaches into fails here."""

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.server.uvicorn_internals import STARTUP_FAILURE
from tests.e2e.server import free_port

ROOT = Path(__file__).resolve().parents[3]
DEADLINE_SECONDS = 30

# A server whose connections print their steps; a second connection at once is refused.
SERVER = """
import sys
from app.server.uvicorn_internals import WatchedConnection, serve

def note(*words):
    print(*words, flush=True)

class Noting(WatchedConnection):
    def transport_for(self, transport):
        note("transport_for")
        return transport
    def opened(self, connections):
        note("opened", connections)
        if connections > 1:
            self.close_with(b"HTTP/1.1 503 Service Unavailable\\r\\ncontent-length: 0\\r\\n\\r\\n")
    def closed(self):
        note("closed")
    def head_begun(self):
        note("head_begun")
    def head_ended(self):
        note("head_ended")
    def body_begun(self):
        note("body_begun", self.event_loop.is_running(), self.reading_paused)
    def body_arrived(self, size):
        note("body_arrived", size)
    def message_ended(self):
        note("message_ended")

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        message = await receive()
        if sys.argv[2] == "fail":
            await send({"type": "lifespan.startup.failed", "message": "no"})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    note("app", body.decode())
    answer = b"got " + body
    headers = [(b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})

ticked = []

def tick():
    if not ticked:
        ticked.append(1)
        note("tick")

sock = __import__("socket").socket()
sock.bind(("127.0.0.1", int(sys.argv[1])))
options = {"app": app, "http": Noting, "log_config": None, "lifespan": "on",
           "timeout_graceful_shutdown": 1}
started = serve(options, [sock], on_tick=tick)
note("started", started)
"""


class _Child:
    """A process printing lines, read as they come."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def wait_for(self, done: Callable[[list[str]], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not done(self.lines):
            assert time.monotonic() < deadline, f"no {what}: {self.lines}"
            time.sleep(0.02)


@pytest.fixture
def server() -> Iterator[tuple[_Child, int]]:
    port = free_port()
    child = _Child(str(port), "ok")
    try:
        child.wait_for(lambda lines: "tick" in lines, "tick of the event loop")
        yield child, port
    finally:
        if child.process.poll() is None:
            child.process.kill()
        child.process.wait()


def _read_answer(connection: socket.socket) -> bytes:
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.endswith(b"got hello"):
        chunk = connection.recv(4096)
        assert chunk, answer
        answer += chunk
    return answer


def test_a_connections_steps_come_in_order(server: tuple[_Child, int]) -> None:
    child, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as first:
        first.sendall(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 5\r\n\r\nhello")
        assert _read_answer(first).startswith(b"HTTP/1.1 200 OK\r\n")
        with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as second:
            refused = second.recv(4096)
            assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
            assert second.recv(4096) == b""  # and closed
        child.wait_for(lambda lines: lines.count("closed") == 1, "close of the second")
    child.wait_for(lambda lines: lines.count("closed") == 2, "close of the first")
    child.process.send_signal(signal.SIGTERM)
    # uvicorn stops gracefully, then raises the signal again once it has: the process ends by it.
    assert child.process.wait(timeout=DEADLINE_SECONDS) == -signal.SIGTERM
    assert child.lines == [
        "tick",
        "transport_for",
        "opened 1",
        "head_begun",
        "head_ended",
        "body_begun True False",
        "body_arrived 5",
        "message_ended",
        "app hello",
        "transport_for",
        "opened 2",
        "closed",
        "closed",
    ]


def test_a_server_whose_app_cannot_start_exits_with_startup_failure() -> None:
    """What the supervisor tells apart from a worker that died serving (app.server.workers)."""
    child = _Child(str(free_port()), "fail")
    assert child.process.wait(timeout=DEADLINE_SECONDS) == STARTUP_FAILURE
    assert child.lines == []  # no tick, and serve did not return
