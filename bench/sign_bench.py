"""Signatures per second: cipherd's `core.sign` beside the libraries it is compared with, called
directly in the same run: coincurve (libsecp256k1's own Python API), PyNaCl (libsodium) and
OpenSSL through `cryptography`.

    .venv/bin/python bench/sign_bench.py [--runs N] [--seconds S]

Each run times every contender in turn for about S seconds (so that load on the machine hits
them alike); the table shows the median operations per second over N runs, on a 64-byte
message. Every contender signs with a key object made once: cipherd's ed25519 `SigningKey`, as
the service's keyring holds it for each key version in memory; ECDSA signs from the 32-byte
secret on every call (libsecp256k1 needs nothing derived from it).
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import coincurve
import nacl.signing
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.sign import ecdsa, ed25519

MESSAGE = os.urandom(64)


def _ops_per_second(operation: Callable[[], object], seconds: float) -> float:
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(100):
            operation()
        count += 100
    return count / elapsed


def _contenders() -> dict[str, dict[str, Callable[[], object]]]:
    """row -> contender -> one operation, each over one key and one signature."""
    secret, public = ecdsa.generate_keypair()
    der = ecdsa.sign(secret, MESSAGE)
    recoverable = ecdsa.sign(secret, MESSAGE, hash="keccak256", format="recoverable")
    peer = coincurve.PrivateKey(secret)
    openssl = ec.derive_private_key(int.from_bytes(secret), ec.SECP256K1())
    openssl_public = openssl.public_key()
    sha256 = ec.ECDSA(hashes.SHA256())
    seed, ed_public = ed25519.generate_keypair()
    ed_key = ed25519.SigningKey(seed)  # made once, as the service's keyring holds it
    ed_signature = ed_key.sign(MESSAGE)
    nacl_key = nacl.signing.SigningKey(seed)
    openssl_ed = Ed25519PrivateKey.from_private_bytes(seed)
    openssl_ed_public = openssl_ed.public_key()
    return {
        "ecdsa-secp256k1 sign (SHA-256, DER)": {
            "cipherd": lambda: ecdsa.sign(secret, MESSAGE),
            "coincurve": lambda: peer.sign(MESSAGE),
            "OpenSSL": lambda: openssl.sign(MESSAGE, sha256),
        },
        "ecdsa-secp256k1 verify (SHA-256, DER)": {
            "cipherd": lambda: ecdsa.verify(public, MESSAGE, der),
            "coincurve": lambda: coincurve.PublicKey(public).verify(der, MESSAGE),
            "OpenSSL": lambda: openssl_public.verify(der, MESSAGE, sha256),
        },
        "ecdsa-secp256k1 sign (Keccak-256, recoverable)": {
            "cipherd": lambda: ecdsa.sign(secret, MESSAGE, hash="keccak256", format="recoverable"),
            "coincurve": lambda: peer.sign_recoverable(MESSAGE, hasher=ecdsa.keccak256),
        },
        "ecdsa-secp256k1 recover (Keccak-256)": {
            "cipherd": lambda: ecdsa.recover(MESSAGE, recoverable, hash="keccak256"),
            "coincurve": lambda: coincurve.PublicKey.from_signature_and_message(
                recoverable, MESSAGE, hasher=ecdsa.keccak256
            ),
        },
        "ed25519 sign": {
            "cipherd": lambda: ed_key.sign(MESSAGE),
            "PyNaCl": lambda: nacl_key.sign(MESSAGE),
            "OpenSSL": lambda: openssl_ed.sign(MESSAGE),
        },
        "ed25519 verify": {
            "cipherd": lambda: ed25519.verify(ed_public, MESSAGE, ed_signature),
            "PyNaCl": lambda: nacl_key.verify_key.verify(MESSAGE, ed_signature),
            "OpenSSL": lambda: openssl_ed_public.verify(ed_signature, MESSAGE),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5, help="per contender and run")
    args = parser.parse_args()
    rows = _contenders()
    peers = ["cipherd", "coincurve", "PyNaCl", "OpenSSL"]
    figures: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.runs):
        for row, contenders in rows.items():
            for name, operation in contenders.items():
                figures.setdefault((row, name), []).append(_ops_per_second(operation, args.seconds))
    print(f"Operations per second, median of {args.runs} runs, 64-byte message\n")
    print("| operation | " + " | ".join(peers) + " | cipherd / best peer |")
    print("|---" * (len(peers) + 2) + "|")
    for row, contenders in rows.items():
        median = {name: statistics.median(figures[row, name]) for name in contenders}
        best = max(v for name, v in median.items() if name != "cipherd")
        cells = [f"{median[p]:,.0f}" if p in median else "–" for p in peers]
        print(f"| {row} | " + " | ".join(cells) + f" | {median['cipherd'] / best:.2f} |")


if __name__ == "__main__":
    main()
