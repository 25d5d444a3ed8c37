"""The group layer of the FE schemes: BLS12-381 through petrelic, with RELIC's fast paths.

The module-level functions below are the BLS12-381 backend. `curve(name)` returns a `Curve`,
the same operations for one curve: BLS12-381 made of these very functions (the default path is
unchanged), or BN254 through mcl (`core.fe._mcl`). Schemes take every operation from the
`Curve` of their objects.

Elements are petrelic's own classes. Every function here takes `LOCK` itself; callers that use
petrelic's operators directly must hold it. Batched work goes straight to RELIC's multi-pairing
(`pp_map_sim_oatep_k12`, its inputs made affine in one batch first) and multi-scalar
(`ep_mul_sim_lot`) routines through `core.fe._relic`, chunked because RELIC keeps its
temporaries on the stack. Multiples of a fixed point (the generators, a public key's points) come
from the compiled module's signed-window tables (`FixedBase`), and the quadratic schemes' column
sums Πᵢ pᵢ^{Fᵢⱼ} from one compiled call (`g1_columns`); without the compiled module, RELIC's comb
and MSM routines do the same work.

Encodings are RELIC's compressed ones at fixed sizes (G1 49 B, G2 97 B, GT 384 B, scalars 32 B
big-endian). RELIC writes the identity of G1 and G2 as one zero byte; here it is all-zero bytes
of the full size (as RELIC's compressed identity of GT already is), and it is accepted on input:
it is a group element, and schemes that must not see it check for it themselves. Decoding
checks, in order: length, prefix byte, RELIC's error code (x not on the curve, or not a valid
compressed Fp12), canonical form (re-encoding gives the same bytes) and membership of the
prime-order subgroup, each with its own `EncodingError` message. RELIC prints a line
("ERROR THROWN ...") to stdout when it rejects bytes; nothing else comes of it.

G1 and G2 points are decoded by the compiled module when it loads: a whole run of encodings
in one call (`g1_vector_from_bytes`), with subgroup tests by the curve endomorphisms (phi(P) =
-u^2 P in G1, psi(P) = u P in G2) instead of petrelic's multiplication by the order.
"""

from __future__ import annotations

import secrets
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from random import Random
from typing import Any, cast

from petrelic.bindings import _FFI as PETRELIC_FFI
from petrelic.multiplicative.pairing import (
    G1,
    G2,
    GT,
    G1Element,
    G2Element,
    GTElement,
)

from core.errors import EncodingError, ShapeError
from core.fe import _mcl, _relic, linalg
from core.fe._relic import LOCK, ORDER, ffi, lib
from core.fe.dlog import DlogTable, dlog

__all__ = [
    "BLS12_381",
    "BN254",
    "CURVES",
    "DEFAULT_CURVE",
    "G1_BYTES",
    "G2_BYTES",
    "GT_BYTES",
    "LOCK",
    "ORDER",
    "SCALAR_BYTES",
    "Curve",
    "DlogTable",
    "PreparedG2",
    "curve",
    "dlog",
    "g1_columns",
    "g1_from_bytes",
    "g1_gen_mul",
    "g1_generator",
    "g1_msm",
    "g1_mul",
    "g1_neg",
    "g1_to_bytes",
    "g1_vector_from_bytes",
    "g2_from_bytes",
    "g2_gen_mul",
    "g2_generator",
    "g2_msm",
    "g2_mul",
    "g2_to_bytes",
    "g2_vector_from_bytes",
    "gt_from_bytes",
    "gt_generator",
    "gt_identity",
    "gt_to_bytes",
    "pair",
    "prepare_g2",
    "random_scalar",
    "same_curve",
    "scalar_from_bytes",
    "scalar_to_bytes",
]

G1_BYTES = 49
G2_BYTES = 97
GT_BYTES = 384
SCALAR_BYTES = 32

# RELIC allocates per-pair and per-point temporaries on the stack (about 1.2 KB per pair, 0.8
# KB per G1 point and 1.6 KB per G2 point): bounded chunks keep every call to a few MB at most,
# well inside the 8 MB stack of the main thread and of worker threads.
PAIRING_CHUNK = 1024
MSM_CHUNK = 2048
# MSMs whose scalars all lie in [-SMALL_MSM, SMALL_MSM] use buckets and additions only.
SMALL_MSM = 16
# Scalars below this use RELIC's small-integer multiplication (cost grows with bit length).
SMALL_MUL = 1 << 32
# From this many scalars on, one point gets its own comb table before multiplying.
COMB_BATCH = 8
# Window bits of the generators' tables in the compiled module, per process: 12 for G1 (22
# signed digits: at most 22 mixed additions per scalar, a 4.3 MB table), 10 for G2 (26 digits,
# 2.6 MB): G1 serves encryption, the operation data owners make most.
G1_GENERATOR_WINDOW = 12
G2_GENERATOR_WINDOW = 10


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


@dataclass(frozen=True)
class _Curve:
    """What differs between G1 and G2 in the batched routines."""

    kind: int  # 1 or 2, as the compiled module names the groups
    element: type
    ctype: str
    size: int
    generator: Callable[[], object]
    add: Callable[..., None]
    neg: Callable[..., None]
    mul_dig: Callable[..., None]
    mul_sim_lot: Callable[..., None]
    pre_combs: Callable[..., None]
    fix_combs: Callable[..., None]
    generator_window: int


_G1 = _Curve(
    1,
    G1Element,
    "ep_st",
    _relic.G1_POINT_SIZE,
    G1.generator,
    lib.ep_add_projc,
    lib.ep_neg,
    lib.ep_mul_dig,
    lib.ep_mul_sim_lot,
    lib.ep_mul_pre_combs,
    lib.ep_mul_fix_combs,
    G1_GENERATOR_WINDOW,
)
_G2 = _Curve(
    2,
    G2Element,
    "ep2_st",
    _relic.G2_POINT_SIZE,
    G2.generator,
    lib.ep2_add_projc,
    lib.ep2_neg,
    lib.ep2_mul_dig,
    lib.ep2_mul_sim_lot,
    lib.ep2_mul_pre_combs,
    lib.ep2_mul_fix_combs,
    G2_GENERATOR_WINDOW,
)
_generator_tables: dict[int, object] = {}


def _points(curve: _Curve, points: Sequence[Any]) -> Any:
    for p in points:
        if type(p) is not curve.element:
            raise TypeError(f"expected {curve.element.__name__}, got {type(p).__name__}")
    return _relic.point_array(curve.ctype, curve.size, points)


def _new(curve: _Curve, raw: Any) -> Any:
    """A petrelic element holding a copy of the RELIC point at `raw`."""
    out = curve.element()
    ffi.memmove(out.pt, raw, curve.size)
    return out


def _comb_table(curve: _Curve, point: Any) -> Any:
    """RELIC's comb table of a point given as a RELIC struct pointer."""
    table = ffi.new(f"{curve.ctype}[]", _relic.COMB_TABLE)
    curve.pre_combs(table, point)
    return table


def _comb_generator_table(curve: _Curve) -> Any:
    """RELIC's comb table of the generator, for the path without the compiled module (caller
    holds LOCK); built once per process on first use."""
    table = _generator_tables.get(curve.kind)
    if table is None:
        table = _comb_table(curve, _relic.point_array(curve.ctype, curve.size, [curve.generator()]))
        _generator_tables[curve.kind] = table
    return table


def _elements(curve: _Curve, count: int, fill: Callable[[object], None]) -> list:
    """`count` petrelic elements whose points `fill` writes into one block of memory.

    The elements point into the block (each keeps it alive): no allocation and no copy per
    element.
    """
    block = PETRELIC_FFI.new(f"{curve.ctype}[]", max(1, count))
    fill(PETRELIC_FFI.buffer(block, curve.size * count))
    cls = curve.element
    out = []
    for i in range(count):
        e: Any = object.__new__(cls)
        e.pt = block + i
        e._is_gen = False
        e._block = block
        out.append(e)
    return out


class FixedBase:
    """A point with a table of its multiples, for a point multiplied by many scalars.

    The compiled module's table of signed windows of `window` bits: ceil(256 / window) mixed
    additions per scalar from ceil(256 / window)·2^(window−1) affine multiples (`nbytes`);
    results come out affine, made so with one inversion per call. Used for the generators (one
    table per process) and for the points of a public key (one table per point, kept with the
    key). Without the compiled module `mul` multiplies the point directly and `nbytes` is 0.
    """

    __slots__ = ("_curve", "_table", "point")

    def __init__(self, point: G1Element | G2Element, window: int = 4) -> None:
        self._curve = _G1 if type(point) is G1Element else _G2
        ext = _relic.pairing_ext
        with LOCK:
            arr = _points(self._curve, [point])
            self.point = point
            self._table: bytes | None = None
            if ext is not None:
                self._table = ext.fixed_table(
                    self._curve.kind, ffi.buffer(arr, self._curve.size), window
                )

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return 0 if self._table is None else len(self._table)

    def mul(self, scalars: Sequence[int]) -> list:
        """Each scalar (any int, taken mod r) times the point."""
        ext = _relic.pairing_ext
        with LOCK:
            if ext is None or self._table is None:
                return _mul_many(self._curve, self.point, scalars, None)
            table = self._table
            blob = b"".join([(s % ORDER).to_bytes(32, "little") for s in scalars])
            return _elements(self._curve, len(scalars), lambda out: ext.fixed_mul(table, blob, out))


_generator_bases: dict[int, FixedBase] = {}


def _gen_mul(curve: _Curve, scalars: Sequence[int]) -> list:
    if _relic.pairing_ext is None:
        return _mul_many(curve, curve.generator(), scalars, _comb_generator_table(curve))
    base = _generator_bases.get(curve.kind)
    if base is None:
        base = _generator_bases[curve.kind] = FixedBase(curve.generator(), curve.generator_window)
    return base.mul(scalars)


def _mul_many(curve: _Curve, point: Any, scalars: Sequence[int], table: Any) -> list:
    """Each scalar times `point`: small ones by additions, the rest by comb table or wNAF."""
    out = []
    big = any(not -SMALL_MUL < s < SMALL_MUL for s in scalars)
    if table is None and big and len(scalars) >= COMB_BATCH:
        table = _comb_table(curve, point.pt)
    bns = _relic.bn_array(scalars) if big else None
    for i, s in enumerate(scalars):
        r = curve.element()
        if -SMALL_MUL < s < SMALL_MUL:
            curve.mul_dig(r.pt, point.pt, abs(s))
            if s < 0:
                curve.neg(r.pt, r.pt)
        elif table is not None:
            assert bns is not None  # drawn whenever a scalar is big
            curve.fix_combs(r.pt, table, bns + i)
        else:
            r = point ** (s % ORDER)
        out.append(r)
    return out


def g1_gen_mul(scalars: Sequence[int]) -> list[G1Element]:
    """[v]_1: each scalar (any int, taken mod r) times the G1 generator, by table."""
    with LOCK:
        return _gen_mul(_G1, scalars)


def g2_gen_mul(scalars: Sequence[int]) -> list[G2Element]:
    """[v]_2: each scalar (any int, taken mod r) times the G2 generator, by table."""
    with LOCK:
        return _gen_mul(_G2, scalars)


def g1_mul(point: G1Element, scalars: Sequence[int]) -> list[G1Element]:
    """One point times many scalars (a comb table for the point when there are many)."""
    with LOCK:
        return _mul_many(_G1, point, scalars, None)


def g2_mul(point: G2Element, scalars: Sequence[int]) -> list[G2Element]:
    with LOCK:
        return _mul_many(_G2, point, scalars, None)


def _msm(curve: _Curve, points: Sequence[Any], scalars: Sequence[int]) -> Any:
    if len(scalars) != len(points):
        raise ShapeError(len(points), len(scalars))
    arr = _points(curve, points)
    if all(-SMALL_MSM <= s <= SMALL_MSM for s in scalars):
        return _msm_small(curve, arr, scalars)
    acc = ffi.new(f"{curve.ctype} *")
    part = ffi.new(f"{curve.ctype} *")
    for start in range(0, len(points), MSM_CHUNK):
        chunk = scalars[start : start + MSM_CHUNK]
        curve.mul_sim_lot(part, arr + start, _relic.bn_array(chunk), len(chunk))
        curve.add(acc, acc, part)
    return _new(curve, acc)


def _msm_small(curve: _Curve, arr: Any, scalars: Sequence[int]) -> Any:
    """Σ s_i·P_i for |s_i| ≤ SMALL_MSM: one bucket per |s|, then a running sum (2·max adds)."""
    top = max((abs(s) for s in scalars), default=0)
    pos = ffi.new(f"{curve.ctype}[]", top + 1)
    neg = ffi.new(f"{curve.ctype}[]", top + 1)
    for i, s in enumerate(scalars):
        if s > 0:
            curve.add(pos + s, pos + s, arr + i)
        elif s < 0:
            curve.add(neg + -s, neg + -s, arr + i)
    running = ffi.new(f"{curve.ctype} *")
    total = ffi.new(f"{curve.ctype} *")
    for v in range(top, 0, -1):
        curve.neg(neg + v, neg + v)
        curve.add(running, running, pos + v)
        curve.add(running, running, neg + v)
        curve.add(total, total, running)
    return _new(curve, total)


def g1_msm(points: Sequence[G1Element], scalars: Sequence[int]) -> G1Element:
    """Σ s_i·P_i: additions only when every |s_i| ≤ 16, else RELIC's simultaneous method."""
    with LOCK:
        return _msm(_G1, points, scalars)


def g2_msm(points: Sequence[G2Element], scalars: Sequence[int]) -> G2Element:
    with LOCK:
        return _msm(_G2, points, scalars)


def g1_neg(points: Sequence[G1Element]) -> list[G1Element]:
    with LOCK:
        return [p.inverse() for p in points]


def columns_by_msm(
    msm: Callable[[Sequence[Any], Sequence[int]], object],
    neg: Callable[[Sequence[Any]], list],
    points: Sequence[Any],
    f: Sequence[Sequence[int]],
) -> list:
    """Πᵢ pᵢ^{Fᵢⱼ} for every column j of F, one MSM per column; a negative entry is applied
    to the negated point, so that every scalar stays a small non-negative integer."""
    negated = neg(points)
    out = []
    for column in zip(*f, strict=True):
        terms = [(points[i], e) if e > 0 else (negated[i], -e) for i, e in enumerate(column) if e]
        out.append(msm([p for p, _ in terms], [e for _, e in terms]))
    return out


def g1_columns(points: Sequence[G1Element], f: Sequence[Sequence[int]]) -> list[G1Element]:
    """Πᵢ pᵢ^{Fᵢⱼ} for every column j of a matrix F of signed 64-bit entries (one row per
    point), as `columns_by_msm`; the compiled module runs all columns in one call and gives
    affine points."""
    ext = _relic.pairing_ext
    if ext is None or not points:
        return columns_by_msm(g1_msm, g1_neg, points, f)
    if len(f) != len(points):
        raise ShapeError(len(points), len(f))
    width = len(f[0])
    entries = array("q", chain.from_iterable(f))
    if len(entries) != len(points) * width:
        raise ShapeError(len(points) * width, len(entries))
    with LOCK:
        arr = _points(_G1, points)
        buf = ffi.buffer(arr, _G1.size * len(points))
        return _elements(_G1, width, lambda out: ext.column_sums(buf, entries, out))


class PreparedG2:
    """Fixed G2 points made ready for repeated pairings against changing G1 points.

    With the compiled module the Miller-loop lines of every point are computed once (~20 KB a
    point); without it the points are kept in RELIC's layout and paired by the plain
    multi-pairing. Both give results identical to `pair` with the points themselves.
    """

    __slots__ = ("_count", "_lines", "_points", "_present")

    def __init__(self, points: Sequence[G2Element]) -> None:
        with LOCK:
            self._points = _points(_G2, points)
            self._present: bytes | None = None
            self._lines: bytes | None = None
            if _relic.pairing_ext is not None:
                buf = ffi.buffer(self._points, _G2.size * len(points))
                self._lines, self._present = _relic.pairing_ext.prepare(buf)
        self._count = len(points)

    def __len__(self) -> int:
        return self._count


def prepare_g2(points: Sequence[G2Element]) -> PreparedG2:
    """Precompute the pairing lines of G2 points that will be paired many times."""
    return PreparedG2(points)


def _normalized(curve: _Curve, arr: Any, n: int) -> Any:
    """The points of `arr` made affine with one inversion for all (RELIC's multi-pairing would
    spend one on each point that is not)."""
    if _relic.pairing_ext is not None:
        _relic.pairing_ext.normalize(curve.kind, ffi.buffer(arr, curve.size * n))
    return arr


def _pair_arrays(g1s: Any, g2s: Any, n: int) -> GTElement:
    out = GT.neutral_element()
    part = GTElement()
    for start in range(0, n, PAIRING_CHUNK):
        k = min(PAIRING_CHUNK, n - start)
        lib.pp_map_sim_oatep_k12(part.pt, g1s + start, g2s + start, k)
        out = out * part
    return out


def pair(g1s: Sequence[G1Element], g2s: Sequence[G2Element] | PreparedG2) -> GTElement:
    """Π e(g1s[i], g2s[i]) with one final exponentiation per chunk of pairs."""
    if len(g2s) != len(g1s):
        raise ShapeError(len(g2s), len(g1s))
    n = len(g1s)
    with LOCK:
        if n == 0:
            return GT.neutral_element()
        left = _normalized(_G1, _points(_G1, g1s), n)
        if not isinstance(g2s, PreparedG2):
            return _pair_arrays(left, _normalized(_G2, _points(_G2, g2s), n), n)
        if g2s._lines is None or _relic.pairing_ext is None:
            return _pair_arrays(left, g2s._points, n)
        out = GTElement()
        _relic.pairing_ext.pair(
            g2s._lines, g2s._present, ffi.buffer(left, _G1.size * n), PETRELIC_FFI.buffer(out.pt)
        )
        return out


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


def _check_len(b: Any, size: int, what: str) -> bytes:
    if not isinstance(b, bytes | bytearray | memoryview):
        raise EncodingError(f"{what} must be bytes, got {type(b).__name__}")
    b = bytes(b)
    if len(b) != size:
        raise EncodingError(f"{what} must be {size} bytes, got {len(b)}")
    return b


# Reasons the compiled decoder gives for rejecting an encoding, in the order it checks them.
_REJECTIONS = {
    2: "is not a point on the curve",
    3: "is not in canonical form",
    4: "is not in the prime-order subgroup",
}


def _decode_point(b: Any, size: int, what: str, group: Any, reader: Callable) -> Any:
    """One point by the pure-Python path (RELIC's reader, re-encoding, petrelic's check)."""
    raw = _check_len(b, size, what)
    if not any(raw):
        with LOCK:
            return group.neutral_element()
    if raw[0] not in (2, 3):
        raise EncodingError(f"{what} has an invalid prefix byte {raw[0]:#04x}")
    return _decode(raw, what, "is not a point on the curve", group._element_type(), reader)


def _decode(raw: bytes, what: str, invalid: str, element: type, reader: Callable) -> Any:
    """Read with RELIC, then check its error code, canonical form and the subgroup."""
    with LOCK:
        out = element()
        _relic.clear_error()
        reader(out.pt, raw, len(raw))
        if _relic.failed():
            raise EncodingError(f"{what} {invalid}")
        if out.to_binary() != raw:
            raise EncodingError(f"{what} is not in canonical form")
        if not out.is_valid():
            raise EncodingError(f"{what} is not in the prime-order subgroup")
        return out


def _decode_run(curve: _Curve, data: Any, count: int, offset: int, what: str) -> list:
    """`count` consecutive encodings from `data[offset:]`, each validated as `_decode_point`.

    The compiled module decodes the whole run in one call (the lock taken once, the GIL
    released) and tests the subgroup with the curve's endomorphisms; without it each point
    goes through the pure-Python path. Errors name the index of the first bad encoding.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise EncodingError(f"{what}s must be bytes, got {type(data).__name__}")
    if count < 0 or offset < 0:
        raise ValueError("count and offset must not be negative")
    size = G1_BYTES if curve.kind == 1 else G2_BYTES
    view = memoryview(data).cast("B")[offset : offset + count * size]
    if len(view) != count * size:
        raise EncodingError(f"{count} {what}s need {count * size} bytes, got {len(view)}")
    ext = _relic.pairing_ext
    if ext is None:
        group_cls, reader = (G1, lib.ep_read_bin) if curve.kind == 1 else (G2, lib.ep2_read_bin)
        names = [f"{what} {i}" if count > 1 else what for i in range(count)]
        return [
            _decode_point(view[i * size : (i + 1) * size], size, names[i], group_cls, reader)
            for i in range(count)
        ]
    with LOCK:
        out = ffi.new(f"{curve.ctype}[]", max(1, count))
        rejected = ext.decode(curve.kind, view, ffi.buffer(out, curve.size * count))
        if rejected is not None:
            index, reason = rejected
            name = f"{what} {index}" if count > 1 else what
            if reason == 1:
                raise EncodingError(f"{name} has an invalid prefix byte {view[index * size]:#04x}")
            raise EncodingError(f"{name} {_REJECTIONS[reason]}")
        return [_new(curve, out + i) for i in range(count)]


def g1_from_bytes(b: bytes) -> G1Element:
    """One G1 point, validated: length, prefix, curve, canonical form, subgroup."""
    raw = _check_len(b, G1_BYTES, "G1 element")
    return _decode_run(_G1, raw, 1, 0, "G1 element")[0]


def g2_from_bytes(b: bytes) -> G2Element:
    """One G2 point, validated: length, prefix, curve, canonical form, subgroup."""
    raw = _check_len(b, G2_BYTES, "G2 element")
    return _decode_run(_G2, raw, 1, 0, "G2 element")[0]


def g1_vector_from_bytes(data: bytes, count: int, offset: int = 0) -> list[G1Element]:
    """`count` G1 points encoded back to back from `data[offset:]`, all validated in one call.

    The same checks as `g1_from_bytes`; an `EncodingError` names the index of the first bad
    point. Bytes past the run are ignored, too few bytes are an error.
    """
    return _decode_run(_G1, data, count, offset, "G1 element")


def g2_vector_from_bytes(data: bytes, count: int, offset: int = 0) -> list[G2Element]:
    """`count` G2 points encoded back to back from `data[offset:]`; see `g1_vector_from_bytes`."""
    return _decode_run(_G2, data, count, offset, "G2 element")


def gt_from_bytes(b: bytes) -> GTElement:
    """The identity is the all-zero encoding here too (RELIC's compressed form of 1)."""
    raw = _check_len(b, GT_BYTES, "GT element")
    return _decode(
        raw, "GT element", "is not a valid compressed Fp12 element", GTElement, lib.fp12_read_bin
    )


def scalar_to_bytes(s: int) -> bytes:
    """Big-endian, reduced mod r."""
    return (s % ORDER).to_bytes(SCALAR_BYTES, "big")


def scalar_from_bytes(b: bytes) -> int:
    raw = _check_len(b, SCALAR_BYTES, "scalar")
    s = int.from_bytes(raw, "big")
    if s >= ORDER:
        raise EncodingError("scalar is not reduced modulo the group order")
    return s


BLS12_381 = "bls12-381"
BN254 = "bn254"
DEFAULT_CURVE = BLS12_381
CURVES = (BLS12_381, BN254)


class PreparedPoints:
    """G2 points kept for repeated pairings on a curve without line precomputation (BN254:
    mcl's multi-Miller loop on the points themselves is already the fast path)."""

    __slots__ = ("points",)

    def __init__(self, points: Sequence[Any]) -> None:
        self.points = tuple(points)

    def __len__(self) -> int:
        return len(self.points)


@dataclass(frozen=True, eq=False)
class Curve:
    """One pairing group behind the operations the schemes use; `curve(name)` returns it.

    The BLS12-381 instance is made of this module's functions, so the default path runs
    exactly the code it ran before there was a choice of curve.
    """

    name: str
    order: int
    g1_bytes: int
    g2_bytes: int
    gt_bytes: int
    scalar_bytes: int
    zr: linalg.Zr
    gt_generator: Callable[[], Any]
    gt_identity: Callable[[], Any]
    g1_gen_mul: Callable[[Sequence[int]], list]
    g2_gen_mul: Callable[[Sequence[int]], list]
    g1_mul: Callable[[Any, Sequence[int]], list]
    g2_mul: Callable[[Any, Sequence[int]], list]
    g1_msm: Callable[[Sequence[Any], Sequence[int]], Any]
    g1_neg: Callable[[Sequence[Any]], list]
    g1_columns: Callable[[Sequence[Any], Sequence[Sequence[int]]], list]
    fixed_base: Callable[[Any], Any]
    pair: Callable[..., Any]
    prepare_g2: Callable[[Sequence[Any]], Any]
    g1_to_bytes: Callable[[Any], bytes]
    g2_to_bytes: Callable[[Any], bytes]
    gt_to_bytes: Callable[[Any], bytes]
    g1_vector_from_bytes: Callable[..., list]
    g2_vector_from_bytes: Callable[..., list]
    gt_from_bytes: Callable[[bytes], Any]
    scalar_to_bytes: Callable[[int], bytes]
    scalar_from_bytes: Callable[[bytes], int]

    def __repr__(self) -> str:
        return f"Curve({self.name!r})"


def _bn_gen_mul(cls: type, window: int) -> Callable[[Sequence[int]], list]:
    """Multiples of the generator by its table, built on first use."""
    bases: list[_mcl.FixedBase] = []

    def gen_mul(scalars: Sequence[int]) -> list:
        if not bases:
            bases.append(_mcl.FixedBase(_mcl.generator(cls), window))
        return bases[0].mul(scalars)

    return gen_mul


def _bn_typed(cls: type, elements: Sequence[Any]) -> list:
    for e in elements:
        if type(e) is not cls:
            raise TypeError(f"expected {cls.__name__}, got {type(e).__name__}")
    return list(elements)


def _bn_mul(cls: type) -> Callable[[object, Sequence[int]], list]:
    def mul(point: Any, scalars: Sequence[int]) -> list:
        return _mcl.mul(_bn_typed(cls, [point])[0], scalars)

    return mul


def _bn_pair(g1s: Sequence[Any], g2s: Sequence[Any] | PreparedPoints) -> Any:
    points = g2s.points if isinstance(g2s, PreparedPoints) else g2s
    return _mcl.pair(g1s, points)


def _scalar_codec(order: int) -> tuple[Callable[[int], bytes], Callable[[bytes], int]]:
    def encode(s: int) -> bytes:
        """Big-endian, reduced mod r."""
        return (s % order).to_bytes(SCALAR_BYTES, "big")

    def decode(b: bytes) -> int:
        s = int.from_bytes(_check_len(b, SCALAR_BYTES, "scalar"), "big")
        if s >= order:
            raise EncodingError("scalar is not reduced modulo the group order")
        return s

    return encode, decode


def _bn_gt_from_bytes(b: bytes) -> Any:
    raw = _check_len(b, _mcl.GT_BYTES, "GT element")
    return _mcl.decode_run(_mcl.Bn254GT, raw, 1, 0, "GT element")[0]


def _bn_curve() -> Curve:
    g1, g2 = _mcl.generator(_mcl.Bn254G1), _mcl.generator(_mcl.Bn254G2)
    gt = _mcl.pair([cast(_mcl.Bn254G1, g1)], [cast(_mcl.Bn254G2, g2)])
    scalar_encode, scalar_decode = _scalar_codec(_mcl.ORDER)

    def bn_msm(points: Sequence[Any], scalars: Sequence[int]) -> Any:
        return _mcl.msm(_mcl.Bn254G1, points, scalars)

    def bn_neg(points: Sequence[Any]) -> list:
        return [p.inverse() for p in _bn_typed(_mcl.Bn254G1, points)]

    def vector_reader(cls: type, what: str) -> Callable[..., list]:
        return lambda data, count, offset=0: _mcl.decode_run(cls, data, count, offset, what)

    return Curve(
        name=BN254,
        order=_mcl.ORDER,
        g1_bytes=_mcl.G1_BYTES,
        g2_bytes=_mcl.G2_BYTES,
        gt_bytes=_mcl.GT_BYTES,
        scalar_bytes=_mcl.SCALAR_BYTES,
        zr=linalg.Zr(_mcl.ORDER),
        gt_generator=gt.__copy__,
        gt_identity=_mcl.gt_identity,
        g1_gen_mul=_bn_gen_mul(_mcl.Bn254G1, G1_GENERATOR_WINDOW),
        g2_gen_mul=_bn_gen_mul(_mcl.Bn254G2, G2_GENERATOR_WINDOW),
        g1_mul=_bn_mul(_mcl.Bn254G1),
        g2_mul=_bn_mul(_mcl.Bn254G2),
        g1_msm=bn_msm,
        g1_neg=bn_neg,
        g1_columns=lambda points, f: columns_by_msm(bn_msm, bn_neg, points, f),
        fixed_base=_mcl.FixedBase,
        pair=_bn_pair,
        prepare_g2=lambda points: PreparedPoints(_bn_typed(_mcl.Bn254G2, points)),
        g1_to_bytes=lambda p: _bn_typed(_mcl.Bn254G1, [p])[0].to_bytes(),
        g2_to_bytes=lambda p: _bn_typed(_mcl.Bn254G2, [p])[0].to_bytes(),
        gt_to_bytes=lambda e: _bn_typed(_mcl.Bn254GT, [e])[0].to_bytes(),
        g1_vector_from_bytes=vector_reader(_mcl.Bn254G1, "G1 element"),
        g2_vector_from_bytes=vector_reader(_mcl.Bn254G2, "G2 element"),
        gt_from_bytes=_bn_gt_from_bytes,
        scalar_to_bytes=scalar_encode,
        scalar_from_bytes=scalar_decode,
    )


_CURVES: dict[str, Curve] = {
    BLS12_381: Curve(
        name=BLS12_381,
        order=ORDER,
        g1_bytes=G1_BYTES,
        g2_bytes=G2_BYTES,
        gt_bytes=GT_BYTES,
        scalar_bytes=SCALAR_BYTES,
        zr=linalg.Zr(ORDER),
        gt_generator=gt_generator,
        gt_identity=gt_identity,
        g1_gen_mul=g1_gen_mul,
        g2_gen_mul=g2_gen_mul,
        g1_mul=g1_mul,
        g2_mul=g2_mul,
        g1_msm=g1_msm,
        g1_neg=g1_neg,
        g1_columns=g1_columns,
        fixed_base=FixedBase,
        pair=pair,
        prepare_g2=prepare_g2,
        g1_to_bytes=g1_to_bytes,
        g2_to_bytes=g2_to_bytes,
        gt_to_bytes=gt_to_bytes,
        g1_vector_from_bytes=g1_vector_from_bytes,
        g2_vector_from_bytes=g2_vector_from_bytes,
        gt_from_bytes=gt_from_bytes,
        scalar_to_bytes=scalar_to_bytes,
        scalar_from_bytes=scalar_from_bytes,
    ),
    BN254: _bn_curve(),
}


def curve(name: str) -> Curve:
    """The group operations of a curve by name: "bls12-381" (the default) or "bn254"."""
    try:
        return _CURVES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown curve {name!r}; expected one of {', '.join(CURVES)}") from None


def same_curve(key: Any, ciphertext: Any) -> Curve:
    """The curve of a key and a ciphertext (or table base) that must share it; mixing curves
    is a `ValueError`, never a silently wrong result."""
    a, b = key.curve, ciphertext.curve
    if a != b:
        raise ValueError(f"the key is for {a} and the ciphertext for {b}")
    return curve(a)
