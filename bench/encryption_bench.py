"""Operations per second of the encryption families' library calls (`core.aead`, `core.hpke`,
`core.oaep`) beside pyca/cryptography called directly, in the same run.

    .venv/bin/python bench/encryption_bench.py [--runs N] [--seconds S]

Each run times every contender in turn for about S seconds (so that load on the machine hits
them alike); the table shows the median over N runs, on a 64-byte message. Both sides use a key
object made once, as the service's keyring holds one per key version; cipherd's derived AEAD
rows derive the key of a context (HKDF-SHA256) on every call, as the service does.
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cryptography.hazmat.primitives import hashes, hpke
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from core import aead, oaep
from core import hpke as core_hpke

MESSAGE = os.urandom(64)
OAEP = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)


def _ops_per_second(operation: Callable[[], object], seconds: float) -> float:
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(20):
            operation()
        count += 20
    return count / elapsed


def contenders() -> dict[str, Callable[[], object]]:
    rows: dict[str, Callable[[], object]] = {}
    for algorithm, cls in (("aes256-gcm", AESGCM), ("chacha20-poly1305", ChaCha20Poly1305)):
        secret = os.urandom(32)
        key, theirs = aead.cipher(algorithm, secret), cls(secret)
        payload = aead.seal(key, MESSAGE)
        rows[f"{algorithm} encrypt: cipherd"] = lambda k=key: aead.seal(k, MESSAGE)
        rows[f"{algorithm} encrypt: pyca"] = lambda t=theirs: t.encrypt(
            os.urandom(12), MESSAGE, None
        )
        rows[f"{algorithm} decrypt: cipherd"] = lambda k=key, p=payload: aead.open_payload(k, p)
        rows[f"{algorithm} decrypt: pyca"] = lambda t=theirs, p=payload: t.decrypt(
            p[:12], p[12:], None
        )
    master = os.urandom(32)
    rows["aes256-gcm derived convergent encrypt: cipherd"] = lambda: _convergent(master)
    for kem, pyca_kem in (
        ("x25519", hpke.KEM.X25519),
        ("mlkem768-x25519", hpke.KEM.MLKEM768_X25519),
    ):
        secret, public = core_hpke.generate(kem)
        private, public_key = core_hpke.private_key(kem, secret), core_hpke.public_key(kem, public)
        suite = hpke.Suite(pyca_kem, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
        payload = core_hpke.seal(kem, public_key, MESSAGE)
        rows[f"hpke-{kem} encrypt: cipherd"] = lambda k=kem, p=public_key: core_hpke.seal(
            k, p, MESSAGE
        )
        rows[f"hpke-{kem} encrypt: pyca"] = lambda s=suite, p=public_key: s.encrypt(MESSAGE, p)
        rows[f"hpke-{kem} decrypt: cipherd"] = lambda k=kem, r=private, c=payload: (
            core_hpke.open_payload(k, r, c)
        )
        rows[f"hpke-{kem} decrypt: pyca"] = lambda s=suite, r=private, c=payload: s.decrypt(c, r)
    for bits in (2048, 4096):
        key = rsa.generate_private_key(65537, bits)
        ciphertext = oaep.encrypt(key.public_key(), MESSAGE)
        rows[f"rsa-{bits} OAEP encrypt: cipherd"] = lambda k=key: oaep.encrypt(
            k.public_key(), MESSAGE
        )
        rows[f"rsa-{bits} OAEP encrypt: pyca"] = lambda k=key: k.public_key().encrypt(MESSAGE, OAEP)
        rows[f"rsa-{bits} OAEP decrypt: cipherd"] = lambda k=key, c=ciphertext: oaep.decrypt(k, c)
        rows[f"rsa-{bits} OAEP decrypt: pyca"] = lambda k=key, c=ciphertext: k.decrypt(c, OAEP)
    return rows


def _convergent(master: bytes) -> bytes:
    key, nonce_keys = aead.derive("aes256-gcm", master, b"tenant-42", convergent=True)
    assert nonce_keys is not None
    return aead.seal(key, MESSAGE, b"", aead.convergent_nonce(nonce_keys, MESSAGE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.5)
    args = parser.parse_args()
    rows = contenders()
    results: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, operation in rows.items():
            results[name].append(_ops_per_second(operation, args.seconds))
    print("| operation | ops/s (median) |\n|---|---:|")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values):,.0f} |")


if __name__ == "__main__":
    main()
