"""Every use of uvicorn, its internals included, in one place.

uvicorn documents its options and `Server.run`; cipherd also needs what it does not document:
the exit status of a server that could not start (`STARTUP_FAILURE`), a hook on each tick of
its event loop (`serve(..., on_tick=...)`, the workers' heartbeat) and a connection's steps in
its httptools protocol (`WatchedConnection`, which `app.server.protocol` bounds, and which also
reads Vault's LIST method). A new uvicorn
release may change any of them without notice, so the service starts only with the releases
this module was tested against (`check_releases`); `tests/app/test_layers.py` keeps uvicorn out
of every other module.
"""

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.server.releases import require

__all__ = ["ARRIVED", "STARTUP_FAILURE", "WatchedConnection", "check_releases", "serve"]

# Where a request's scope says when its head began to arrive (time.monotonic()): what a
# request must see of the store is what was committed before then (`app.ops.work.SharedRead`).
ARRIVED = "cipherd.arrived"


def check_releases() -> None:
    """Refuse (UnsupportedRelease) a uvicorn other than the releases this module was tested
    against (`app.server.releases.TESTED`)."""
    require(__name__)


class _TickingServer(uvicorn.Server):
    """uvicorn's server, calling `on_tick` on each tick of its event loop (ten a second)."""

    def __init__(self, config: uvicorn.Config, on_tick: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_tick = on_tick

    async def on_tick(self, counter: int) -> bool:
        self._on_tick()
        return await super().on_tick(counter)


def serve(
    options: dict[str, Any],
    sockets: list[socket.socket],
    on_tick: Callable[[], None] | None = None,
) -> bool:
    """Run uvicorn with `options` on `sockets` until it is stopped; whether it started (if not,
    STARTUP_FAILURE is the process's exit status). `on_tick` is called on every tick of the
    event loop: a loop that stops turning stops the calls.

    uvicorn raises the SIGINT that stopped it again once it has stopped; as with uvicorn.run,
    the KeyboardInterrupt is the end, not an error."""
    config = uvicorn.Config(**options)
    server = uvicorn.Server(config) if on_tick is None else _TickingServer(config, on_tick)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=sockets)
    return server.started


# Vault's clients list with the method LIST, which httptools' parser refuses: a request line
# `LIST <target> HTTP/1.1` at the start of a request, wherever that is in a read, is read as
# `GET <target>?list=true` (Vault takes both; the routes declare the second).
_LIST = b"LIST "
# A read is fed to the parser in pieces, one from each place a LIST request may begin
# (`WatchedConnection.data_received`). A body full of `LIST ` would make as many pieces, each a
# parser call and a copy of the body so far (uvicorn joins a body's pieces), so past this many
# cuts in one read the rest is fed whole: a LIST request there is refused (400) as before.
_MAX_CUTS = 64
# What a read may end with where a LIST request begins at its end.
_LIST_STARTS = tuple(_LIST[:length] for length in range(1, len(_LIST)))


def _next_cut(data: bytes, after: int) -> int:
    """Where in `data`, past `after`, a LIST request may begin: at `LIST `, or at a proper
    prefix of it that ends `data`; len(data) if nowhere. A request that follows a body whose
    length its head gave begins at any byte, not only after a line's end."""
    found = data.find(_LIST, after + 1)
    if found == -1:
        found = data.rfind(b"L", max(after + 1, len(data) - len(_LIST) + 1))
        if found == -1 or not _LIST.startswith(data[found:]):
            return len(data)
    return found


def _listed(data: bytes) -> bytes:
    """`data`, which begins a LIST request, as the GET request Vault takes it for."""
    end = data.find(b" ", len(_LIST))
    if end == -1:  # the target goes on in the next chunk: the method alone, the route says why
        return b"GET " + data[len(_LIST) :]
    target = data[len(_LIST) : end]
    target += b"&list=true" if b"?" in target else b"?list=true"
    return b"GET " + target + data[end:]


# ASGI's TLS extension's names of the protocol versions.
_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_extension(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """ASGI's TLS extension (`scope["extensions"]["tls"]`) for a connection, which uvicorn does
    not give: the client's certificate (PEM) when it showed one, as the handshake verified it.
    Python's ssl module gives the client's certificate but not its chain's others, so
    `client_cert_chain` holds that one alone. None on a connection without TLS."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return {
        "server_cert": None,
        "client_cert_chain": [] if der is None else [ssl.DER_cert_to_PEM_cert(der)],
        "client_cert_name": None,
        "client_cert_error": None,
        "tls_version": _TLS_VERSIONS.get(ssl_object.version() or ""),
        "cipher_suite": None,
    }


class WatchedConnection(HttpToolsProtocol):
    """uvicorn's httptools protocol (one per connection), telling a subclass of each step of
    its requests and letting it close the connection with an answer of its own.

    The steps' methods do nothing here; each is called before uvicorn handles the step, but for
    `head_begun` and `body_begun`, called after.
    """

    # The steps.

    def arrived(self, data: bytes) -> bool:
        """`data` arrived on the connection; False drops it unread (the connection is closed)."""
        return True

    def opened(self, connections: int) -> None:
        """The connection is made; with it, this worker holds `connections`."""

    def closed(self) -> None:
        """The connection is lost."""

    def head_begun(self) -> None:
        """A request's first bytes arrived."""

    def head_ended(self) -> None:
        """A request's head is complete."""

    def body_begun(self) -> None:
        """uvicorn has handled the head: the body, if any, follows."""

    def body_arrived(self, size: int) -> None:
        """`size` bytes of the body arrived."""

    def message_ended(self) -> None:
        """The request is complete."""

    # What a subclass may see and do.

    def transport_for(self, transport: asyncio.Transport) -> asyncio.Transport:
        """The transport uvicorn writes to, in place of the connection's own."""
        return transport

    @property
    def event_loop(self) -> asyncio.AbstractEventLoop:
        return self.loop

    @property
    def reading_paused(self) -> bool:
        """Whether uvicorn stopped reading: the application has not taken the body so far."""
        return self.flow.read_paused

    def close_with(self, answer: bytes) -> None:
        """Close the connection, sending `answer` first unless a response has begun on it."""
        transport = self.transport
        if not transport.is_closing():
            if self.cycle is None or not self.cycle.response_started:
                transport.write(answer)
            transport.close()

    # uvicorn's callbacks.

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._between_requests = True
        self._held = b""
        self._body_left: int | None = None  # of a body whose length its head gave
        self._tls = tls_extension(transport)
        super().connection_made(self.transport_for(transport))
        self.opened(len(self.connections))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed `data` to the parser in pieces, cut where a LIST request may begin, so that one
        beginning within a read (pipelined after another request, or split across reads) is read
        as its GET: the parser reads pieces as it reads separate reads."""
        if not self.arrived(data):
            return
        within_body = self._body_left is not None and len(data) <= self._body_left
        if within_body or not (self._held or _LIST in data or data.endswith(_LIST_STARTS)):
            super().data_received(data)  # no LIST request may begin in it: read whole
            return
        data, self._held = self._held + data, b""
        start = cuts = 0
        while start < len(data):
            listed = self._between_requests and data.startswith(_LIST, start)
            short = len(data) - start < len(_LIST)
            if self._between_requests and short and _LIST.startswith(data[start:]):
                self._held = data[start:]  # perhaps the start of LIST: wait for the rest
                return
            # The next cut is past a listed target, which may end with `LIST` (`/a/MYLIST HTTP`).
            after = data.find(b" ", start + len(_LIST)) if listed else start
            end = len(data) if after == -1 or cuts == _MAX_CUTS else _next_cut(data, after)
            piece = data[start:end]
            super().data_received(_listed(piece) if listed else piece)
            start, cuts = end, cuts + 1
            upgraded = self._between_requests and self.parser.should_upgrade()
            if upgraded or self.transport.is_closing():
                return  # a request ended in an upgrade, or was refused: the rest is not read

    def on_message_begin(self) -> None:
        self._between_requests = False
        super().on_message_begin()
        self.scope[ARRIVED] = time.monotonic()  # type: ignore[literal-required]
        if self._tls is not None:
            self.scope["extensions"] = {"tls": self._tls}  # type: ignore[dict-item]
        self.head_begun()

    def on_headers_complete(self) -> None:
        self.head_ended()
        super().on_headers_complete()
        lengths = [value for name, value in self.headers if name == b"content-length"]
        if len(lengths) == 1 and lengths[0].isdigit() and len(lengths[0]) < 19:
            self._body_left = int(lengths[0])  # a length beside a chunked coding is refused
        self.body_begun()

    def on_body(self, body: bytes) -> None:
        if self._body_left is not None:
            self._body_left -= len(body)
        self.body_arrived(len(body))
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._body_left = None
        self.message_ended()
        super().on_message_complete()
        self._between_requests = True
