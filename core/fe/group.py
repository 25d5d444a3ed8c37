"""The group layer of the FE schemes: BLS12-381 through petrelic, with RELIC serialised.

Elements are petrelic's own classes. Every function here takes `LOCK` itself; callers that use
petrelic's operators directly must hold it (see `core.fe._relic`).

Byte encodings are RELIC's compressed ones at fixed sizes; the identity of G1 and G2 (which
RELIC writes as a single zero byte) is encoded as all-zero bytes of the full size, and is
accepted on input since it is a valid group element.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from random import Random

from petrelic.multiplicative.pairing import (
    G1,
    G2,
    GT,
    G1Element,
    G2Element,
    GTElement,
)

from core.errors import EncodingError, ShapeError
from core.fe._relic import LOCK
from core.fe.dlog import DlogTable, dlog

__all__ = [
    "G1_BYTES",
    "G2_BYTES",
    "GT_BYTES",
    "LOCK",
    "ORDER",
    "SCALAR_BYTES",
    "DlogTable",
    "PreparedG2",
    "dlog",
    "g1_from_bytes",
    "g1_gen_mul",
    "g1_generator",
    "g1_msm",
    "g1_mul",
    "g1_neg",
    "g1_to_bytes",
    "g2_from_bytes",
    "g2_gen_mul",
    "g2_generator",
    "g2_msm",
    "g2_mul",
    "g2_to_bytes",
    "gt_from_bytes",
    "gt_generator",
    "gt_identity",
    "gt_to_bytes",
    "pair",
    "prepare_g2",
    "random_scalar",
    "scalar_from_bytes",
    "scalar_to_bytes",
]

with LOCK:
    ORDER: int = int(G1.order())

G1_BYTES = 49
G2_BYTES = 97
GT_BYTES = 384
SCALAR_BYTES = 32


def random_scalar(rng: Random | None = None) -> int:
    """Uniform element of Z_r; `rng` is for reproducible tests, `None` uses the OS CSPRNG."""
    if rng is None:
        return secrets.randbelow(ORDER)
    return rng.randrange(ORDER)


def g1_generator() -> G1Element:
    with LOCK:
        return G1.generator()


def g2_generator() -> G2Element:
    with LOCK:
        return G2.generator()


def gt_generator() -> GTElement:
    """gT = e(g1, g2) for the standard generators."""
    with LOCK:
        return GT.generator()


def gt_identity() -> GTElement:
    with LOCK:
        return GT.neutral_element()


def g1_gen_mul(scalars: Sequence[int]) -> list[G1Element]:
    """[v]_1: each scalar times the G1 generator."""
    with LOCK:
        g = G1.generator()
        return [g ** (s % ORDER) for s in scalars]


def g2_gen_mul(scalars: Sequence[int]) -> list[G2Element]:
    """[v]_2: each scalar times the G2 generator."""
    with LOCK:
        g = G2.generator()
        return [g ** (s % ORDER) for s in scalars]


def g1_mul(point: G1Element, scalars: Sequence[int]) -> list[G1Element]:
    with LOCK:
        return [point ** (s % ORDER) for s in scalars]


def g2_mul(point: G2Element, scalars: Sequence[int]) -> list[G2Element]:
    with LOCK:
        return [point ** (s % ORDER) for s in scalars]


def g1_msm(points: Sequence[G1Element], scalars: Sequence[int]) -> G1Element:
    """Σ s_i·P_i (written multiplicatively: Π P_i^s_i)."""
    if len(scalars) != len(points):
        raise ShapeError(len(points), len(scalars))
    with LOCK:
        acc = G1.neutral_element()
        for p, s in zip(points, scalars, strict=True):
            acc = acc * p ** (s % ORDER)
        return acc


def g2_msm(points: Sequence[G2Element], scalars: Sequence[int]) -> G2Element:
    if len(scalars) != len(points):
        raise ShapeError(len(points), len(scalars))
    with LOCK:
        acc = G2.neutral_element()
        for p, s in zip(points, scalars, strict=True):
            acc = acc * p ** (s % ORDER)
        return acc


def g1_neg(points: Sequence[G1Element]) -> list[G1Element]:
    with LOCK:
        return [p.inverse() for p in points]


class PreparedG2:
    """Fixed G2 points made ready for repeated pairings against changing G1 points."""

    def __init__(self, points: Sequence[G2Element]) -> None:
        with LOCK:
            self._points = [p.__copy__() for p in points]

    def __len__(self) -> int:
        return len(self._points)


def prepare_g2(points: Sequence[G2Element]) -> PreparedG2:
    return PreparedG2(points)


def pair(g1s: Sequence[G1Element], g2s: Sequence[G2Element] | PreparedG2) -> GTElement:
    """Π e(g1s[i], g2s[i]); lengths must agree."""
    if len(g2s) != len(g1s):
        raise ShapeError(len(g2s), len(g1s))
    g2_list = g2s._points if isinstance(g2s, PreparedG2) else g2s
    with LOCK:
        acc = GT.neutral_element()
        for a, b in zip(g1s, g2_list, strict=True):
            acc = acc * a.pair(b)
        return acc


def _pad(raw: bytes, size: int) -> bytes:
    return raw if len(raw) == size else bytes(size)


def g1_to_bytes(p: G1Element) -> bytes:
    with LOCK:
        return _pad(p.to_binary(), G1_BYTES)


def g2_to_bytes(p: G2Element) -> bytes:
    with LOCK:
        return _pad(p.to_binary(), G2_BYTES)


def gt_to_bytes(e: GTElement) -> bytes:
    with LOCK:
        return e.to_binary()


def _check_len(b: bytes, size: int, what: str) -> None:
    if not isinstance(b, bytes | bytearray) or len(b) != size:
        got = len(b) if isinstance(b, bytes | bytearray) else type(b).__name__
        raise EncodingError(f"{what} must be {size} bytes, got {got}")


def g1_from_bytes(b: bytes) -> G1Element:
    _check_len(b, G1_BYTES, "G1 element")
    with LOCK:
        if not any(b):
            return G1.neutral_element()
        p = G1Element.from_binary(bytes(b))
        if not p.is_valid():
            raise EncodingError("G1 element is not on the curve or not in the subgroup")
        return p


def g2_from_bytes(b: bytes) -> G2Element:
    _check_len(b, G2_BYTES, "G2 element")
    with LOCK:
        if not any(b):
            return G2.neutral_element()
        p = G2Element.from_binary(bytes(b))
        if not p.is_valid():
            raise EncodingError("G2 element is not on the curve or not in the subgroup")
        return p


def gt_from_bytes(b: bytes) -> GTElement:
    _check_len(b, GT_BYTES, "GT element")
    with LOCK:
        e = GTElement.from_binary(bytes(b))
        if not e.is_valid():
            raise EncodingError("GT element is not in the subgroup")
        return e


def scalar_to_bytes(s: int) -> bytes:
    """Big-endian, reduced mod r."""
    return (s % ORDER).to_bytes(SCALAR_BYTES, "big")


def scalar_from_bytes(b: bytes) -> int:
    _check_len(b, SCALAR_BYTES, "scalar")
    s = int.from_bytes(b, "big")
    if s >= ORDER:
        raise EncodingError("scalar is not reduced modulo the group order")
    return s
