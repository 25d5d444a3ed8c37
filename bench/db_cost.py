"""What one replica costs its PostgreSQL: statements per request of each kind (BEGIN and COMMIT
counted: each statement is a round trip), the audit mover's writes, and the connections the
replica holds, read from the server's own counters (pg_stat_statements, pg_stat_activity) on a
cluster of the benchmark's own (initdb on a free port, tests/e2e/clusters.py), behind a real
`cipherd serve`.

Each kind of request runs `--requests` times, one at a time, over one connection (but one kind,
sent AT_ONCE at a time over as many connections), and the server's counters before and after give
its cost; what the audit mover stores for those requests (whose records it moves in groups, in
transactions of its own) is counted with them, after the trail has been flushed. The hot kinds find
their key and token in the worker's caches; "cold" runs with CIPHERD_KEY_CACHE_SECONDS=0, every
request a key lookup.

Run: .venv/bin/python -m bench.db_cost [--requests 500] [--workers 2]
"""

import argparse
import base64
import secrets
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import psycopg

from tests.e2e import clusters
from tests.e2e.server import Server, running

# Requests sent together by the concurrent kind: a wave that shares one auth-generation read.
AT_ONCE = 32
CONCURRENT = f"AEZ encrypt, hot key, admin token, {AT_ONCE} at once"
STATEMENTS_SQL = (
    "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
    " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'cipherd'"
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@contextmanager
def _cluster() -> Iterator[clusters.Cluster]:
    cluster = clusters.create()
    with (cluster.data / "postgresql.conf").open("a") as conf:
        conf.write("shared_preload_libraries = 'pg_stat_statements'\n")
        conf.write("pg_stat_statements.track_utility = on\n")
    try:
        cluster.start()
        cluster.execute("CREATE DATABASE cipherd")
        cluster.execute("CREATE EXTENSION pg_stat_statements", database="cipherd")
        yield cluster
    finally:
        cluster.remove()


def _statements(cluster: clusters.Cluster) -> int:
    """The statements run in the service's database so far (this reading's own included: the
    caller takes off what a reading costs)."""
    with psycopg.connect(cluster.url("cipherd"), autocommit=True) as connection:
        row = connection.execute(STATEMENTS_SQL).fetchone()
    assert row is not None
    return int(row[0])


def _connections(cluster: clusters.Cluster) -> int:
    rows = cluster.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = 'cipherd'"
        " AND application_name = 'cipherd'"
    )
    return int(rows[0][0])  # type: ignore[call-overload]


def _measure(
    cluster: clusters.Cluster, server: Server, count: int, request: Callable[[int], None]
) -> float:
    """Statements per request of `request`, the moves of its audit records included."""
    with server.client() as client:
        client.get("/v1/audit", params={"limit": 1})  # the records so far, in the store
    before = _statements(cluster)
    reading = _statements(cluster)
    for index in range(count):
        request(index)
    with server.client() as client:  # the trail flushed: its moves are part of the cost
        client.get("/v1/audit", params={"limit": 1})
    after = _statements(cluster)
    # Without the readings' own statements; the last listing's (a few) are spread over all.
    return (after - reading - (reading - before)) / count


def _kinds(
    client: httpx.Client, scoped: httpx.Client, crowd: list[httpx.Client], pool: ThreadPoolExecutor
) -> dict[str, Callable[[int], None]]:
    """Each kind of request, as a call that sends one (the concurrent kind: AT_ONCE)."""
    plaintext = {"plaintext": _b64(b"x" * 64)}
    sealed = client.post("/v1/aez/hot/encrypt", json=plaintext).json()["ciphertext"]

    def expect(answer: httpx.Response, status: int = 200) -> None:
        assert answer.status_code == status, answer.text

    def together(index: int) -> None:
        answers = pool.map(lambda c: c.post("/v1/aez/hot/encrypt", json=plaintext), crowd)
        for answer in answers:
            expect(answer)

    return {
        "nothing (a listing of the trail, flushing it)": lambda i: expect(
            client.get("/v1/audit", params={"limit": 1})
        ),
        "AEZ encrypt, hot key, admin token": lambda i: expect(
            client.post("/v1/aez/hot/encrypt", json=plaintext)
        ),
        "AEZ decrypt, hot key, scoped token": lambda i: expect(
            scoped.post("/v1/aez/hot/decrypt", json={"ciphertext": sealed})
        ),
        CONCURRENT: together,
        "AEZ encrypt batch of 100, hot key": lambda i: expect(
            client.post("/v1/aez/hot/encrypt/batch", json={"items": [plaintext] * 100})
        ),
        "key metadata (GET /v1/keys/{name})": lambda i: expect(client.get("/v1/keys/hot")),
        "key listing page of 100": lambda i: expect(client.get("/v1/keys", params={"limit": 100})),
        "audit query by key, 10 records": lambda i: expect(
            client.get("/v1/audit", params={"key": "hot", "limit": 10})
        ),
        "key creation (AEZ)": lambda i: expect(
            client.post("/v1/keys", json={"name": f"new-{i}", "type": "aez"}), 201
        ),
        "rotation": lambda i: expect(client.post("/v1/keys/hot/rotate")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    results: list[tuple[str, float]] = []
    held: list[int] = []
    with _cluster() as cluster, tempfile.TemporaryDirectory() as work:
        settings = {
            "CIPHERD_DATABASE_URL": cluster.url("cipherd"),
            "CIPHERD_ROOT_KEY": _b64(secrets.token_bytes(32)),
            "CIPHERD_ADMIN_TOKEN": "db-cost-" + secrets.token_urlsafe(16),
        }
        for label, extra in (
            ("", {}),
            (" (cold: no key cache)", {"CIPHERD_KEY_CACHE_SECONDS": "0"}),
        ):
            with (
                running(
                    Path(work) / f"data{len(results)}",
                    workers_count=args.workers,
                    env=settings | extra,
                ) as server,
                server.client() as client,
                ExitStack() as clients,
                ThreadPoolExecutor(AT_ONCE) as pool,
            ):
                crowd = [clients.enter_context(server.client()) for _ in range(AT_ONCE)]
                if not label:
                    assert client.post("/v1/keys", json={"name": "hot", "type": "aez"}).is_success
                token = client.post(
                    "/v1/tokens", json={"keys": ["hot"], "operations": ["encrypt", "decrypt"]}
                ).json()["token"]
                with server.client(token) as scoped:
                    kinds = _kinds(client, scoped, crowd, pool)
                    if label:
                        kinds = {k: v for k, v in kinds.items() if "hot key" in k}
                    for name, request in kinds.items():
                        per_call = AT_ONCE if name == CONCURRENT else 1
                        if "creation" in name or "rotation" in name:
                            count = max(args.requests // 5, 20)
                        else:
                            count = max(args.requests // per_call, 10)
                        cost = _measure(cluster, server, count, request) / per_call
                        results.append((name + label, cost))
                held.append(_connections(cluster))
    print(f"connections held by the {args.workers} workers at the end of each run: {held}")
    print()
    print("| request | statements per request |")
    print("|---|---|")
    for name, statements in results:
        print(f"| {name} | {statements:.2f} |")


if __name__ == "__main__":
    main()
