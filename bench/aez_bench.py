"""AEZ encryption throughput: cipherd's kernels against the npm package `aez` 1.0.1 and against
OpenSSL AES-256-GCM (through `cryptography`), at 1 B to 1 MiB with tau = 16, in one run.

cipherd is timed through the public `core.aez.encrypt` (Python call included) once per kernel
this machine can run; the npm package is timed inside node by tests/interop/aez_peer.js with a
48-byte key and a 16-byte nonce, as cipherd is. Each round times every contender at every size
in turn, so that load on the machine hits them alike; the table shows the median of the rounds.

    .venv/bin/python bench/aez_bench.py [--rounds N] [--seconds S]

Prints a Markdown table (MB/s and operations per second, with ratios), checks the targets
(1 MiB: at least 1 GB/s, 100 x the npm package and 40 % of AES-256-GCM; 32 B: at least 3 x the
npm package's operations per second) and plots to bench/out/aez_throughput.png.
"""

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from core import aez
from core.aez import _aez

ROOT = Path(__file__).resolve().parents[1]
SIZES = [1, 32, 512, 1024, 16384, 65536, 1048576]
TAU = 16
PEER = ROOT / "tests" / "interop" / "aez_peer.js"
PLOT = ROOT / "bench" / "out" / "aez_throughput.png"
NODE = "npm aez 1.0.1"
GCM = "AES-256-GCM (OpenSSL)"


def ops_per_second(run: Callable[[], object], seconds: float) -> float:
    """Calls per second over about `seconds`, in batches sized from a first estimate."""
    start = time.perf_counter()
    run()
    batch = max(1, int(0.01 / max(time.perf_counter() - start, 1e-9)))
    calls, start = 0, time.perf_counter()
    while True:
        for _ in range(batch):
            run()
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed


def cipherd_contender(kernel: str, size: int) -> Callable[[], object]:
    key, nonce, message = os.urandom(48), os.urandom(16), os.urandom(size)
    _aez.set_backend(kernel)
    assert (
        aez.decrypt(key, nonce, None, TAU, aez.encrypt(key, nonce, None, TAU, message)) == message
    )

    def run() -> object:
        return aez.encrypt(key, nonce, None, TAU, message)

    return run


def gcm_contender(size: int) -> Callable[[], object]:
    cipher, nonce, message = AESGCM(os.urandom(32)), os.urandom(12), os.urandom(size)
    assert cipher.decrypt(nonce, cipher.encrypt(nonce, message, None), None) == message
    return lambda: cipher.encrypt(nonce, message, None)


def node_round(seconds: float) -> dict[int, float]:
    """One node process timing every size; returns operations per second by size."""
    request = {"op": "bench", "sizes": SIZES, "tau": TAU, "seconds": seconds}
    reply = subprocess.run(
        ["node", str(PEER)],
        cwd=PEER.parent,
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    return {r["size"]: r["ops"] / r["seconds"] for r in json.loads(reply.stdout)["results"]}


def check_peer_agrees() -> None:
    """The contenders compute the same function: cipherd's ciphertext equals the npm one."""
    key, nonce, message = os.urandom(48), os.urandom(16), os.urandom(1000)
    case = {"key": key.hex(), "nonce": nonce.hex(), "ad": None, "tau": TAU, "data": message.hex()}
    reply = subprocess.run(
        ["node", str(PEER)],
        cwd=PEER.parent,
        input=json.dumps({"op": "encrypt", "cases": [case]}),
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = bytes.fromhex(json.loads(reply.stdout)["results"][0])
    assert theirs == aez.encrypt(key, nonce, None, TAU, message)


def measure(rounds: int, seconds: float) -> dict[str, dict[int, float]]:
    kernels = list(_aez.backends())
    samples: dict[str, dict[int, list[float]]] = {}
    for _ in range(rounds):
        for size in SIZES:
            for kernel in kernels:
                run = cipherd_contender(kernel, size)
                samples.setdefault(f"cipherd {kernel}", {}).setdefault(size, []).append(
                    ops_per_second(run, seconds)
                )
            samples.setdefault(GCM, {}).setdefault(size, []).append(
                ops_per_second(gcm_contender(size), seconds)
            )
        for size, rate in node_round(max(seconds, 0.5)).items():
            samples.setdefault(NODE, {}).setdefault(size, []).append(rate)
    _aez.set_backend("auto")
    return {
        name: {size: statistics.median(rates) for size, rates in by_size.items()}
        for name, by_size in samples.items()
    }


def fmt_size(size: int) -> str:
    return (
        f"{size >> 20} MiB"
        if size >= 1 << 20
        else f"{size >> 10} KiB"
        if size >= 1024
        else f"{size} B"
    )


def table(results: dict[str, dict[int, float]], best: str) -> str:
    names = [n for n in results if n.startswith("cipherd")] + [NODE, GCM]
    head = ["size"] + [f"{n} MB/s (ops/s)" for n in names]
    head += [f"{best} / npm", f"{best} / GCM"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size in SIZES:
        cells = [fmt_size(size)]
        for name in names:
            rate = results[name][size]
            cells.append(f"{rate * size / 1e6:,.2f} ({rate:,.0f})")
        ours = results[best][size]
        cells.append(f"{ours / results[NODE][size]:,.1f}x")
        cells.append(f"{ours / results[GCM][size]:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(results: dict[str, dict[int, float]], best: str) -> list[tuple[str, bool]]:
    mib, small = 1 << 20, 32
    ours = results[best]
    return [
        ("1 MiB >= 1 GB/s", ours[mib] * mib >= 1e9),
        ("1 MiB >= 100 x npm aez", ours[mib] >= 100 * results[NODE][mib]),
        ("1 MiB >= 40 % of AES-256-GCM", ours[mib] >= 0.4 * results[GCM][mib]),
        ("32 B >= 3 x npm aez ops/s", ours[small] >= 3 * results[NODE][small]),
    ]


def plot(results: dict[str, dict[int, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, by_size in results.items():
        ax.plot(SIZES, [by_size[s] * s / 1e6 for s in SIZES], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes), tau = 16")
    ax.set_ylabel("encryption throughput (MB/s)")
    ax.set_title("AEZ v5 encryption, one core")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=120, bbox_inches="tight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.25, help="per contender and size")
    options = parser.parse_args()

    check_peer_agrees()
    results = measure(options.rounds, options.seconds)
    best = f"cipherd {_aez.backends()[0]}"
    print(f"AEZ encrypt, tau = {TAU}, median of {options.rounds} rounds; kernel in use: {best}\n")
    print(table(results, best))
    print()
    for label, ok in targets(results, best):
        print(f"- {'PASS' if ok else 'FAIL'}: {label}")
    plot(results)
    print(f"\nplot: {PLOT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
