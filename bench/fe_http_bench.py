"""FE decryption over HTTP beside the same decryption in process: what the service adds.

Starts `cipherd serve` (one worker with its default FE pool process, a fresh data directory),
creates opt keys at n = 1, 10 and 100 and sgp keys at n = 10 and 100, and times decryptions
with a warm table and a warm (prepared) key:

* over HTTP: POST /v1/fe/{name}/decrypt on a keep-alive connection, from a minimal client
  (request bytes built once, the response framed by its Content-Length as the load generator
  does), so that the time is the service's rather than a client library's parsing;
* in process, from bytes: decode and check the ciphertext, then decrypt (what the service does
  with the bytes it receives, without HTTP, JSON and base64);
* in process, from objects: decrypt an already decoded ciphertext.

The three are timed in turn, a block of BLOCK samples of each at a time, so that load from
elsewhere on the machine falls on all three alike while each runs back to back as a busy client
would (on a busy virtual machine a request sent after a pause waits milliseconds for the
server's idle core to wake); each cell is the median of its samples. Beside the wall-clock
times, the CPU time each costs: the server's processes' (its worker and FE pool process, from
/proc) per request, and this process's per decryption from bytes. A request's wall-clock time
also holds its waits for a core, which grow with the machine's load; its CPU time does not.

Run: .venv/bin/python -m bench.fe_http_bench [--runs 40]
"""

import argparse
import base64
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.load.driver import parse_response
from core.fe.group import DlogTable
from core.fe.ipfe import opt
from core.fe.qfe import sgp

BOUND = 10_000
CASES = [
    ("ipfe-opt", opt, 1),
    ("ipfe-opt", opt, 10),
    ("ipfe-opt", opt, 100),
    ("qfe-sgp", sgp, 10),
    ("qfe-sgp", sgp, 100),
]
# Requests before the clock starts, for at least this long: the first ones build the server's
# table and prepare its key in its pool process while the worker warms its own caches beside.
WARM_UP = 10
WARM_UP_SECONDS = 2.0
BLOCK = 10


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) of process `pid` and of all its descendants alive now."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        child = int(stat.parent.name)
        children.setdefault(int(fields[1]), []).append(child)
        ticks[child] = int(fields[11]) + int(fields[12])
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += ticks.get(current, 0)
        todo += children.get(current, [])
    return total / os.sysconf("SC_CLK_TCK")


def medians_ms(runs: int, *timed: Callable[[], object]) -> tuple[list[float], list[float]]:
    """The median wall-clock time of each of `timed` over `runs` samples, taken in turn a block
    at a time, and the CPU time of this process in each, per call."""
    samples: list[list[float]] = [[] for _ in timed]
    cpu = [0.0 for _ in timed]
    for _ in range(-(-runs // BLOCK)):
        for index, (run, times) in enumerate(zip(timed, samples, strict=True)):
            start_cpu = time.process_time()
            for _ in range(BLOCK):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            cpu[index] += time.process_time() - start_cpu
    medians = [statistics.median(times) * 1000 for times in samples]
    return medians, [seconds / len(samples[0]) * 1000 for seconds in cpu]


class Connection:
    """One keep-alive HTTP/1.1 connection that sends prepared requests and waits for each answer."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.host = f"{host}:{port}"
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def prepare(self, path: str, payload: bytes, token: str) -> bytes:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload

    def send(self, request: bytes) -> None:
        self.sock.sendall(request)
        buffer = bytearray()
        while (response := parse_response(buffer)) is None:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise SystemExit("the server closed the connection")
            buffer += chunk
        if response[0] != 200:
            raise SystemExit(f"the server answered {response[0]}: {bytes(buffer)[-300:]!r}")


def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "CIPHERD_DATA_DIR": str(data_dir), "CIPHERD_LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url, (data_dir / "admin-token").read_text().strip()
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not start")


def sample(n: int, quadratic: bool, rng: random.Random) -> tuple[dict, dict, int]:
    """RustPFE's benchmark inputs: entries in [0, L] so that the result stays in [0, BOUND]."""
    if quadratic:
        top = max(v for v in range(1, 100) if n * n * v**3 <= BOUND)
        x, y = ([rng.randint(0, top) for _ in range(n)] for _ in range(2))
        f = [[rng.randint(0, top) for _ in range(n)] for _ in range(n)]
        value = sum(x[i] * f[i][j] * y[j] for i in range(n) for j in range(n))
        return {"f": f}, {"x": x, "y": y}, value
    top = max(v for v in range(1, 100) if n * v * v <= BOUND)
    x, y = ([rng.randint(0, top) for _ in range(n)] for _ in range(2))
    return {"y": y}, {"x": x}, sum(a * b for a, b in zip(x, y, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(1)
    table = DlogTable(opt.base(), 0, BOUND)
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        process, url, token = start_server(Path(tmp) / "data")
        try:
            connection = Connection(url)
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as client:
                for key_type, module, n in CASES:
                    name = f"{key_type}-{n}"
                    client.post(
                        "/v1/keys", json={"name": name, "type": key_type, "dimension": n}
                    ).raise_for_status()
                    function, message, value = sample(n, key_type.startswith("qfe"), rng)
                    key = client.post(f"/v1/fe/{name}/keygen", json=function).json()
                    ct = client.post(f"/v1/fe/{name}/encrypt", json=message).json()
                    body = {
                        "functional_key": key["functional_key"],
                        "ciphertext": ct["ciphertext"],
                        "bounds": [0, BOUND],
                    }
                    assert client.post(f"/v1/fe/{name}/decrypt", json=body).json() == {
                        "result": value
                    }

                    ct_bytes = base64.b64decode(ct["ciphertext"])
                    prepared = module.prepare(
                        module.Key.from_bytes(base64.b64decode(key["functional_key"]))
                    )
                    ciphertext = module.Ciphertext.from_bytes(ct_bytes)
                    assert module.decrypt(table, prepared, ciphertext) == value

                    request = connection.prepare(
                        f"/v1/fe/{name}/decrypt", json.dumps(body).encode(), token
                    )
                    warm_until = time.monotonic() + WARM_UP_SECONDS
                    for _ in range(WARM_UP):
                        connection.send(request)
                    while time.monotonic() < warm_until:
                        connection.send(request)
                    server_before = cpu_seconds(process.pid)
                    (over_http, from_bytes, from_objects), (_, cpu_bytes, _) = medians_ms(
                        args.runs,
                        lambda r=request: connection.send(r),
                        lambda m=module, p=prepared, b=ct_bytes: m.decrypt(
                            table, p, m.Ciphertext.from_bytes(b)
                        ),
                        lambda m=module, p=prepared, c=ciphertext: m.decrypt(table, p, c),
                    )
                    server_cpu = (cpu_seconds(process.pid) - server_before) * 1000
                    server_cpu /= -(-args.runs // BLOCK) * BLOCK
                    rows.append(
                        (module.NAME, n, over_http, from_bytes, from_objects, server_cpu, cpu_bytes)
                    )
        finally:
            process.terminate()
            process.wait(timeout=15)

    load_after = os.getloadavg()
    print(
        f"FE decrypt, warm table over [0, {BOUND}] and prepared key, median of {args.runs} (ms); "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n"
    )
    print(
        "| scheme | n | HTTP | in process, from bytes | in process, from objects "
        "| HTTP / from bytes | HTTP / from objects | CPU: server per request "
        "| CPU: in process from bytes | CPU: server / in process |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n, over_http, from_bytes, from_objects, server_cpu, cpu_bytes in rows:
        print(
            f"| {name} | {n} | {over_http:.2f} | {from_bytes:.2f} | {from_objects:.2f} "
            f"| {over_http / from_bytes:.2f} | {over_http / from_objects:.2f} "
            f"| {server_cpu:.2f} | {cpu_bytes:.2f} | {server_cpu / cpu_bytes:.2f} |"
        )


if __name__ == "__main__":
    main()
