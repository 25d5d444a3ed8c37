"""A steady mixed load on `cipherd serve --workers 2`, with each worker's resident memory sampled.

    .venv/bin/python -m bench.soak [--seconds 600] [--warmup 60] [--concurrency 8]

ECIES and AEZ round trips (JSON, raw, batches), FE keygen, encryption and decryption with fresh
vectors, key creations, rotations, scoped tokens issued and used, listings and /metrics, from
CONCURRENCY client threads for SECONDS after WARMUP seconds of the same. Prints the RSS of each
worker every 30 s, and its growth from the end of the warm-up to the end of the run.
"""

import argparse
import base64
import os
import random
import secrets
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx

from bench.load.__main__ import start_cipherd, worker_rss

FE_SCHEME, FE_DIMENSION = "ipfe-opt", 10
SAMPLE_SECONDS = 30
MIB = 1024 * 1024


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


Operation = Callable[[], None]


def operations(client: httpx.Client, statuses: Counter[int]) -> list[tuple[int, Operation]]:
    """(weight, operation) pairs; each operation checks what it gets back."""

    def call(method: str, path: str, **kwargs: object) -> httpx.Response:
        answer = client.request(method, path, **kwargs)  # type: ignore[arg-type]
        statuses[answer.status_code] += 1
        return answer

    def ecies() -> None:
        plaintext = os.urandom(1024)
        sealed = call("POST", "/v1/ecies/soak-ecies/encrypt", json={"plaintext": b64(plaintext)})
        body = {"ciphertext": sealed.json()["ciphertext"]}
        opened = call("POST", "/v1/ecies/soak-ecies/decrypt", json=body)
        assert base64.b64decode(opened.json()["plaintext"]) == plaintext

    def ecies_raw() -> None:
        raw = {"Content-Type": "application/octet-stream"}
        call("POST", "/v1/ecies/soak-ecies/encrypt", content=os.urandom(65536), headers=raw)

    def aez() -> None:
        plaintext, nonce = os.urandom(64), os.urandom(12)
        body = {"plaintext": b64(plaintext), "nonce": b64(nonce)}
        sealed = call("POST", "/v1/aez/soak-aez/encrypt", json=body)
        back = {"ciphertext": sealed.json()["ciphertext"], "nonce": b64(nonce)}
        opened = call("POST", "/v1/aez/soak-aez/decrypt", json=back)
        assert base64.b64decode(opened.json()["plaintext"]) == plaintext

    def aez_batch() -> None:
        items = [{"plaintext": b64(os.urandom(64))} for _ in range(100)]
        call("POST", "/v1/aez/soak-aez/encrypt/batch", json={"items": items})

    def fe() -> None:
        x = [random.randrange(10) for _ in range(FE_DIMENSION)]
        y = [random.randrange(10) for _ in range(FE_DIMENSION)]
        key = call("POST", "/v1/fe/soak-fe/keygen", json={"y": y}).json()["functional_key"]
        sealed = call("POST", "/v1/fe/soak-fe/encrypt", json={"x": x}).json()["ciphertext"]
        body = {"functional_key": key, "ciphertext": sealed, "bounds": [0, 1000]}
        result = call("POST", "/v1/fe/soak-fe/decrypt", json=body).json()["result"]
        assert result == sum(a * b for a, b in zip(x, y, strict=True))

    def create() -> None:
        name = f"soak-{secrets.token_hex(6)}"
        call("POST", "/v1/keys", json={"name": name, "type": "aez"})
        call("POST", f"/v1/aez/{name}/encrypt", json={"plaintext": b64(b"new")})

    def rotate() -> None:
        call("POST", "/v1/keys/soak-rotated/rotate")
        call("POST", "/v1/aez/soak-rotated/encrypt", json={"plaintext": b64(b"rotated")})

    def token() -> None:
        scope = {"keys": ["soak-aez"], "operations": ["encrypt"], "ttl_seconds": 60}
        issued = call("POST", "/v1/tokens", json=scope).json()["token"]
        headers = {"Authorization": f"Bearer {issued}"}
        call("POST", "/v1/aez/soak-aez/encrypt", json={"plaintext": ""}, headers=headers)

    def listing() -> None:
        call("GET", "/v1/keys", params={"limit": 50})
        call("GET", "/metrics")

    return [
        (30, ecies),
        (5, ecies_raw),
        (30, aez),
        (5, aez_batch),
        (5, fe),
        (3, create),
        (2, rotate),
        (2, token),
        (2, listing),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--warmup", type=float, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cipherd-soak-") as tmp, ExitStack() as stack:
        url, _, token, supervisor = start_cipherd(stack, Path(tmp))
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as setup:
            for name, key_type in (
                ("soak-ecies", "ecies-secp256k1"),
                ("soak-aez", "aez"),
                ("soak-rotated", "aez"),
            ):
                setup.post("/v1/keys", json={"name": name, "type": key_type}).raise_for_status()
            fe_key = {"name": "soak-fe", "type": FE_SCHEME, "dimension": FE_DIMENSION}
            setup.post("/v1/keys", json=fe_key).raise_for_status()

        statuses: Counter[int] = Counter()
        failures: list[str] = []
        started = time.monotonic()
        end = started + args.warmup + args.seconds

        def client_loop() -> None:
            with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                weighted = operations(client, statuses)
                ops = [op for _, op in weighted]
                weights = [weight for weight, _ in weighted]
                while time.monotonic() < end:
                    try:
                        random.choices(ops, weights)[0]()
                    except Exception as exc:  # counted, reported, and the load goes on
                        failures.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=client_loop) for _ in range(args.concurrency)]
        for thread in threads:
            thread.start()
        samples: list[tuple[float, dict[int, int]]] = []
        warm: dict[int, int] = {}
        while time.monotonic() < end:
            time.sleep(min(SAMPLE_SECONDS, max(0.0, end - time.monotonic())))
            elapsed = time.monotonic() - started
            rss = worker_rss(supervisor)
            samples.append((elapsed, rss))
            if not warm and elapsed >= args.warmup:
                warm = rss
            figures = ", ".join(f"{pid}: {value / MIB:.1f}" for pid, value in sorted(rss.items()))
            print(
                f"{elapsed:6.0f} s  RSS MiB {figures}  requests {sum(statuses.values())}",
                file=sys.stderr,
                flush=True,
            )
        for thread in threads:
            thread.join()
        final = worker_rss(supervisor)

    print(f"requests by status: {dict(sorted(statuses.items()))}; failures: {len(failures)}")
    for failure in sorted(set(failures))[:5]:
        print(f"  {failure}")
    for pid in sorted(final):
        if pid in warm:
            growth = (final[pid] - warm[pid]) / warm[pid] * 100
            print(
                f"worker {pid}: {warm[pid] / MIB:.1f} MiB after the warm-up, "
                f"{final[pid] / MIB:.1f} MiB at the end ({growth:+.1f} %)"
            )
        else:
            print(f"worker {pid}: started during the run, {final[pid] / MIB:.1f} MiB at the end")


if __name__ == "__main__":
    main()
