"""What the auth check costs a request: the store's auth generation read for every request
(`CIPHERD_AUTH_CHECK_SECONDS=0`, the default) beside a reading reused for 0.5 s.

    .venv/bin/python -m bench.auth_check [--runs 7] [--requests 3000] [--concurrency 32]

Two `cipherd serve --workers 1` on SQLite, each in a fresh data directory, differ only in that
setting. Each is driven by the load test's generator (`bench.load.driver`, a process of its
own) with AES-256-GCM encrypt of 64 B (`POST /v1/aead/{name}/encrypt`) and KMS `Encrypt` of
64 B, both by a scoped token (a bearer token, and its AWS key pair with SigV4), in turns: run
after run, each operation on one server then the other. It prints, per operation, the median
(and range) of requests/s and of the server's CPU time per request (its processes' user and
system time over the run), and the ratio of the two servers taken run by run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench.load.__main__ import HOST, ROOT, b64, free_port, json_body, process, wait_until

SERVERS = {
    "read each request": {"CIPHERD_AUTH_CHECK_SECONDS": "0"},
    "reused 0.5 s": {"CIPHERD_AUTH_CHECK_SECONDS": "0.5"},
}
OPERATIONS = ("AES-256-GCM encrypt 64 B", "KMS Encrypt 64 B")


def start(stack: ExitStack, work: Path, name: str, settings: dict[str, str]) -> tuple[int, int]:
    """The port of a one-worker cipherd and the id of its process group."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env["CIPHERD_DATA_DIR"] = str(work / name)
    env.update(settings)
    log = work / f"{name}.log"
    command = [sys.executable, "-m", "app", "serve", "--host", HOST, "--port", str(port)]
    supervisor = stack.enter_context(process([*command, "--workers", "1"], env, log))
    url = f"http://{HOST}:{port}"
    wait_until(lambda: httpx.get(f"{url}/readyz").status_code == 200, name, log)
    return port, supervisor.pid


def scenarios(port: int, admin_token: str, requests: int, concurrency: int) -> list[dict]:
    """A key, a scoped token with an AWS key pair, and the two requests made with it."""
    url = f"http://{HOST}:{port}"
    headers = {"Authorization": f"Bearer {admin_token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        made = client.post("/v1/keys", json={"name": "bench-aes", "type": "aes256-gcm"})
        made.raise_for_status()
        scoped = client.post(
            "/v1/tokens",
            json={"keys": ["bench-*"], "operations": ["encrypt"], "aws_credentials": True},
        )
        scoped.raise_for_status()
    token = scoped.json()
    small = os.urandom(64)
    common: dict[str, Any] = {
        "host": HOST,
        "port": port,
        "method": "POST",
        "expect": 200,
        "requests": requests,
        "concurrency": concurrency,
        "items": 1,
    }
    aead = {
        **common,
        "name": OPERATIONS[0],
        "path": "/v1/aead/bench-aes/encrypt",
        "headers": {
            "Authorization": f"Bearer {token['token']}",
            "Content-Type": "application/json",
        },
        "body": json_body({"plaintext": b64(small)}).hex(),
    }
    kms = {
        **common,
        "name": OPERATIONS[1],
        "path": "/",
        "headers": {},
        "body": json_body({"KeyId": "bench-aes", "Plaintext": b64(small)}).hex(),
        "sigv4": {
            "access_key_id": token["aws_access_key_id"],
            "secret": token["aws_secret_access_key"],
            "region": "us-east-1",
            "target": "TrentService.Encrypt",
        },
    }
    return [aead, kms]


def cpu_seconds(session: int) -> float:
    """User and system time of the processes of a session (a server and its worker)."""
    ticks = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def drive(scenario: dict) -> dict:
    """One pass of the load generator over one scenario."""
    driver = subprocess.run(
        [sys.executable, "-m", "bench.load.driver"],
        input=json.dumps({"scenarios": [scenario], "rounds": 1}),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        check=True,
    )
    result: dict = json.loads(driver.stdout)
    if result["errors"]:
        raise SystemExit(f"{scenario['name']}: {result['errors']} answers other than 200")
    return result


def spread(values: list[float], digits: int = 0) -> str:
    return (
        f"{statistics.median(values):,.{digits}f} "
        f"({min(values):,.{digits}f}-{max(values):,.{digits}f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.auth_check", description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--requests", type=int, default=3000, help="per operation and run")
    parser.add_argument("--concurrency", type=int, default=32, help="open connections")
    args = parser.parse_args()
    rps: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        plans = []
        for name, settings in SERVERS.items():
            port, session = start(stack, work, name.replace(" ", "-"), settings)
            admin = (work / name.replace(" ", "-") / "admin-token").read_text().strip()
            plans.append((name, session, scenarios(port, admin, args.requests, args.concurrency)))
        for _ in range(args.runs):
            for index in range(len(OPERATIONS)):
                for name, session, plan in plans:
                    before = cpu_seconds(session)
                    result = drive(plan[index])
                    spent = cpu_seconds(session) - before
                    key = (name, OPERATIONS[index])
                    rps.setdefault(key, []).append(result["rps"])
                    cpu.setdefault(key, []).append(spent / result["requests"] * 1e6)
    first, second = SERVERS
    print(f"median (range) of {args.runs} runs, {args.requests} requests each, load", end=" ")
    print(", ".join(f"{load:.1f}" for load in os.getloadavg()))
    print()
    print(f"| operation | figure | {first} | {second} | {second} / {first} |")
    print("|---|---|---:|---:|---:|")
    for operation in OPERATIONS:
        for figure, table in (("requests/s", rps), ("server CPU µs per request", cpu)):
            a, b = table[(first, operation)], table[(second, operation)]
            ratios = [y / x for x, y in zip(a, b, strict=True)]
            print(f"| {operation} | {figure} | {spread(a)} | {spread(b)} | {spread(ratios, 2)} |")


if __name__ == "__main__":
    main()
