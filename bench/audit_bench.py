"""What the audit trail costs a small key operation: AEZ encrypt of 64 bytes through the whole
ASGI app in process (middleware, route, handler), with the trail off, on with the default
`CIPHERD_AUDIT_SYNC=changes` (an encryption's record written to the journal before its answer,
on disk within 0.1 s) and on with `full` (every record on disk before its answer), one request
in flight and many, on the embedded SQLite store.

With `full` and one request in flight each request waits for its own fdatasync of the journal;
with many in flight they share one (group commit), and the figure shows what is left per
request. "Off" is the same app with the middleware's trail taken out, for reference only: the
service always records.

Run: .venv/bin/python -m bench.audit_bench [--requests 4000] [--runs 5]
"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from app.http.middleware import AuditGate
from app.main import create_app
from app.ops.audit import AuditTrail
from app.settings import Settings

TOKEN = "bench-admin-token-0123456789"


async def _call(app: Any, path: str, body: bytes) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"bench"),
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def _run(app: Any, requests: int, in_flight: int) -> float:
    body = json.dumps({"plaintext": "A" * 88}).encode()  # 64 bytes
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            assert await _call(app, "/v1/aez/bench/encrypt", body) == 200

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return (time.perf_counter() - started) / requests * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        settings = Settings(data_dir=Path(work), admin_token=TOKEN, log_level="WARNING")
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            create = json.dumps({"name": "bench", "type": "aez"}).encode()
            assert await _call(app, "/v1/keys", create) == 201
            middleware: Any = app.middleware_stack
            while not hasattr(middleware, "audit_gate"):
                middleware = middleware.app
            trail = middleware.audit_gate.trail
            full = AuditTrail(trail._store, Path(work) / "full-journal", sync="full")
            rows: list[float] = []
            print("| audit | in flight | µs per request (median of runs) |")
            print("|---|---|---|")
            for label, audit, in_flight in (
                ("off", None, 1),
                ("changes", trail, 1),
                ("full", full, 1),
                ("off", None, 16),
                ("changes", trail, 16),
                ("full", full, 16),
                ("off", None, 64),
                ("changes", trail, 64),
                ("full", full, 64),
            ):
                middleware.audit_gate = None if audit is None else AuditGate(audit)
                await _run(app, 200, in_flight)  # warm-up
                times = [await _run(app, args.requests, in_flight) for _ in range(args.runs)]
                rows.append(statistics.median(times))
                spread = f"{min(times):.1f}-{max(times):.1f}"
                print(f"| {label} | {in_flight} | {rows[-1]:.1f} ({spread}) |")
            middleware.audit_gate = AuditGate(trail)
            full.close()


if __name__ == "__main__":
    asyncio.run(main())
