"""Live interop with the npm package `aez` 1.0.1 (tests/interop/aez_peer.js), both directions,
on random cases: one node process per batch of several hundred cases."""

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core import aez
from core.aez import _aez

PEER = Path(__file__).resolve().parents[2] / "interop" / "aez_peer.js"


def node(op: str, cases: list[dict[str, Any]]) -> list[bytes | None]:
    reply = subprocess.run(
        ["node", str(PEER)],
        cwd=PEER.parent,
        input=json.dumps({"op": op, "cases": cases}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [None if r is None else bytes.fromhex(r) for r in json.loads(reply.stdout)["results"]]


def random_case(rng: random.Random) -> dict[str, Any]:
    """Keys of 0-100 bytes (48 among them), nonces null or 0-40 bytes, AD vectors null or of
    0-20 strings, tau 0, 1, 16, 32 or 255, and messages of 0-2000 bytes (empty ones often)."""

    def blob(n: int) -> bytes:
        return rng.randbytes(n)

    key = blob(rng.choice([48, rng.randint(0, 100)]))
    nonce = None if rng.random() < 0.1 else blob(rng.choice([16, rng.randint(0, 40)]))
    ad = (
        None
        if rng.random() < 0.1
        else [blob(rng.randint(0, 40)) for _ in range(rng.randint(0, 20))]
    )
    tau = rng.choice([0, 1, 16, 16, 32, 255])
    length = rng.choice([0, rng.randint(1, 40), rng.randint(1, 2000)])
    return {"key": key, "nonce": nonce, "ad": ad, "tau": tau, "message": blob(length)}


def wire(case: dict[str, Any], data: bytes) -> dict[str, Any]:
    return {
        "key": case["key"].hex(),
        "nonce": None if case["nonce"] is None else case["nonce"].hex(),
        "ad": None if case["ad"] is None else [a.hex() for a in case["ad"]],
        "tau": case["tau"],
        "data": data.hex(),
    }


def args(case: dict[str, Any]) -> tuple[Any, ...]:
    return case["key"], case["nonce"], case["ad"], case["tau"]


@pytest.mark.parametrize("kernel", _aez.backends())
def test_both_directions(kernel: str) -> None:
    rng = random.Random(kernel)
    _aez.set_backend(kernel)
    cases = [random_case(rng) for _ in range(400)]
    # A few long messages: the encryptor's zero bytes then reach into AEZ-core's pairs.
    cases += [{**random_case(rng), "message": rng.randbytes(n)} for n in (4000, 9000, 20_000)]

    ours = [aez.encrypt(*args(c), c["message"]) for c in cases]
    theirs = node("encrypt", [wire(c, c["message"]) for c in cases])
    assert theirs == ours
    assert node("decrypt", [wire(c, ct) for c, ct in zip(cases, ours, strict=True)]) == [
        c["message"] for c in cases
    ]
    assert [aez.decrypt(*args(c), ct) for c, ct in zip(cases, theirs, strict=True)] == [
        c["message"] for c in cases
    ]
    _aez.set_backend("auto")


def test_both_reject_tampering() -> None:
    rng = random.Random(3)
    cases = [{**random_case(rng), "tau": 16} for _ in range(100)]
    forged = []
    for case in cases:
        ciphertext = bytearray(aez.encrypt(*args(case), case["message"]))
        ciphertext[rng.randrange(len(ciphertext))] ^= 1 << rng.randrange(8)
        forged.append(bytes(ciphertext))
    assert node("decrypt", [wire(c, f) for c, f in zip(cases, forged, strict=True)]) == [None] * 100
    assert [aez.decrypt(*args(c), f) for c, f in zip(cases, forged, strict=True)] == [None] * 100


def test_short_ciphertext_is_where_we_differ() -> None:
    """The npm package 'decrypts' a ciphertext shorter than tau (the empty one to an empty
    message, under any key); core.aez rejects it."""
    case = {"key": bytes(48), "nonce": None, "ad": None, "tau": 16, "message": b""}
    assert node("decrypt", [wire(case, b"")]) == [b""]
    assert aez.decrypt(*args(case), b"") is None
    assert aez.decrypt(*args(case), bytes(15)) is None
