"""What the service's costs do as the keys and records grow: one real `cipherd serve` (two
workers) per size, populated through the API to 1,000, 10,000 and 100,000 keys (each creation
one audit record), and for each the p50 and p99 of a key lookup (`GET /v1/keys/{name}`), an
encryption with a cold cache (the service runs with CIPHERD_KEY_CACHE_SECONDS=0: every
encryption unwraps its key from the store), a deep page of the key listing (100 keys after a
name in the second half) and an audit query by key (`GET /v1/audit?key=`), beside the rate the
keys were created at and the records per second `audit verify` checks (in this process, on the
store with its service stopped; the imports and the store's opening apart), of wall time and
of this process's CPU time. On SQLite and on PostgreSQL (databases of their own on
CIPHERD_TEST_POSTGRES_URL's server, dropped at the end).

The figures that matter are the growth from 1,000 to 100,000 keys, and on a shared machine the
load moves: the sizes are measured in interleaved rounds (each round a few requests of each
kind at each size), so that the load of any moment weighs on all of them alike. The load
average is printed with them.

Run: .venv/bin/python -m bench.scale [--sizes 1000,10000,100000] [--samples 300] [--rounds 10]
     [--clients 16] [--backends sqlite,postgres]
"""

import argparse
import base64
import os
import random
import secrets
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from app.ops import audit
from app.store import KeyWrapper, open_store
from tests.e2e.server import Server, running

POSTGRES_URL = os.environ.get(
    "CIPHERD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
ROOT_KEY = secrets.token_bytes(32)
MEASURES = ("lookup", "cold encrypt", "deep page", "audit by key")
PLAINTEXT = {"plaintext": base64.b64encode(b"x" * 64).decode()}


def _name(index: int) -> str:
    return f"key-{index:07d}"


@contextmanager
def _database(backend: str, work: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{work / 'store.sqlite3'}"
        return
    name = f"cipherd_scale_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{POSTGRES_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _populate(server: Server, size: int, clients: int) -> float:
    """Create `size` keys over `clients` connections: keys per second."""
    counter = iter(range(size))
    lock = threading.Lock()
    failures: list[str] = []

    def work() -> None:
        with server.client() as client:
            while True:
                with lock:
                    index = next(counter, None)
                if index is None:
                    return
                body = {"name": _name(index), "type": "aez"}
                for _ in range(20):  # a 503 (a busy store) is retried, as a client would
                    answer = client.post("/v1/keys", json=body)
                    if answer.status_code != 503:
                        break
                    time.sleep(0.1)
                if answer.status_code != 201:
                    failures.append(answer.text)

    started = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"{len(failures)} creations failed: {failures[:3]}")
    return size / (time.perf_counter() - started)


def _request(client: httpx.Client, measure: str, size: int) -> httpx.Response:
    """One request of `measure` on a store of `size` keys, on a key picked at random."""
    pick = _name(random.randrange(size))
    if measure == "lookup":
        return client.get(f"/v1/keys/{pick}")
    if measure == "cold encrypt":
        return client.post(f"/v1/aez/{pick}/encrypt", json=PLAINTEXT)
    if measure == "deep page":
        after = _name(random.randrange(size // 2, max(size // 2 + 1, size - 100)))
        return client.get("/v1/keys", params={"limit": 100, "after": after})
    return client.get("/v1/audit", params={"key": pick, "limit": 100})


@dataclass
class Size:
    """One store of `size` keys behind its own service, and what was measured on it."""

    backend: str
    size: int
    url: str
    server: Server
    created_per_second: float = 0.0
    samples: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MEASURES})
    records: int = 0
    verified_per_second: float = 0.0
    verified_per_cpu_second: float = 0.0

    def sample(self, client: httpx.Client, count: int) -> None:
        for measure in MEASURES:
            for _ in range(count):
                started = time.perf_counter()
                answer = _request(client, measure, self.size)
                elapsed = (time.perf_counter() - started) * 1000
                if answer.status_code != 200:
                    raise SystemExit(f"{measure}: {answer.status_code} {answer.text}")
                self.samples[measure].append(elapsed)

    def percentiles(self, measure: str) -> tuple[float, float]:
        ordered = sorted(self.samples[measure])
        return statistics.median(ordered), ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)]

    def verify(self) -> None:
        """`audit verify` on the store, its service stopped (its journals moved into it) so that
        the trail holds still."""
        self.server.stop()
        store = open_store(self.url, lambda: KeyWrapper(ROOT_KEY))
        try:
            started, started_cpu = time.perf_counter(), time.process_time()
            self.records, faults = audit.verify(store)
            wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        finally:
            store.close()
        if faults:
            raise SystemExit(f"the trail does not verify: {faults[:3]}")
        self.verified_per_second = self.records / wall
        self.verified_per_cpu_second = self.records / cpu

    def row(self) -> list[str]:
        return [
            self.backend,
            f"{self.size:,}",
            *(" / ".join(f"{v:.1f}" for v in self.percentiles(m)) for m in MEASURES),
            f"{self.created_per_second:.0f}",
            f"{self.verified_per_second:,.0f} / {self.verified_per_cpu_second:,.0f}"
            f" ({self.records:,})",
        ]


def _run(backend: str, sizes: list[int], samples: int, rounds: int, clients: int) -> list[Size]:
    with ExitStack() as stack:
        measured = []
        for size in sizes:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            url = stack.enter_context(_database(backend, work))
            settings = {
                "CIPHERD_DATABASE_URL": url,
                "CIPHERD_ROOT_KEY": base64.b64encode(ROOT_KEY).decode(),
                "CIPHERD_ADMIN_TOKEN": "scale-" + secrets.token_urlsafe(16),
                "CIPHERD_KEY_CACHE_SECONDS": "0",
            }
            server = stack.enter_context(running(work / "data", env=settings, workers_count=2))
            one = Size(backend, size, url, server)
            one.created_per_second = _populate(server, size, clients)
            print(f"{backend}: {size:,} keys made, {one.created_per_second:.0f}/s", flush=True)
            measured.append(one)
        clients_of = [stack.enter_context(one.server.client()) for one in measured]
        for one, client in zip(measured, clients_of, strict=True):
            one.sample(client, 5)  # connections made and caches warm, before the clock runs
            one.samples = {m: [] for m in MEASURES}
        for round_ in range(rounds):
            for one, client in zip(measured, clients_of, strict=True):
                one.sample(client, max(1, samples // rounds))
            print(f"{backend}: round {round_ + 1} of {rounds}", flush=True)
        for client in clients_of:
            client.close()
        for one in measured:
            one.verify()
        return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    backends = args.backends.split(",")
    loads = [os.getloadavg()[0]]
    results = []
    for backend in backends:
        results += _run(backend, sizes, args.samples, args.rounds, args.clients)
        loads.append(os.getloadavg()[0])
    print()
    print(f"load average (1 min) at the start and after each store: {loads}")
    print()
    header = [
        "store",
        "keys",
        *(f"{m} p50 / p99 ms" for m in MEASURES),
        "created keys/s",
        "verify records/s, wall / CPU (records)",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for one in results:
        print("| " + " | ".join(one.row()) + " |")
    print()
    print(f"| store | p50 at {sizes[-1]:,} keys / at {sizes[0]:,}: " + ", ".join(MEASURES) + " |")
    print("|---|---|")
    for backend in backends:
        mine = [one for one in results if one.backend == backend]
        first, last = mine[0], mine[-1]
        growth = ", ".join(
            f"×{last.percentiles(m)[0] / first.percentiles(m)[0]:.2f}" for m in MEASURES
        )
        print(f"| {backend} | {growth} |")


if __name__ == "__main__":
    main()
