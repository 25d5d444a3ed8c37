"""What ECIES encrypt could reach against a no-op, measured inside the server that runs it.

    .venv/bin/python -m bench.ecies_floor [--requests 20000] [--concurrency 32] [--rounds 3]

Runs one uvicorn worker the way `cipherd serve` runs each of its workers, on the service's app
with three probe routes put before all others:

- `GET /probe/noop`: a constant answer, the framework's limit;
- `GET /probe/multiplications`: the two secp256k1 generator multiplications of an encryption to
  a held key (a fresh ephemeral secret k, then k·G and (k·s)·G), nothing else;
- `GET /probe/encrypt`: `core.ecies.encrypt` of 1 KiB to a held key, nothing else;

beside the service's own `GET /healthz` and `POST /v1/ecies/{name}/encrypt` of 1 KiB (JSON, a
bearer token). The load test's generator drives each in turn from a separate process. The table
gives the server's CPU time per request (user + system from /proc) and requests/s, medians over
the rounds, and the no-op's CPU time over each one's: the requests/s ratio of a server bound by
its CPU, which is what the load test's "ECIES encrypt ≥ 0.6 × no-op" compares.
"""

import argparse
import base64
import json
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from fastapi import APIRouter, FastAPI, Response

from bench.load.__main__ import HOST, drive, free_port, process, wait_until

MESSAGE_BYTES = 1024
TARGET = 0.6
_ANSWER = b'{"status":"ok"}'


def probe_app() -> FastAPI:
    """The service's app with the probe routes first (a uvicorn factory)."""
    from app.main import create_app
    from core import ecies
    from core.ecies import keys, secp256k1

    app = create_app()
    secret, public = ecies.generate_keypair()
    message = os.urandom(MESSAGE_BYTES)
    probes = APIRouter(prefix="/probe")

    @probes.get("/noop")
    async def noop() -> Response:
        return Response(_ANSWER, media_type="application/json")

    @probes.get("/multiplications")
    async def multiplications() -> Response:
        ephemeral = keys.random_secret("secp256k1")
        secp256k1.base_multiple(ephemeral)
        secp256k1.base_multiple(secp256k1.scalar_product(ephemeral, secret))
        return Response(_ANSWER, media_type="application/json")

    @probes.get("/encrypt")
    async def encrypt() -> Response:
        ecies.encrypt(public, message, receiver_sk=secret)
        return Response(_ANSWER, media_type="application/json")

    app.router.routes[:0] = probes.routes
    return app


def serve(port: int) -> None:
    import uvicorn

    from app.cli.serve import uvicorn_options

    uvicorn.run(**{**uvicorn_options(HOST, port), "app": "bench.ecies_floor:probe_app"})


def cpu_seconds(pid: int) -> float:
    """User + system time of process `pid` and all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scenarios(url: str, port: int, token: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    created = httpx.post(
        f"{url}/v1/keys", headers=headers, json={"name": "floor", "type": "ecies-secp256k1"}
    )
    created.raise_for_status()
    plaintext = base64.b64encode(os.urandom(MESSAGE_BYTES)).decode()
    body = json.dumps({"plaintext": plaintext}).encode()

    def get(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "method": "GET", "path": path, "headers": {}, "body": b""}

    return [
        {**scenario, "port": port, "items": 1}
        for scenario in (
            get("probe: no-op, matched first", "/probe/noop"),
            get("probe: the two generator multiplications", "/probe/multiplications"),
            get("probe: core.ecies.encrypt 1 KiB", "/probe/encrypt"),
            get("service: GET /healthz", "/healthz"),
            {
                "name": "service: ECIES encrypt 1 KiB",
                "method": "POST",
                "path": "/v1/ecies/floor/encrypt",
                "headers": headers,
                "body": body,
            },
        )
    ]


def measure(
    pid: int, plan: list[dict[str, Any]], requests: int, concurrency: int, rounds: int
) -> list[tuple[str, float, float]]:
    """(name, median CPU µs per request, median requests/s) per scenario."""
    cpu: dict[str, list[float]] = {scenario["name"]: [] for scenario in plan}
    rps: dict[str, list[float]] = {scenario["name"]: [] for scenario in plan}
    for round_index in range(rounds):
        print(f"round {round_index + 1} of {rounds}", file=sys.stderr)
        for scenario in plan:
            before = cpu_seconds(pid)
            (result,) = drive(
                [{**scenario, "requests": requests, "concurrency": concurrency}], rounds=1
            )
            cpu[scenario["name"]].append((cpu_seconds(pid) - before) / requests * 1e6)
            rps[scenario["name"]].append(result["rps"])
    return [(name, statistics.median(cpu[name]), statistics.median(rps[name])) for name in cpu]


def report(rows: list[tuple[str, float, float]]) -> str:
    noop = rows[0][1]
    lines = [
        "| request | server CPU µs/request | req/s | no-op CPU / this |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {cpu:.1f} | {rps:,.0f} | {noop / cpu:.2f} |" for name, cpu, rps in rows),
        "",
        f"At {TARGET} × the no-op, ECIES encrypt may cost {noop / TARGET:.1f} µs of server CPU "
        f"per request, {noop / TARGET - noop:.1f} µs over the no-op.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ecies_floor", description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000, help="per operation and round")
    parser.add_argument("--concurrency", type=int, default=32, help="open connections")
    parser.add_argument("--rounds", type=int, default=3, help="passes over all operations")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return
    if not 1_000 <= args.requests <= 200_000 or not 1 <= args.concurrency <= 512:
        raise SystemExit("--requests must be 1000..200000 and --concurrency 1..512")
    if not 1 <= args.rounds <= 20:
        raise SystemExit("--rounds must be 1..20")

    with tempfile.TemporaryDirectory(prefix="cipherd-floor-") as tmp, ExitStack() as stack:
        work, port = Path(tmp), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
        env["CIPHERD_DATA_DIR"] = str(work / "cipherd")
        log = work / "server.log"
        command = [sys.executable, "-m", "bench.ecies_floor", "--serve", str(port)]
        server = stack.enter_context(process(command, env, log))
        url = f"http://{HOST}:{port}"
        wait_until(lambda: httpx.get(f"{url}/readyz").status_code == 200, "the server", log)
        token = (work / "cipherd" / "admin-token").read_text().strip()
        plan = scenarios(url, port, token)
        rows = measure(server.pid, plan, args.requests, args.concurrency, args.rounds)
    print(report(rows))


if __name__ == "__main__":
    main()
