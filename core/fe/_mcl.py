"""BN254 through mcl (the `mclbn256` wheel): elements, batched operations and encodings.

The wheel's Python classes memoise pairings and coerce inputs loosely, so this module calls
the mcl library it loads directly (ctypes; it releases the GIL around each call) and keeps
its own thin element classes. They use petrelic's multiplicative notation (`a * b`, `a ** k`,
`a.inverse()`), so scheme code combines elements alike on either curve. Calls hold the
package's `LOCK`, like every other call into native group code here.

The curve is mcl's BN254 (`CurveFp254BNb`: y² = x³ + 2, u = −(2⁶² + 2⁵⁵ + 1)), with mcl's
standard generators G1 = (−1, 1) and the matching G2 point. Encodings are mcl's own
compressed ones: G1 32 B, G2 64 B (x, little-endian, sign of y in the top bit), GT 384 B (the
twelve Fp coefficients), scalars 32 B big-endian like on BLS12-381. The identities of G1 and
G2 encode as all-zero bytes there too. Decoding checks the length, that mcl reads every byte
(a valid x with a point above it), canonical form, and the prime-order subgroup (G1 has
cofactor 1; G2 and GT are tested explicitly).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any, ClassVar, Self

from mclbn256 import mclbn256 as _wheel

from core.errors import EncodingError, ShapeError
from core.fe import _relic
from core.fe._relic import LOCK

lib = _wheel.lib

ORDER = 0x2523648240000001BA344D8000000007FF9F800000000010A10000000000000D
G1_BYTES = 32
G2_BYTES = 64
GT_BYTES = 384
SCALAR_BYTES = 32

_Fr = ctypes.c_uint64 * 4
_G1_GENERATOR = bytes.fromhex("12000000000000a7130000000000216108000000804d34ba01000040826423a5")
_G2_GENERATOR = bytes.fromhex(
    "2bfb03c82442ee910dbf9848bb8b64a4b6ed618c7e8c8deb2fb69e51bb101a06"
    "f34cd5e7c1348c0db78437ae6b744d1f5baa82598ca70a31337873baf9aa1605"
)


def _fr(s: int) -> ctypes.Array[ctypes.c_uint64]:
    out = _Fr()
    lib.mclBnFr_setLittleEndianMod(out, (s % ORDER).to_bytes(32, "little"), 32)
    return out


def _fr_array(scalars: Sequence[int]) -> ctypes.Array:
    out = (_Fr * max(1, len(scalars)))()
    for i, s in enumerate(scalars):
        lib.mclBnFr_setLittleEndianMod(out[i], (s % ORDER).to_bytes(32, "little"), 32)
    return out


class _Element:
    """An element held in mcl's layout; the group law is written as multiplication."""

    __slots__ = ("v",)
    __hash__ = None  # type: ignore[assignment]
    LIMBS: ClassVar[int]
    SIZE: ClassVar[int]
    NAME: ClassVar[str]
    PREFIX: ClassVar[str]

    def __init__(self) -> None:
        self.v = (ctypes.c_uint64 * self.LIMBS)()

    def _fn(self, op: str) -> Any:
        return getattr(lib, f"{self.PREFIX}_{op}")

    def _other(self, other: Any) -> Self:
        if type(other) is not type(self):
            raise TypeError(f"expected {type(self).__name__}, got {type(other).__name__}")
        return other

    def __mul__(self, other: Any) -> Self:
        out = type(self)()
        with LOCK:
            self._fn(self.OP_MUL)(out.v, self.v, self._other(other).v)
        return out

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        with LOCK:
            return bool(self._fn("isEqual")(self.v, other.v))

    def __copy__(self) -> Self:
        out = type(self)()
        ctypes.memmove(out.v, self.v, ctypes.sizeof(self.v))
        return out

    def to_bytes(self) -> bytes:
        buf = ctypes.create_string_buffer(self.SIZE)
        with LOCK:
            written = self._fn("serialize")(buf, self.SIZE, self.v)
        return buf.raw if written == self.SIZE else bytes(self.SIZE)

    OP_MUL: ClassVar[str] = "add"


class Bn254G1(_Element):
    """A point of BN254's G1."""

    __slots__ = ()
    LIMBS = 12
    SIZE = G1_BYTES
    NAME = "G1"
    PREFIX = "mclBnG1"

    def __pow__(self, k: int) -> Self:
        out = type(self)()
        with LOCK:
            self._fn("mul")(out.v, self.v, _fr(k))
        return out

    def inverse(self) -> Self:
        out = type(self)()
        with LOCK:
            self._fn("neg")(out.v, self.v)
        return out


class Bn254G2(Bn254G1):
    """A point of BN254's G2."""

    __slots__ = ()
    LIMBS = 24
    SIZE = G2_BYTES
    NAME = "G2"
    PREFIX = "mclBnG2"


class Bn254GT(_Element):
    """An element of BN254's target group (a subgroup of Fp12*)."""

    __slots__ = ()
    LIMBS = 48
    SIZE = GT_BYTES
    NAME = "GT"
    PREFIX = "mclBnGT"
    OP_MUL = "mul"

    def __pow__(self, k: int) -> Self:
        out = type(self)()
        with LOCK:
            lib.mclBnGT_pow(out.v, self.v, _fr(k))
        return out

    def inverse(self) -> Self:
        """The inverse, which in GT is the conjugate."""
        out = type(self)()
        with LOCK:
            lib.mclBnGT_inv(out.v, self.v)
        return out

    def fingerprint(self) -> int:
        """The first limb of the first Fp coefficient (Montgomery form, fully reduced, so
        canonical); shared with the inverse, whose conjugation leaves that half alone."""
        return self.v[0]

    def is_one(self) -> bool:
        with LOCK:
            return bool(lib.mclBnGT_isOne(self.v))


def gt_identity() -> Bn254GT:
    out = Bn254GT()
    with LOCK:
        lib.mclBnGT_setInt(out.v, 1)
    return out


def _check_points(cls: type[_Element], points: Sequence[Any]) -> ctypes.Array:
    arr = (ctypes.c_uint64 * (cls.LIMBS * max(1, len(points))))()
    for i, p in enumerate(points):
        if type(p) is not cls:
            raise TypeError(f"expected {cls.__name__}, got {type(p).__name__}")
        ctypes.memmove(ctypes.byref(arr, i * cls.LIMBS * 8), p.v, cls.LIMBS * 8)
    return arr


def mul(point: Bn254G1, scalars: Sequence[int]) -> list:
    """One point (type-checked by the caller) times each scalar (any int, taken mod r)."""
    cls = type(point)
    fn = getattr(lib, f"{cls.PREFIX}_mul")
    out = []
    with LOCK:
        frs = _fr_array(scalars)
        for i in range(len(scalars)):
            r = cls()
            fn(r.v, point.v, frs[i])
            out.append(r)
    return out


def msm(cls: type[Bn254G1], points: Sequence[Any], scalars: Sequence[int]) -> Bn254G1:
    """Σ s_i·P_i by mcl's multi-scalar multiplication."""
    if len(scalars) != len(points):
        raise ShapeError(len(points), len(scalars))
    out = cls()
    if not points:
        return out
    with LOCK:
        arr = _check_points(cls, points)
        getattr(lib, f"{cls.PREFIX}_mulVec")(out.v, arr, _fr_array(scalars), len(points))
    return out


def pair(g1s: Sequence[Bn254G1], g2s: Sequence[Bn254G2]) -> Bn254GT:
    """Π e(g1s[i], g2s[i]): one multi-Miller loop and one final exponentiation."""
    if len(g2s) != len(g1s):
        raise ShapeError(len(g2s), len(g1s))
    out = Bn254GT()
    with LOCK:
        left = _check_points(Bn254G1, g1s)
        right = _check_points(Bn254G2, g2s)
        if not g1s:
            lib.mclBnGT_setInt(out.v, 1)
            return out
        lib.mclBn_millerLoopVec(out.v, left, right, len(g1s))
        lib.mclBn_finalExp(out.v, out.v)
    return out


def _read(cls: type[_Element], raw: bytes, what: str) -> _Element:
    out = cls()
    if cls is not Bn254GT and not any(raw):
        return out
    with LOCK:
        read = getattr(lib, f"{cls.PREFIX}_deserialize")(out.v, raw, len(raw))
        # mcl itself refuses unreduced coordinates; re-encoding guards canonical form anyway.
        if read != len(raw) or out.to_bytes() != raw:
            invalid = (
                "is not a canonical Fp12 encoding"
                if cls is Bn254GT
                else "is not a canonical encoding of a point on the curve"
            )
            raise EncodingError(f"{what} {invalid}")
        if cls is Bn254GT:
            power = Bn254GT()
            lib.mclBnGT_powGeneric(power.v, out.v, _fr(ORDER - 1))
            lib.mclBnGT_mul(power.v, power.v, out.v)
            in_subgroup = power.is_one()
        else:
            in_subgroup = getattr(lib, f"{cls.PREFIX}_isValidOrder")(out.v)
        if not in_subgroup:
            raise EncodingError(f"{what} is not in the prime-order subgroup")
    return out


def decode_run(cls: type[_Element], data: Any, count: int, offset: int, what: str) -> list:
    """`count` consecutive encodings from `data[offset:]`, each validated; errors name the
    index of the first bad one."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise EncodingError(f"{what}s must be bytes, got {type(data).__name__}")
    if count < 0 or offset < 0:
        raise ValueError("count and offset must not be negative")
    size = cls.SIZE
    view = bytes(memoryview(data).cast("B")[offset : offset + count * size])
    if len(view) != count * size:
        raise EncodingError(f"{count} {what}s need {count * size} bytes, got {len(view)}")
    names = [f"{what} {i}" if count > 1 else what for i in range(count)]
    return [_read(cls, view[i * size : (i + 1) * size], names[i]) for i in range(count)]


def generator(cls: type[_Element]) -> _Element:
    raw = _G1_GENERATOR if cls is Bn254G1 else _G2_GENERATOR
    return decode_run(cls, raw, 1, 0, f"{cls.NAME} generator")[0]


class FixedBase:
    """A point with a table of its multiples, as `core.fe.group.FixedBase` on BLS12-381: the
    compiled module's signed-window tables over mcl's layout (its Jacobian points, Montgomery
    form), results affine. Without the compiled module `mul` is mcl's own multiplication and
    `nbytes` is 0."""

    __slots__ = ("_table", "point")

    def __init__(self, point: Any, window: int = 4) -> None:
        if type(point) not in (Bn254G1, Bn254G2):
            raise TypeError(f"expected a BN254 G1 or G2 point, got {type(point).__name__}")
        self.point = point
        self._table: bytes | None = None
        ext = _relic.pairing_ext
        if ext is not None:
            kind = 3 if type(point) is Bn254G1 else 4
            with LOCK:
                self._table = ext.fixed_table(kind, bytes(point.v), window)

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return 0 if self._table is None else len(self._table)

    def mul(self, scalars: Sequence[int]) -> list:
        """Each scalar (any int, taken mod r) times the point."""
        ext = _relic.pairing_ext
        if ext is None or self._table is None:
            return mul(self.point, scalars)
        cls = type(self.point)
        size = cls.LIMBS * 8
        blob = b"".join((s % ORDER).to_bytes(32, "little") for s in scalars)
        out = bytearray(size * len(scalars))
        with LOCK:
            ext.fixed_mul(self._table, blob, out)
        array = ctypes.c_uint64 * cls.LIMBS
        points = []
        for i in range(len(scalars)):
            p: Any = object.__new__(cls)
            p.v = array.from_buffer_copy(out, i * size)
            points.append(p)
        return points
