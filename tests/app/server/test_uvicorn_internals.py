"""The adapter over uvicorn, held to what the installed release does: a real uvicorn server in its
own process tells a connection's steps in order, lets a connection be answered and closed,
reads Vault's method LIST wherever a request begins in a read, calls on each tick of its loop,
and exits with STARTUP_FAILURE when its app cannot start. A release that changes what the
adapter reaches into fails here."""

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
    query = scope["query_string"]
    answer = b"%s %s%s got %s" % (
        scope["method"].encode(), scope["raw_path"], b"?" + query if query else b"", body
    )
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


def _post(body: bytes) -> bytes:
    return b"POST /p HTTP/1.1\r\nhost: t\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def _list(target: bytes) -> bytes:
    return b"LIST " + target + b" HTTP/1.1\r\nhost: t\r\n\r\n"


def _answers(connection: socket.socket, count: int) -> list[bytes]:
    """The bodies of the next `count` answers on `connection`, each after its status code."""
    received, answers = b"", []
    while len(answers) < count:
        head_end = received.find(b"\r\n\r\n")
        if head_end != -1:
            head = received[:head_end].lower()
            length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
            end = head_end + 4 + length
            if len(received) >= end:
                answers.append(head[9:12] + b" " + received[head_end + 4 : end])
                received = received[end:]
                continue
        chunk = connection.recv(65536)
        assert chunk, (answers, received)
        received += chunk
    return answers


_BODY_WITH_LIST = b"a\nLIST /x HTTP/1.1\r\n\r\nLIST "


@pytest.mark.parametrize(
    ("reads", "answers"),
    [
        pytest.param(  # a POST's body and a LIST pipelined after it end one read
            [_post(b"hi")[:-2], b"hi" + _list(b"/keys")],
            [b"200 POST /p got hi", b"200 GET /keys?list=true got "],
            id="body-then-list",
        ),
        pytest.param(
            [_list(b"/a?x=1") + _list(b"/b")],
            [b"200 GET /a?x=1&list=true got ", b"200 GET /b?list=true got "],
            id="list-then-list",
        ),
        pytest.param(  # the read ends within the word LIST, right after a request
            [_post(b"hi")[:-2], b"hi" + _list(b"/keys")[:2], _list(b"/keys")[2:]],
            [b"200 POST /p got hi", b"200 GET /keys?list=true got "],
            id="li-then-st",
        ),
        pytest.param(  # within a body, a read that ends with LI is read whole
            [_post(b"aLIST")[:-2], b"ST" + _list(b"/keys")],
            [b"200 POST /p got aLIST", b"200 GET /keys?list=true got "],
            id="li-within-a-body",
        ),
        pytest.param(  # `LIST ` within a body is the body's, and a target may end with LIST
            [_post(_BODY_WITH_LIST) + _list(b"/MYLIST")],
            [b"200 POST /p got " + _BODY_WITH_LIST, b"200 GET /MYLIST?list=true got "],
            id="list-within-a-body",
        ),
    ],
)
def test_a_list_request_is_read_wherever_it_begins_in_a_read(
    server: tuple[_Child, int], reads: list[bytes], answers: list[bytes]
) -> None:
    """Vault's clients' method LIST, which httptools refuses, is read as a GET with list=true
    when a read holds the end of one request and the beginning of a LIST, as OpenBao reads it;
    every request is answered, in order."""
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as connection:
        for number, data in enumerate(reads):
            if number:
                time.sleep(0.2)  # a read of its own
            connection.sendall(data)
        assert _answers(connection, len(answers)) == answers


def test_a_body_full_of_list_is_read_whole_in_few_pieces(server: tuple[_Child, int]) -> None:
    """A read is cut where a LIST may begin, but at most _MAX_CUTS times: a body of 20,000
    `LIST ` is not 20,000 calls of the parser, and reaches the application intact."""
    child, port = server
    body = b"\nLIST " * 20_000
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_SECONDS) as connection:
        connection.sendall(_post(body))
        assert _answers(connection, 1) == [b"200 POST /p got " + body]
    child.wait_for(lambda lines: "message_ended" in lines, "the request's end")
    pieces = [line for line in child.lines if line.startswith("body_arrived")]
    assert 0 < len(pieces) < 1000
    assert sum(int(line.split()[1]) for line in pieces) == len(body)


def test_a_server_whose_app_cannot_start_exits_with_startup_failure() -> None:
    """What the supervisor tells apart from a worker that died serving (app.server.workers)."""
    child = _Child(str(free_port()), "fail")
    assert child.process.wait(timeout=DEADLINE_SECONDS) == STARTUP_FAILURE
    assert child.lines == []  # no tick, and serve did not return
