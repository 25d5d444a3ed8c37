"""The load generator: a fixed number of HTTP/1.1 requests over a fixed number of connections.

Runs as its own process (`python -m bench.load.driver < plan.json > results.json`) so that its
CPU time is not the server's. It speaks HTTP/1.1 with keep-alive and pre-built request bytes,
one request in flight per connection (no pipelining), on uvloop with one asyncio Protocol per
connection: per request one write, and a search of the response head for its status and
Content-Length (or chunked framing). That costs about 35 µs of CPU per request here, close to
wrk's 25-45 µs and a quarter or less of what either server spends
(docs/performance/history/2026-11-30.md, "CPU per request").
Progress goes to stderr; one JSON object per scenario goes to stdout.
"""

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import uvloop

from bench.load import sigv4

WARMUP_PER_CONNECTION = 3


@dataclass(frozen=True)
class Scenario:
    name: str
    host: str
    port: int
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    expect: int
    requests: int
    concurrency: int
    items: int  # work items per request (batch size), for items/s
    # A KMS request's SigV4 signer: access_key_id, secret, region, target.
    sigv4: dict[str, str] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Scenario":
        return cls(**{**data, "body": bytes.fromhex(data["body"])})

    def wire(self) -> bytes:
        """The request's bytes; a KMS request signed now (each round signs anew, so that a run
        longer than AWS's five minutes of clock skew stays within them)."""
        headers = self.headers
        if self.sigv4 is not None:
            host = f"{self.host}:{self.port}"
            headers = {**headers, **sigv4.signed_headers(host=host, body=self.body, **self.sigv4)}
        lines = [
            f"{self.method} {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            f"Content-Length: {len(self.body)}",
            *(f"{key}: {value}" for key, value in headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body


class ResponseError(Exception):
    """A response that was not the expected status, or a malformed one."""


class Connection(asyncio.Protocol):
    """One keep-alive connection with one request in flight at a time.

    The next request is written from `data_received` as soon as a response is complete: no
    task switch, no stream buffering, and the headers are searched rather than parsed line by
    line, which keeps the generator's cost per request small next to any server's.
    """

    def __init__(self, wire: bytes) -> None:
        self.wire = wire
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.on_response: Callable[[int, float], bool] = lambda status, seconds: False
        self.idle: asyncio.Future[None] | None = None
        self.lost: Exception | None = None
        self.started = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def run(self, on_response: Callable[[int, float], bool]) -> "asyncio.Future[None]":
        """Send requests back to back while `on_response(status, seconds)` says go on."""
        self.on_response = on_response
        self.idle = asyncio.get_running_loop().create_future()
        if self.lost is not None:
            self.idle.set_exception(self.lost)
        else:
            self._send()
        return self.idle

    def _send(self) -> None:
        assert self.transport is not None
        self.started = time.perf_counter()
        self.transport.write(self.wire)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        try:
            response = parse_response(self.buffer)
        except (ValueError, ResponseError) as exc:
            self._fail(ResponseError(f"malformed response: {exc}"))
            return
        if response is None:
            return
        status, end = response
        if end != len(self.buffer):
            self._fail(ResponseError("bytes after the response (one request is in flight)"))
            return
        self.buffer.clear()
        try:
            go_on = self.on_response(status, time.perf_counter() - self.started)
        except ResponseError as exc:
            self._fail(exc)
            return
        if go_on:
            self._send()
        elif self.idle is not None and not self.idle.done():
            self.idle.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = ResponseError(f"connection closed: {exc}")
        self._fail(self.lost)

    def _fail(self, exc: Exception) -> None:
        if self.idle is not None and not self.idle.done():
            self.idle.set_exception(exc)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def parse_response(buffer: bytearray) -> tuple[int, int] | None:
    """(status, end of the response) for a complete HTTP/1.1 response at the start of
    `buffer`, None while it is incomplete. Bodies: Content-Length or chunked."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    head = bytes(buffer[:head_end]).lower()
    status = int(head[9:12])
    body_start = head_end + 4
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        value_end = head.find(b"\r\n", at + 2)
        length = int(head[at + 17 : value_end if value_end >= 0 else len(head)])
        end = body_start + length
        return (status, end) if len(buffer) >= end else None
    if b"\r\ntransfer-encoding:" in head and b"chunked" in head:
        position = body_start
        while True:
            line_end = buffer.find(b"\r\n", position)
            if line_end < 0:
                return None
            size = int(bytes(buffer[position:line_end]).split(b";")[0], 16)
            position = line_end + 2 + size + 2
            if len(buffer) < position:
                return None
            if size == 0:
                return status, position
    return status, body_start  # no body (a 204 or 304, or a HEAD)


class Progress:
    """One line per scenario on stderr, each tenth of its requests."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total, self.done, self.shown = name, total, 0, 0

    def tick(self) -> None:
        self.done += 1
        tenth = self.done * 10 // self.total
        if tenth != self.shown:
            self.shown = tenth
            print(f"  {self.name:<32} {self.done:>7}/{self.total}", file=sys.stderr)


class Tally:
    """One scenario's latencies and time under load, summed over its rounds."""

    def __init__(self, scenario: Scenario, rounds: int) -> None:
        self.scenario = scenario
        self.latencies: list[float] = []
        self.errors = 0
        self.seconds = 0.0
        self.progress = Progress(scenario.name, scenario.requests)
        base, extra = divmod(scenario.requests, rounds)
        self.per_round = [base + (i < extra) for i in range(rounds)]

    def result(self) -> dict[str, Any]:
        latencies = sorted(self.latencies)
        count, scenario = len(latencies), self.scenario
        return {
            "name": scenario.name,
            "requests": count,
            "concurrency": scenario.concurrency,
            "items": scenario.items,
            "errors": self.errors,
            "seconds": self.seconds,
            "rps": count / self.seconds,
            "items_per_second": count * scenario.items / self.seconds,
            "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[min(count - 1, int(count * 0.99))] * 1000,
        }


async def run_round(tally: Tally, requests: int) -> None:
    """`requests` requests over the scenario's connections, opened and warmed up first."""
    scenario = tally.scenario
    wire = scenario.wire()
    loop = asyncio.get_running_loop()
    connections: list[Connection] = []
    for _ in range(min(scenario.concurrency, requests)):
        _, connection = await loop.create_connection(
            lambda: Connection(wire), scenario.host, scenario.port
        )
        connections.append(connection)
    try:
        await warm_up(connections, scenario)
        remaining = requests - len(connections)  # each connection starts with one request
        latencies, progress, expect = tally.latencies, tally.progress, scenario.expect

        def on_response(status: int, seconds: float) -> bool:
            nonlocal remaining
            latencies.append(seconds)
            tally.errors += status != expect
            progress.tick()
            if remaining > 0:
                remaining -= 1
                return True
            return False

        started = time.perf_counter()
        await asyncio.gather(*(connection.run(on_response) for connection in connections))
        tally.seconds += time.perf_counter() - started
    finally:
        for connection in connections:
            connection.close()


async def warm_up(connections: list[Connection], scenario: Scenario) -> None:
    """A few requests on each connection that must all answer the expected status before the
    clock starts. A connection that is warm goes on sending until all are: else, while slow
    requests warm the others, it would sit idle past the server's keep-alive timeout (uvicorn's
    5 s) and be closed."""
    cold = len(connections)

    def checker() -> Callable[[int, float], bool]:
        left = WARMUP_PER_CONNECTION

        def check(status: int, seconds: float) -> bool:
            nonlocal left, cold
            if status != scenario.expect:
                raise ResponseError(f"{scenario.name}: status {status} during warm-up")
            left -= 1
            if left == 0:
                cold -= 1
            return left > 0 or cold > 0

        return check

    await asyncio.gather(*(connection.run(checker()) for connection in connections))


async def run(scenarios: list[Scenario], rounds: int) -> list[dict[str, Any]]:
    """Every scenario in turn, `rounds` times over, so that load from elsewhere on the machine
    falls on all of them alike rather than on whichever ran at the wrong moment."""
    tallies = [Tally(scenario, rounds) for scenario in scenarios]
    for round_index in range(rounds):
        for tally in tallies:
            await run_round(tally, tally.per_round[round_index])
    return [tally.result() for tally in tallies]


async def main() -> None:
    plan = json.load(sys.stdin)
    scenarios = [Scenario.from_json(data) for data in plan["scenarios"]]
    for result in await run(scenarios, plan["rounds"]):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    uvloop.run(main())
