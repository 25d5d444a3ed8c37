"""ECIES throughput and memory: cipherd against eciespy 0.4.7 and against a floor.

The floor is OpenSSL AES-256-GCM through `cryptography` (`AESGCM.encrypt`) encrypting the same
bytes into one freshly allocated output: what any ECIES over OpenSSL must at least spend on a
large message. Each repetition runs the three contenders in turn so that load on the machine
hits them alike; the table shows medians.

    .venv/bin/python bench/ecies_bench.py [--runs N] [--quick]

Prints Markdown tables: large-message encrypt/decrypt (seconds, MB/s, ratios), 1 KiB operations
per second, and the peak resident memory of a 200 MiB encryption (measured in subprocesses).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ecies as eciespy
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from ecies.config import Config as EciespyConfig

from core import ecies

MIB = 1 << 20
CONFIGS = {
    "aes-256-gcm": (ecies.Config(), EciespyConfig()),
    "xchacha20": (
        ecies.Config(symmetric_algorithm="xchacha20"),
        EciespyConfig(symmetric_algorithm="xchacha20"),
    ),
}


def _seconds(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _contenders(
    algorithm: str, message: bytes
) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """name -> (encrypt, decrypt) closures over one receiver key and one payload each."""
    ours, theirs = CONFIGS[algorithm]
    secret, public = ecies.generate_keypair()
    payload = ecies.encrypt(public, message, ours)
    their_payload = eciespy.encrypt(public, message, theirs)
    key = os.urandom(32)
    sealed = AESGCM(key).encrypt(bytes(12), message, None)
    return {
        "cipherd": (
            lambda: ecies.encrypt(public, message, ours),
            lambda: ecies.decrypt(secret, payload, ours),
        ),
        # The key holder's encryption (cipherd's own keys): the decryption is the same.
        "cipherd, receiver_sk": (
            lambda: ecies.encrypt(public, message, ours, receiver_sk=secret),
            lambda: ecies.decrypt(secret, payload, ours),
        ),
        "eciespy": (
            lambda: eciespy.encrypt(public, message, theirs),
            lambda: eciespy.decrypt(secret, their_payload, theirs),
        ),
        "floor": (
            lambda: AESGCM(key).encrypt(os.urandom(12), message, None),
            lambda: AESGCM(key).decrypt(bytes(12), sealed, None),
        ),
    }


def large(sizes_mib: list[int], runs: int) -> None:
    print("### Large messages (median of", runs, "runs; floor = AESGCM.encrypt)\n")
    print(
        "| config | size | op | cipherd s | eciespy s | floor s | cipherd MB/s |"
        " eciespy MB/s | floor MB/s | cipherd/floor | cipherd/eciespy |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for algorithm in CONFIGS:
        for size in sizes_mib if algorithm == "aes-256-gcm" else sizes_mib[:1]:
            message = os.urandom(size * MIB)
            contenders = _contenders(algorithm, message)
            floor_encrypt = contenders["floor"][0]
            for op_index, op in enumerate(("encrypt", "decrypt")):
                times: dict[str, list[float]] = {"cipherd": [], "eciespy": [], "floor": []}
                for _ in range(runs):
                    times["cipherd"].append(_seconds(contenders["cipherd"][op_index]))
                    times["eciespy"].append(_seconds(contenders["eciespy"][op_index]))
                    times["floor"].append(_seconds(floor_encrypt))
                med = {name: statistics.median(values) for name, values in times.items()}
                rate = {name: size * MIB / 1e6 / value for name, value in med.items()}
                print(
                    f"| {algorithm} | {size} MiB | {op} | {med['cipherd']:.3f} |"
                    f" {med['eciespy']:.3f} | {med['floor']:.3f} | {rate['cipherd']:.0f} |"
                    f" {rate['eciespy']:.0f} | {rate['floor']:.0f} |"
                    f" {med['cipherd'] / med['floor']:.2f} |"
                    f" {med['cipherd'] / med['eciespy']:.2f} |"
                )
            del contenders, message
    print()


def small(seconds: float) -> None:
    print("### 1 KiB messages (operations per second, default configuration)\n")
    print(
        "| op | cipherd | cipherd, receiver_sk | eciespy | floor | cipherd/eciespy |"
        " receiver_sk/eciespy |"
    )
    print("|---|---|---|---|---|---|---|")
    contenders = _contenders("aes-256-gcm", os.urandom(1024))
    for op_index, op in enumerate(("encrypt", "decrypt")):
        rates = {}
        for name, pair in contenders.items():
            run, count, start = pair[op_index], 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds:
                for _ in range(50):
                    run()
                count += 50
            rates[name] = count / elapsed
        theirs, owner = rates["eciespy"], rates["cipherd, receiver_sk"]
        # Decryption is the same call in both cipherd columns.
        owner_rate, owner_ratio = (
            (f"{owner:.0f}", f"{owner / theirs:.2f}") if op == "encrypt" else ("–", "–")
        )
        print(
            f"| {op} | {rates['cipherd']:.0f} | {owner_rate} | {theirs:.0f} |"
            f" {rates['floor']:.0f} | {rates['cipherd'] / theirs:.2f} | {owner_ratio} |"
        )
    print()


_MEMORY_PROBE = """
import os, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
import ecies as eciespy
from core import ecies


def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(field + ":"))


name, size = sys.argv[1], int(sys.argv[2])
secret, public = ecies.generate_keypair()
run = {
    "cipherd": lambda data: ecies.encrypt(public, data),
    "eciespy": lambda data: eciespy.encrypt(public, data),
    "floor": lambda data: AESGCM(os.urandom(32)).encrypt(os.urandom(12), data, None),
}[name]
run(b"warm up")
base = status("VmRSS")
data = os.urandom(size)
loaded = status("VmRSS")
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # restart the peak (VmHWM) from the current resident size
out = run(data)
print(base, loaded, status("VmHWM"), len(out))
"""


def memory(size_mib: int) -> None:
    print(f"### Peak memory of one {size_mib} MiB encryption (VmHWM, own subprocess)\n")
    print(
        "| contender | input MiB | output MiB | peak growth during encrypt MiB |"
        " extra beyond output MiB |"
    )
    print("|---|---|---|---|---|")
    root = Path(__file__).resolve().parents[1]
    for name in ("cipherd", "eciespy", "floor"):
        result = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, name, str(size_mib * MIB)],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
        )
        base, loaded, peak, length = map(int, result.stdout.split())
        growth = (peak - loaded) / 1024  # KiB in /proc/self/status
        print(
            f"| {name} | {(loaded - base) / 1024:.0f} | {length / MIB:.0f} | {growth:.0f} |"
            f" {growth - length / MIB:.0f} |"
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="repetitions per measurement")
    parser.add_argument("--quick", action="store_true", help="16 MiB only, 3 runs, short loops")
    args = parser.parse_args()
    sizes, runs, seconds = ([16], 3, 0.3) if args.quick else ([100, 200], args.runs, 1.0)
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}\n"
    )
    large(sizes, runs)
    small(seconds)
    memory(sizes[-1])


if __name__ == "__main__":
    main()
