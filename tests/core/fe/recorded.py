"""Encodings recorded from seeded runs, so that faster code keeps every byte the same.

`encodings()` runs setup, key generation and encryption of every scheme on both curves from a
seeded `random.Random` and gives the SHA-256 of each object's encoding. `recorded.json` holds
what it gave on the code before setup moved its inversion to C and KeyGen/Enc to precomputed
tables (commit ffdcc7c); `test_recorded_encodings` asserts the current code gives the same.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from core.fe.group import CURVES
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

RECORDED = Path(__file__).with_name("recorded.json")
DIMENSIONS = (1, 3, 12)


def _digest(obj: Any) -> str:
    return hashlib.sha256(obj.to_bytes()).hexdigest()


def encodings() -> dict[str, dict[str, str]]:
    """{"scheme curve n": {object: SHA-256 of its encoding}} for every case."""
    out: dict[str, dict[str, str]] = {}
    for curve in CURVES:
        for n in DIMENSIONS:
            for ip in (bjk, tao, kim, lin, kks, opt):
                rng = random.Random(f"{ip.NAME} {curve} {n}")
                msk = ip.setup(n, rng, curve=curve)
                y = [rng.randint(-(2**63), 2**63 - 1) for _ in range(n)]
                x = [rng.randint(-50, 50) for _ in range(n)]
                out[f"{ip.NAME} {curve} {n}"] = {
                    "master key": _digest(msk),
                    "key": _digest(ip.keygen(msk, y, rng)),
                    "ciphertext": _digest(ip.encrypt(msk, x, rng)),
                }
            for q in (bcfg, sgp):
                rng = random.Random(f"{q.NAME} {curve} {n}")
                pk, msk = q.setup(n, rng, curve=curve)
                f = [[rng.randint(-(2**63), 2**63 - 1) for _ in range(n)] for _ in range(n)]
                x = [rng.randint(-50, 50) for _ in range(n)]
                y = [rng.randint(-(2**63), 2**63 - 1) for _ in range(n)]
                key = q.keygen(msk, f, rng) if q is bcfg else q.keygen(msk, f)
                out[f"{q.NAME} {curve} {n}"] = {
                    "public key": _digest(pk),
                    "master key": _digest(msk),
                    "key": _digest(key),
                    "ciphertext": _digest(q.encrypt(pk, x, y, rng)),
                }
    return out


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(encodings(), indent=1, sort_keys=True) + "\n")
