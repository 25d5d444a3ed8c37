"""The load generator: a fixed number of HTTP/1.1 requests over a fixed number of connections.

Runs as its own process (`python -m bench.load.driver < plan.json > results.json`) so that its
CPU time is not the server's. It speaks HTTP/1.1 over asyncio streams with keep-alive and
pre-built request bytes: per request it does one write and parses one status line, the headers
and a Content-Length (or chunked) body, which keeps the generator cheap next to any server.
Progress goes to stderr; one JSON object per scenario goes to stdout.
"""

import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Scenario":
        return cls(**{**data, "body": bytes.fromhex(data["body"])})

    def wire(self) -> bytes:
        lines = [
            f"{self.method} {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            f"Content-Length: {len(self.body)}",
            *(f"{key}: {value}" for key, value in self.headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body


class ResponseError(Exception):
    """A response that was not the expected status, or a malformed one."""


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, wire: bytes
) -> tuple[int, bytes]:
    """Send one request and read its whole response."""
    writer.write(wire)
    status_line = await reader.readline()
    if not status_line:
        raise ResponseError("connection closed")
    status = int(status_line.split(b" ", 2)[1])
    length, chunked = 0, False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        key, _, value = line.partition(b":")
        key = key.strip().lower()
        if key == b"content-length":
            length = int(value)
        elif key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not chunked:
        return status, await reader.readexactly(length)
    body = bytearray()
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return status, bytes(body)
        body += chunk[:-2]


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
    connections = [
        await asyncio.open_connection(scenario.host, scenario.port)
        for _ in range(min(scenario.concurrency, requests))
    ]
    for reader, writer in connections:
        for _ in range(WARMUP_PER_CONNECTION):
            status, body = await exchange(reader, writer, wire)
            if status != scenario.expect:
                raise ResponseError(f"{scenario.name}: {status} {body[:300]!r}")
    remaining = requests

    async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            status, _ = await exchange(reader, writer, wire)
            tally.latencies.append(time.perf_counter() - started)
            tally.errors += status != scenario.expect
            tally.progress.tick()

    started = time.perf_counter()
    await asyncio.gather(*(worker(r, w) for r, w in connections))
    tally.seconds += time.perf_counter() - started
    for _, writer in connections:
        writer.close()


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
    asyncio.run(main())
