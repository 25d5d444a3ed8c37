"""FE decryption on one worker under 1, 8 and 64 concurrent connections, beside the same
decryption in process.

    .venv/bin/python -m bench.fe_concurrency [--requests N] [--n 1 10 100] [--processes P ...]

Starts `cipherd serve` with one worker on the embedded default in a fresh data directory, once
per `--processes` value (CIPHERD_FE_PROCESSES: the worker's FE decryption processes; 0 runs every
decryption in the worker itself), creates an ipfe-opt key at each dimension and one functional
key for it, checks one decryption, and drives POST /v1/fe/{name}/decrypt with
`bench.load.driver` at each concurrency, `--rounds` times over so that load from elsewhere falls
on every cell alike: requests/s, the median over the rounds of their p50 and p99 latency, and
the server's CPU time per request (its worker and FE pool process, from /proc). Beside them,
the same decryption in process from the same bytes (decode and check the ciphertext, decrypt
with a prepared key and a warm table: what the service does with the bytes it receives), on one
thread: its median wall-clock time and its CPU time, over `--inline-runs`. The ratios compare
the service's wall-clock time per decryption (1 / throughput) and its CPU time per request with
those.
"""

import argparse
import base64
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.fe_http_bench import cpu_seconds
from bench.load.__main__ import drive, free_port, json_body, wait_until
from core.fe.group import DlogTable
from core.fe.ipfe import opt

BOUND = 10_000


def in_process_ms(key: bytes, ciphertext: bytes, runs: int) -> tuple[float, float]:
    """The median wall-clock time and the mean CPU time of one decryption of `ciphertext` from
    its bytes, in this process."""
    table = DlogTable(opt.base(), 0, BOUND)
    prepared = opt.prepare(opt.Key.from_bytes(key))
    times = []
    start_cpu = time.process_time()
    for _ in range(runs):
        start = time.perf_counter()
        opt.decrypt(table, prepared, opt.Ciphertext.from_bytes(ciphertext))
        times.append(time.perf_counter() - start)
    cpu = (time.process_time() - start_cpu) / runs
    return statistics.median(times) * 1000, cpu * 1000


def measure(processes: int, args: argparse.Namespace) -> list[dict[str, object]]:
    token = "bench-admin-" + secrets.token_urlsafe(16)
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        log = Path(data) / "server.log"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")},
            "CIPHERD_DATA_DIR": data,
            "CIPHERD_ADMIN_TOKEN": token,
            "CIPHERD_LOG_LEVEL": "WARNING",
            "CIPHERD_FE_PROCESSES": str(processes),
        }
        with log.open("wb") as out:
            server = subprocess.Popen(
                [sys.executable, "-m", "app", "serve", "--port", str(port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: httpx.get(f"{url}/readyz").status_code == 200, "cipherd", log)
            headers = {"Authorization": f"Bearer {token}"}
            plan, inline = [], {}
            with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                for n in args.n:
                    name = f"fe-{n}"
                    client.post(
                        "/v1/keys", json={"name": name, "type": "ipfe-opt", "dimension": n}
                    ).raise_for_status()
                    top = max(v for v in range(1, 100) if n * v * v <= BOUND)
                    x, y = [top] * n, [top] * n
                    key = client.post(f"/v1/fe/{name}/keygen", json={"y": y}).json()
                    ct = client.post(f"/v1/fe/{name}/encrypt", json={"x": x}).json()
                    body = {
                        "functional_key": key["functional_key"],
                        "ciphertext": ct["ciphertext"],
                        "bounds": [0, BOUND],
                    }
                    check = client.post(f"/v1/fe/{name}/decrypt", json=body).json()
                    assert check["result"] == n * top * top, check
                    inline[n] = in_process_ms(
                        base64.b64decode(key["functional_key"]),
                        base64.b64decode(ct["ciphertext"]),
                        args.inline_runs,
                    )
                    plan += [
                        {
                            "n": n,
                            "name": f"FE decrypt n={n}, {processes} processes, {c} connections",
                            "port": port,
                            "method": "POST",
                            "path": f"/v1/fe/{name}/decrypt",
                            "headers": {**headers, "Content-Type": "application/json"},
                            "body": json_body(body),
                            "requests": max(args.requests, 4 * c),
                            "concurrency": c,
                            "items": 1,
                        }
                        for c in args.concurrency
                    ]
                return drive_rounds(plan, args.rounds, server.pid, client, inline)
        finally:
            server.terminate()
            server.wait(timeout=15)


def decryptions(client: httpx.Client) -> float:
    """FE decryptions the server has answered, from its /metrics."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in client.get("/metrics").text.splitlines()
        if line.startswith("cipherd_http_requests_total{") and "/v1/fe/{name}/decrypt" in line
    )


def drive_rounds(
    plan: list[dict[str, Any]],
    rounds: int,
    server: int,
    client: httpx.Client,
    inline: dict[int, tuple[float, float]],
) -> list[dict[str, Any]]:
    """Each cell of `plan` in turn, `rounds` times over, with the server's CPU time per
    decryption it answered (the load generator's warm-up requests included)."""
    runs: list[list[dict[str, Any]]] = [[] for _ in plan]
    cpu = [0.0 for _ in plan]
    answered = [0.0 for _ in plan]
    for _ in range(rounds):
        for index, cell in enumerate(plan):
            scenario = {k: v for k, v in cell.items() if k != "n"}
            scenario["requests"] = max(cell["requests"] // rounds, 2 * cell["concurrency"])
            count = decryptions(client)
            before = cpu_seconds(server)
            (row,) = drive([scenario], rounds=1)
            cpu[index] += cpu_seconds(server) - before
            answered[index] += decryptions(client) - count
            runs[index].append(row)
    results = []
    for cell, rows, seconds, served in zip(plan, runs, cpu, answered, strict=True):
        requests = sum(row["requests"] for row in rows)
        results.append(
            {
                "n": cell["n"],
                "concurrency": cell["concurrency"],
                "rps": requests / sum(row["seconds"] for row in rows),
                "p50_ms": statistics.median(row["p50_ms"] for row in rows),
                "p99_ms": statistics.median(row["p99_ms"] for row in rows),
                "errors": sum(row["errors"] for row in rows),
                "cpu_ms": seconds / served * 1000,
                "in_process_ms": inline[cell["n"]][0],
                "in_process_cpu_ms": inline[cell["n"]][1],
            }
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fe_concurrency", description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inline-runs", type=int, default=50)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--processes", type=int, nargs="+", default=[1])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = [(p, row) for p in args.processes for row in measure(p, args)]
    load_after = os.getloadavg()
    print(f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n")
    print(
        "| FE processes | n | connections | req/s | p50 ms | p99 ms | errors | in process ms "
        "| 1/rate / in process | server CPU ms | in process CPU ms | CPU / in process |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for processes, row in rows:
        print(
            f"| {processes} | {row['n']} | {row['concurrency']} | {row['rps']:,.0f} | "
            f"{row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row['errors']} | "
            f"{row['in_process_ms']:.2f} | {1000 / row['rps'] / row['in_process_ms']:.2f} | "
            f"{row['cpu_ms']:.2f} | {row['in_process_cpu_ms']:.2f} | "
            f"{row['cpu_ms'] / row['in_process_cpu_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
