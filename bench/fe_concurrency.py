"""FE decryption latency on one worker under 1, 8 and 64 concurrent connections.

    .venv/bin/python -m bench.fe_concurrency [--requests N] [--processes P ...]

Starts `cipherd serve` with one worker on the embedded default in a fresh data directory, once
per `--processes` value (CIPHERD_FE_PROCESSES: the worker's FE decryption processes; 0 runs every
decryption in the worker itself), creates an ipfe-opt key of dimension 10 and one functional
key, checks one decryption, and drives POST /v1/fe/{name}/decrypt with `bench.load.driver` at
each concurrency: requests/s and p50/p99 latency, the table printed as Markdown.
"""

import argparse
import os
import secrets
import sys
import tempfile
from pathlib import Path

import httpx

from bench.load.__main__ import drive, free_port, json_body, wait_until

N, BOUND = 10, 10_000


def measure(processes: int, requests: int, concurrencies: list[int]) -> list[dict[str, object]]:
    import subprocess

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
            with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                client.post(
                    "/v1/keys", json={"name": "fe", "type": "ipfe-opt", "dimension": N}
                ).raise_for_status()
                x, y = list(range(1, N + 1)), [2] * N
                key = client.post("/v1/fe/fe/keygen", json={"y": y}).json()["functional_key"]
                ct = client.post("/v1/fe/fe/encrypt", json={"x": x}).json()["ciphertext"]
                body = {"functional_key": key, "ciphertext": ct, "bounds": [0, BOUND]}
                check = client.post("/v1/fe/fe/decrypt", json=body).json()
                assert check["result"] == sum(a * b for a, b in zip(x, y, strict=True)), check
            plan = [
                {
                    "name": f"FE decrypt, {processes} processes, {c} connections",
                    "port": port,
                    "method": "POST",
                    "path": "/v1/fe/fe/decrypt",
                    "headers": {**headers, "Content-Type": "application/json"},
                    "body": json_body(body),
                    "requests": max(requests, 4 * c),
                    "concurrency": c,
                    "items": 1,
                }
                for c in concurrencies
            ]
            return drive(plan, rounds=1)
        finally:
            server.terminate()
            server.wait(timeout=15)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fe_concurrency", description=__doc__)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--processes", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    args = parser.parse_args()
    print("| FE processes | connections | req/s | p50 ms | p99 ms | errors |")
    print("|---:|---:|---:|---:|---:|---:|")
    for processes in args.processes:
        for row in measure(processes, args.requests, args.concurrency):
            print(
                f"| {processes} | {row['concurrency']} | {row['rps']:,.0f} | "
                f"{row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row['errors']} |"
            )


if __name__ == "__main__":
    main()
