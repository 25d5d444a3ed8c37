"""Known-answer tests for AEZ v5, one test per vector file so that a failure names the stage,
on every kernel this machine can run (the portable one always).

Vectors: tests/vectors/aez/ (from Yawning/aez) and tests/vectors/aez/npm-aez/ (from
guggero/aez); see the README there for the fields and the units of tau.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import aez
from core.aez import _aez

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "aez"
NPM = VECTORS / "npm-aez"


@pytest.fixture(params=_aez.backends(), autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run every test once per usable kernel, then restore the default one."""
    _aez.set_backend(request.param)
    yield request.param
    _aez.set_backend("auto")


def load(path: Path) -> list[dict[str, Any]]:
    cases = json.loads(path.read_text())
    assert cases, path
    return cases


def unhex(values: list[str]) -> list[bytes]:
    return [bytes.fromhex(v) for v in values]


# Field names of each folder: key, nonce, AD vector, tau, message, ciphertext.
YAWNING_FIELDS = ("k", "nonce", "data", "tau", "m", "c")
NPM_FIELDS = ("key", "nonce", "ad", "tau", "message", "result")
ENCRYPT_FILES = [
    *((path, YAWNING_FIELDS) for path in sorted(VECTORS.glob("encrypt*.json"))),
    *((path, NPM_FIELDS) for path in sorted(NPM.glob("encrypt*.json"))),
]


@pytest.mark.parametrize(
    ("path", "fields"),
    ENCRYPT_FILES,
    ids=[str(path.relative_to(VECTORS)) for path, _ in ENCRYPT_FILES],
)
def test_encrypt_decrypt(path: Path, fields: tuple[str, ...]) -> None:
    k, n, a, t, m, c = fields
    for case in load(path):
        key, nonce = bytes.fromhex(case[k]), bytes.fromhex(case[n])
        ad, tau = unhex(case[a]), case[t]
        message, ciphertext = bytes.fromhex(case[m]), bytes.fromhex(case[c])
        assert aez.encrypt(key, nonce, ad, tau, message) == ciphertext, case
        assert aez.decrypt(key, nonce, ad, tau, ciphertext) == message, case


@pytest.mark.parametrize(
    ("path", "fields"),
    [(VECTORS / "extract.json", ("a", "b")), (NPM / "extract.json", ("key", "result"))],
    ids=["extract.json", "npm-aez/extract.json"],
)
def test_extract(path: Path, fields: tuple[str, str]) -> None:
    for case in load(path):
        assert _aez.extract(bytes.fromhex(case[fields[0]])).hex() == case[fields[1]], case


@pytest.mark.parametrize(
    ("path", "fields"),
    [(VECTORS / "hash.json", ("k", "data", "v")), (NPM / "hash.json", ("key", "ad", "result"))],
    ids=["hash.json", "npm-aez/hash.json"],
)
def test_hash(path: Path, fields: tuple[str, str, str]) -> None:
    k, strings, result = fields
    for case in load(path):
        delta = _aez.hash(bytes.fromhex(case[k]), case["tau"], unhex(case[strings]))
        assert delta.hex() == case[result], case


@pytest.mark.parametrize(
    ("path", "fields"),
    [(VECTORS / "prf.json", ("k", "r")), (NPM / "prf.json", ("key", "result"))],
    ids=["prf.json", "npm-aez/prf.json"],
)
def test_prf(path: Path, fields: tuple[str, str]) -> None:
    for case in load(path):
        out = _aez.prf(bytes.fromhex(case[fields[0]]), bytes.fromhex(case["delta"]), case["tau"])
        assert out.hex() == case[fields[1]], case


def test_e_tbc() -> None:
    cases = load(NPM / "e_tbc.json")
    assert {case["j"] for case in cases} == set(range(-1, 18))
    for case in cases:
        out = _aez.e(bytes.fromhex(case["k"]), case["j"], case["i"], bytes.fromhex(case["a"]))
        assert out.hex() == case["b"], case
