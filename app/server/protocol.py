"""uvicorn's HTTP protocol (httptools) with the bounds it lacks: time to send a request head, pace
of a body, and connections per worker.

uvicorn closes an idle keep-alive connection, but it waits forever for a request head sent one
line at a time, or for a body that trickles in, and accepts any number of connections: a hundred
sockets that each send a header line every few seconds hold a worker's file descriptors and
memory without ever authenticating. Here a connection that has not sent its whole head within
CIPHERD_HEAD_TIMEOUT_SECONDS is answered 408 and closed, so is one whose body stalls for
CIPHERD_BODY_TIMEOUT_SECONDS or arrives slower than CIPHERD_MIN_BODY_BYTES_PER_SECOND on
average (after that same grace), and a connection past CIPHERD_MAX_CONNECTIONS is answered 503
with Retry-After and closed at once. A head longer than CIPHERD_MAX_HEAD_BYTES is answered 431
and closed as it arrives: httptools joins a header's pieces one by one, so reading a long one costs
the square of its length (a 128 MB header held a worker for 20 s).
"""

import asyncio
import json
import time
import weakref
from typing import Any

from app.ops.errors import PROBLEM_TYPE_PREFIX, RETRY_AFTER_SECONDS
from app.server.metrics import REFUSED
from app.server.uvicorn_internals import WatchedConnection
from app.settings import get_settings

# How often every connection's deadlines are checked: a head or a body's pace is refused at most
# this much after its bound.
_SWEEP_SECONDS = 1.0
_HEAD_END = b"\r\n\r\n"
# Writes up to this size wait for the end of the event loop's turn, to leave with the next.
_COALESCE_BYTES = 64 << 10


def _answer(status: str, slug: str, title: str, detail: str, retry: bool) -> bytes:
    body = json.dumps(
        {
            "type": PROBLEM_TYPE_PREFIX + slug,
            "title": title,
            "status": int(status.split()[0]),
            "detail": detail,
        }
    ).encode()
    head = [
        f"HTTP/1.1 {status}",
        "content-type: application/problem+json",
        f"content-length: {len(body)}",
        "connection: close",
        *([f"retry-after: {RETRY_AFTER_SECONDS}"] if retry else []),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class _CoalescedWrites:
    """A connection's transport whose small writes within one turn of the event loop go out as
    one. uvicorn writes a response's head and its body separately: two system calls, and two
    packets for the client to read, where one does."""

    __slots__ = ("_loop", "_pending", "_pending_bytes", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def write(self, data: bytes) -> None:
        if len(data) >= _COALESCE_BYTES:  # a large body: not copied to join what waits
            self._flush()
            self._transport.write(data)
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= _COALESCE_BYTES:  # many pieces in one turn
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending, self._pending_bytes = [], 0
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Deadlines:
    """The deadlines of one event loop's connections, checked for all of them by one timer every
    _SWEEP_SECONDS. A timer set and cancelled for each request's head and each body (two per
    request) cost the normal path about 2 % of a request's instructions
    (docs/performance/choices.md)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._watched: set[BoundedHttpToolsProtocol] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0  # when the next sweep should run

    def watch(self, connection: "BoundedHttpToolsProtocol") -> None:
        self._watched.add(connection)
        if self._timer is None:
            self._schedule()

    def forget(self, connection: "BoundedHttpToolsProtocol") -> None:
        self._watched.discard(connection)

    def _schedule(self) -> None:
        self._due = time.monotonic() + _SWEEP_SECONDS
        self._timer = self._loop.call_later(_SWEEP_SECONDS, self._sweep)

    def _sweep(self) -> None:
        # A sweep that runs late found the worker stalled (starved of CPU, stopped, swapping): no
        # byte was read meanwhile, whatever the clients sent. uvloop runs due timers before it
        # reads the sockets, so without this credit a stall longer than a bound would refuse
        # every connection whose bytes wait unread in the kernel.
        now = time.monotonic()
        stalled = max(0.0, now - self._due)
        for connection in list(self._watched):
            connection.check_deadlines(now, stalled)
        if self._watched:
            self._schedule()
        else:
            self._timer = None


_deadlines: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Deadlines]" = (
    weakref.WeakKeyDictionary()
)


class BoundedHttpToolsProtocol(WatchedConnection):
    """httptools' protocol with a deadline for each request head, a pace for each body and a
    limit on the worker's connections."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self._head_seconds = settings.head_timeout_seconds
        self._max_head_bytes = settings.max_head_bytes
        self._body_seconds = settings.body_timeout_seconds
        self._min_rate = settings.min_body_bytes_per_second
        self._max_connections = settings.max_connections
        loop = self.event_loop
        deadlines = _deadlines.get(loop)
        if deadlines is None:
            deadlines = _deadlines[loop] = _Deadlines(loop)
        self._deadlines = deadlines
        self._head_since: float | None = None  # a head is awaited since then
        self._head_bytes: int | None = 0  # of the head awaited; None in a body
        self._head_tail = b""  # the last bytes of the head so far, where its end may begin
        self._in_body = False
        self._body_started = 0.0
        self._body_last = 0.0
        self._body_bytes = 0
        self._paced_at = 0.0  # the pace's last check

    def _refuse(self, status: str, slug: str, title: str, detail: str, retry: bool) -> None:
        self._head_since, self._in_body = None, False
        self.close_with(_answer(status, slug, title, detail, retry))

    def transport_for(self, transport: asyncio.Transport) -> asyncio.Transport:
        return _CoalescedWrites(transport, self.event_loop)  # type: ignore[return-value]  # a transport in all uvicorn calls

    def arrived(self, data: bytes) -> bool:
        if self._head_bytes is None:
            return True
        if _HEAD_END in data or _HEAD_END in self._head_tail + data[:3]:
            return True  # the head ends here: the parser reads at most this piece more
        self._head_bytes += len(data)
        self._head_tail = data[-3:]
        if self._head_bytes <= self._max_head_bytes:
            return True
        if self.transport.is_closing():
            return False
        REFUSED.labels("head-too-large").inc()
        self._refuse(
            "431 Request Header Fields Too Large",
            "head-too-large",
            "Request head too large",
            f"the request line and headers take at most {self._max_head_bytes} bytes "
            "(CIPHERD_MAX_HEAD_BYTES)",
            retry=False,
        )
        return False

    def opened(self, connections: int) -> None:
        if connections > self._max_connections:
            REFUSED.labels("connection-limit").inc()
            self._refuse(
                "503 Service Unavailable",
                "too-many-connections",
                "Too many connections",
                f"this worker holds its maximum of {self._max_connections} connections "
                "(CIPHERD_MAX_CONNECTIONS); retry shortly",
                retry=True,
            )
            return
        self._head_since = time.monotonic()
        self._deadlines.watch(self)

    def closed(self) -> None:
        self._deadlines.forget(self)

    def head_begun(self) -> None:
        if self._head_since is None:  # a further request on a kept-alive connection
            self._head_since = time.monotonic()

    def head_ended(self) -> None:
        self._head_since = self._head_bytes = None

    def body_begun(self) -> None:
        self._in_body = True
        self._body_started = self._body_last = self._paced_at = time.monotonic()
        self._body_bytes = 0

    def body_arrived(self, size: int) -> None:
        self._body_bytes += size
        self._body_last = time.monotonic()

    def message_ended(self) -> None:
        self._in_body = False
        self._head_bytes, self._head_tail = 0, b""

    def check_deadlines(self, now: float, stalled: float) -> None:
        """Called by the loop's sweep: refuse a head or a body that is too slow, the `stalled`
        seconds the worker itself did not run not counted against it."""
        if self._head_since is not None:
            self._head_since += stalled
        self._body_last += stalled
        self._body_started += stalled
        self._paced_at += stalled
        if self._head_since is not None and now - self._head_since >= self._head_seconds:
            REFUSED.labels("head-timeout").inc()
            self._refuse(
                "408 Request Timeout",
                "request-timeout",
                "Request timeout",
                f"the request head did not arrive within {self._head_seconds:g} s "
                "(CIPHERD_HEAD_TIMEOUT_SECONDS)",
                retry=False,
            )
        elif self._in_body:
            self._check_pace(now)

    def _check_pace(self, now: float) -> None:
        since, self._paced_at = self._paced_at, now
        if self.reading_paused:
            # The application has not taken the bytes already here yet: the wait is ours.
            self._body_last = now
            self._body_started += now - since
            return
        grace_over = now - self._body_started - self._body_seconds
        if now - self._body_last > self._body_seconds or (
            grace_over > 0 and self._body_bytes < self._min_rate * (now - self._body_started)
        ):
            REFUSED.labels("body-timeout").inc()
            self._refuse(
                "408 Request Timeout",
                "request-timeout",
                "Request timeout",
                f"the request body stalled for {self._body_seconds:g} s or arrived slower than "
                f"{self._min_rate} bytes/s (CIPHERD_BODY_TIMEOUT_SECONDS, "
                "CIPHERD_MIN_BODY_BYTES_PER_SECOND)",
                retry=False,
            )
