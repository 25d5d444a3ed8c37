"""The connection transport that sends a turn's small writes together: a response's head and
body leave in one write, in order, over a real socket."""

import asyncio
import socket

import pytest
import uvloop

from app.server.protocol import _COALESCE_BYTES, _CoalescedWrites


class _Counted(asyncio.Protocol):
    pass


async def _exchange(writes: list[bytes], close: bool = False) -> tuple[list[bytes], bytes]:
    """Write `writes` in one turn through the coalescing transport of a real connection; what
    the transport was asked to write, and what the peer received."""
    ours, theirs = socket.socketpair()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_accepted_socket(_Counted, ours)
    sent: list[bytes] = []

    class Counting:  # the real transport, its writes noted
        def write(self, data: bytes) -> None:
            sent.append(bytes(data))
            transport.write(data)

        def is_closing(self) -> bool:
            return transport.is_closing()

        def close(self) -> None:
            transport.close()

    coalesced = _CoalescedWrites(Counting(), loop)  # type: ignore[arg-type]
    for data in writes:
        coalesced.write(data)
    if close:
        coalesced.close()
    await asyncio.sleep(0)  # the end of the turn
    if not close:
        transport.close()
    await asyncio.sleep(0.05)  # the transport's close, a turn or two later
    theirs.settimeout(5)
    received = b""
    while chunk := theirs.recv(1 << 20):
        received += chunk
    theirs.close()
    return sent, received


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    def run_in_loop(coroutine):  # type: ignore[no-untyped-def]
        if request.param == "uvloop":
            return uvloop.run(coroutine)
        return asyncio.run(coroutine)

    return run_in_loop


def test_a_head_and_a_small_body_leave_in_one_write(run) -> None:  # type: ignore[no-untyped-def]
    head, body = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n", b"hello"
    sent, received = run(_exchange([head, body]))
    assert sent == [head + body]
    assert received == head + body


def test_a_large_body_is_not_copied_to_join_its_head(run) -> None:  # type: ignore[no-untyped-def]
    head, body = b"HTTP/1.1 200 OK\r\n\r\n", b"x" * _COALESCE_BYTES
    sent, received = run(_exchange([head, body]))
    assert sent == [head, body]
    assert received == head + body


def test_many_small_pieces_leave_once_they_reach_the_bound(run) -> None:  # type: ignore[no-untyped-def]
    pieces = [bytes([65 + i % 26]) * 1000 for i in range(100)]
    sent, received = run(_exchange(pieces))
    assert len(sent) == 2  # 65 pieces reach the bound, the other 35 leave at the turn's end
    assert b"".join(sent) == received == b"".join(pieces)


def test_closing_sends_what_waits_first(run) -> None:  # type: ignore[no-untyped-def]
    _, received = run(_exchange([b"HTTP/1.1 408 Request Timeout\r\n\r\n"], close=True))
    assert received == b"HTTP/1.1 408 Request Timeout\r\n\r\n"
