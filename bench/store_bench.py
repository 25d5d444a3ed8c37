"""What the store's hot paths cost, one call at a time, on SQLite and on a real PostgreSQL: a key
version's material (what a keyring miss asks), a key's metadata, a token by its hash (what a
token-cache miss asks), and an audit row moved in groups of 64 (what the audit mover does).

Nothing is cached here: every call is a store transaction. The figures are microseconds per
call, medians of the runs: of wall time (PostgreSQL's include the round trips to the server and
the pool's check of the connection it lends) and of the process's CPU time, which the machine's
other work disturbs less.

Run: .venv/bin/python -m bench.store_bench [--calls 2000] [--runs 7] [--postgres URL]
"""

import argparse
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from app.store import AuditHead, AuditRow, KeyStore, KeyWrapper, TokenRecord, open_store

ROOT_KEY = bytes(range(32))
KEYS = 64
AUDIT_GROUP = 64
POSTGRES_URL = os.environ.get(
    "CIPHERD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def _per_call(calls: Callable[[int], None], count: int, runs: int) -> tuple[float, float]:
    """Median µs per call over `runs` runs of `count` calls, after a warm-up: of wall time,
    and of this process's CPU time (what the store's own code costs, whatever else the
    machine runs; PostgreSQL's server time is not in it)."""
    calls(min(count, 200))
    wall, cpu = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        calls(count)
        wall.append((time.perf_counter() - started) / count * 1e6)
        cpu.append((time.process_time() - started_cpu) / count * 1e6)
    return statistics.median(wall), statistics.median(cpu)


def _hot_paths(store: KeyStore) -> dict[str, Callable[[int], None]]:
    names = [f"k{i}" for i in range(KEYS)]
    for name in names:
        store.keys.create(name, "aez", {}, False, os.urandom(48), None)
    token_hash = os.urandom(32)
    store.tokens.add(TokenRecord("bench", token_hash, "bench", ("*",), ("encrypt",), 1.0, None))
    seq = 0

    def material(count: int) -> None:
        for i in range(count):
            assert store.keys.material(names[i % KEYS]).version == 1

    def get(count: int) -> None:
        for i in range(count):
            store.keys.get(names[i % KEYS])

    def token(count: int) -> None:
        for _ in range(count):
            assert store.tokens.by_hash(token_hash) is not None

    def audit(count: int) -> None:
        nonlocal seq
        for _ in range(count // AUDIT_GROUP):
            rows = []
            for _ in range(AUDIT_GROUP):
                seq += 1
                rows.append(
                    AuditRow(
                        "rbench", seq, time.time(), "r" * 32, "127.0.0.1", "admin",
                        "aez_encrypt", "k1", "1", 200, None, "{}", b"m" * 32,
                    )
                )  # fmt: skip
            store.audit.append(rows, AuditHead("rbench", seq, b"t" * 32))

    return {"keys.material": material, "keys.get": get, "tokens.by_hash": token, "audit row": audit}


def _bench(url: str, backend: str, calls: int, runs: int) -> None:
    store = open_store(url, lambda: KeyWrapper(ROOT_KEY))
    try:
        for what, run in _hot_paths(store).items():
            count = calls * 4 if what == "audit row" else calls
            wall, cpu = _per_call(run, count, runs)
            print(f"| {backend} | {what} | {wall:.1f} | {cpu:.1f} |", flush=True)
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--postgres", default=POSTGRES_URL, help="a server to make a database on")
    args = parser.parse_args()
    print("| backend | call | µs per call (wall, median) | µs of CPU per call (median) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        _bench(f"sqlite:///{Path(work) / 'store.sqlite3'}", "sqlite", args.calls, args.runs)
    database = f"cipherd_bench_{secrets.token_hex(4)}"
    with psycopg.connect(args.postgres, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    try:
        url = f"{args.postgres.rsplit('/', 1)[0]}/{database}"
        _bench(url, "postgres", args.calls, args.runs)
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


if __name__ == "__main__":
    main()
