"""Vectors and matrices over Z_r, and the checks every scheme applies to its inputs.

Plain Python integers, because the entries are 255-bit residues. Vectors are lists of ints,
matrices are sequences of rows; the large secret bases of bjk, tao and kim are also kept as a
`PackedMatrix`, which turns a vector-matrix product into a few big-integer operations in C.
The inversion at bjk/tao/kim setup, O(m³), runs in C too (`core.fe._linalg`). Length mismatches
raise `ShapeError`, never a silently truncated `zip`. The arithmetic lives in `Zr`, one per
group order (each curve has its own r); the module-level names are BLS12-381's.
"""

from __future__ import annotations

import operator
import os
import random
import secrets
from collections.abc import Sequence
from itertools import chain
from typing import Any

from core.errors import ShapeError
from core.fe._relic import ORDER

try:  # exact F·v, inversion and sampling in C (little-endian limbs, as on x86-64)
    from core.fe import _linalg as _compiled  # type: ignore[attr-defined]  # compiled, no stub
except ImportError:  # pragma: no cover - only where the extension was not built
    _compiled = None

Vector = list[int]
Matrix = tuple[tuple[int, ...], ...]

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


def check_dimension(n: int) -> int:
    """The dimension a setup may take: an int of at least 1."""
    n = operator.index(n)
    if n < 1:
        raise ShapeError(expected=1, actual=n)
    return n


def check_i64(value: int) -> int:
    """A plaintext or function entry: a signed 64-bit integer, as in the reference libraries."""
    value = operator.index(value)
    if not I64_MIN <= value <= I64_MAX:
        raise ValueError(f"entry {value} is outside the signed 64-bit range")
    return value


def inputs(values: Sequence[int], n: int) -> list[int]:
    """Check the length, then every entry's type and range; return the signed entries.

    Entries stay signed (not reduced mod r): small factors keep the matrix products cheap,
    and every operation below reduces its result.
    """
    if len(values) != n:
        raise ShapeError(expected=n, actual=len(values))
    entries = list(map(operator.index, values))
    if entries and (min(entries) < I64_MIN or max(entries) > I64_MAX):
        for v in entries:
            check_i64(v)
    return entries


def function_matrix(rows: Sequence[Sequence[int]], n: int) -> Matrix:
    """An n×n function matrix: the row count first, then each row in order."""
    if len(rows) != n:
        raise ShapeError(expected=n, actual=len(rows))
    return tuple(tuple(inputs(row, n)) for row in rows)


def function_products(
    rows: Sequence[Sequence[int]], n: int, v: Sequence[int]
) -> tuple[Matrix, Vector]:
    """The checked n×n function matrix F and the exact (unreduced) products F·v.

    `v` holds residues below 2^256. The compiled path (`core.fe._linalg`) does the checks and
    products in one pass; any input it does not accept goes through `function_matrix`, which
    raises the precise error.
    """
    if len(v) != n:
        raise ShapeError(expected=n, actual=len(v))
    if _compiled is not None:
        packed = b"".join(x.to_bytes(32, "little") for x in v)
        done = _compiled.matrix_products(rows, n, packed)
        if done is not None:
            matrix, sums = done
            return matrix, [
                int.from_bytes(sums[i : i + 48], "little", signed=True)
                for i in range(0, 48 * n, 48)
            ]
    matrix = function_matrix(rows, n)
    return matrix, [sum(map(operator.mul, row, v)) for row in matrix]


def same_dimension(expected: int, actual: int) -> None:
    """A key and a ciphertext must come from setups of the same dimension."""
    if expected != actual:
        raise ShapeError(expected=expected, actual=actual)


def _check_lengths(a: Sequence[Any], b: Sequence[Any]) -> None:
    if len(a) != len(b):
        raise ShapeError(expected=len(a), actual=len(b))


def transpose(m: Sequence[Sequence[int]]) -> Matrix:
    """Mᵀ."""
    return tuple(zip(*m, strict=True))


class PackedMatrix:
    """A fixed matrix packed once for many vector products v·M mod r: the large secret bases
    of bjk, tao and kim, packed once per master key.

    Compiled (`core.fe._linalg.vec_mat`): the entries as 32-byte limbs, each column's terms
    summed unreduced and reduced once, a small vᵢ costing one limb product per entry. Without
    the extension, each row is packed into one integer (Kronecker substitution), so that v·M
    costs one big-integer multiply-add per nonzero vᵢ; each slot is wide enough for Σᵢ vᵢ·Mᵢⱼ
    with |vᵢ| < 2²⁵⁵ over up to 2¹⁶ rows, plus a bias that keeps it non-negative. Entries must
    be reduced.
    """

    SLOT_BYTES = 67
    MAX_ROWS = 2**16
    _OFFSET = 1 << (8 * SLOT_BYTES - 2)
    _COEFF_LIMIT = 1 << 255

    def __init__(self, m: Sequence[Sequence[int]], order: int = ORDER) -> None:
        self.order = order
        if not 0 < len(m) <= self.MAX_ROWS:
            raise ValueError(f"a packed matrix has 1 to {self.MAX_ROWS} rows")
        self.cols = len(m[0])
        self._count = len(m)
        for row in m:
            _check_lengths(m[0], row)
        self._limbs: bytes | None = None
        if _compiled is not None:
            self._limbs = b"".join([x.to_bytes(32, "little") for x in chain.from_iterable(m)])
            return
        size = self.SLOT_BYTES
        self._rows = [
            int.from_bytes(b"".join([entry.to_bytes(size, "little") for entry in row]), "little")
            for row in m
        ]
        self._bias = int.from_bytes(self._OFFSET.to_bytes(size, "little") * self.cols, "little")

    @property
    def nbytes(self) -> int:
        """Bytes of the packed entries."""
        if self._limbs is not None:
            return len(self._limbs)
        return sum((row.bit_length() + 7) // 8 for row in self._rows)

    def vec_mul(self, v: Sequence[int]) -> Vector:
        """v·M mod r."""
        if len(v) != self._count:
            raise ShapeError(expected=self._count, actual=len(v))
        limit = self._COEFF_LIMIT
        order = self.order
        coefficients = [vi if -limit < vi < limit else vi % order for vi in v]
        if self._limbs is not None:
            return _compiled.vec_mat(self._limbs, self.cols, coefficients, order)
        total = self._bias
        for vi, row in zip(coefficients, self._rows, strict=True):
            if vi:
                total += vi * row
        size = self.SLOT_BYTES
        data = total.to_bytes(self.cols * size, "little")
        offset = self._OFFSET
        return [
            (int.from_bytes(data[j : j + size], "little") - offset) % order
            for j in range(0, self.cols * size, size)
        ]


class Zr:
    """Vectors and matrices over Z_r for one group order r."""

    def __init__(self, order: int) -> None:
        self.order = order

    def random_scalar(self, rng: random.Random | None = None) -> int:
        """Uniform element of Z_r; `rng` is for reproducible tests, `None` uses the OS CSPRNG."""
        if rng is None:
            return secrets.randbelow(self.order)
        return rng.randrange(self.order)

    def dot(self, a: Sequence[int], b: Sequence[int]) -> int:
        """⟨a, b⟩ mod r."""
        _check_lengths(a, b)
        return sum(map(operator.mul, a, b)) % self.order

    def add(self, a: Sequence[int], b: Sequence[int]) -> Vector:
        """a + b, entrywise mod r."""
        _check_lengths(a, b)
        return [(x + y) % self.order for x, y in zip(a, b, strict=True)]

    def scale(self, v: Sequence[int], k: int) -> Vector:
        """k·v mod r."""
        return [(x * k) % self.order for x in v]

    def vec_mat(self, v: Sequence[int], m: Sequence[Sequence[int]]) -> Vector:
        """The row vector v·M = Σᵢ vᵢ·(row i of M), skipping zero coefficients.

        Row by row, so that small (unreduced) coefficients cost small-by-large products and one
        reduction per column at the end.
        """
        _check_lengths(m, v)
        acc = [0] * len(m[0]) if m else []
        for vi, row in zip(v, m, strict=True):
            _check_lengths(acc, row)
            if vi:
                acc = list(map(operator.add, acc, [vi * x for x in row]))
        return [x % self.order for x in acc]

    def mat_vec(self, m: Sequence[Sequence[int]], v: Sequence[int]) -> Vector:
        """The column vector M·v."""
        return [self.dot(v, row) for row in m]

    def scale_matrix(self, m: Sequence[Sequence[int]], k: int) -> Matrix:
        """k·M mod r."""
        return tuple(tuple(self.scale(row, k)) for row in m)

    def invert(self, m: Sequence[Sequence[int]]) -> tuple[Matrix, int] | None:
        """(M⁻¹, det M), or None when M is singular.

        In C (`core.fe._linalg`) when it is built; `invert_by_elimination` is the same in
        Python. Both are exact, and the inverse and determinant are unique, so they agree.
        """
        for row in m:
            _check_lengths(m, row)
        order = self.order
        return self._invert_reduced([[x % order for x in row] for row in m])

    def _invert_reduced(self, m: Sequence[Sequence[int]]) -> tuple[Matrix, int] | None:
        if _compiled is None:
            return self.invert_by_elimination(m)
        return _compiled.invert(m, self.order)

    def invert_by_elimination(self, m: Sequence[Sequence[int]]) -> tuple[Matrix, int] | None:
        """`invert` by Gauss–Jordan on [M | I] in Python.

        The pivot is the first row at or below the diagonal with a nonzero entry; each swap
        negates the running determinant and each pivot multiplies it.
        """
        size = len(m)
        for row in m:
            _check_lengths(m, row)
        work = [
            [x % self.order for x in row] + [int(i == j) for j in range(size)]
            for i, row in enumerate(m)
        ]
        det = 1
        for col in range(size):
            # Rows other than the pivot row are reduced lazily: each elimination adds at most r²
            # to an entry's magnitude, which is cheaper than a modular reduction per entry.
            pivot = next((i for i in range(col, size) if work[i][col] % self.order), None)
            if pivot is None:
                return None
            if pivot != col:
                work[col], work[pivot] = work[pivot], work[col]
                det = -det
            head = work[col][col] % self.order
            det = det * head % self.order
            inv = pow(head, -1, self.order)
            # Columns left of `col` are already zero in the pivot row; skip them.
            prow = [x * inv % self.order for x in work[col][col:]]
            work[col][col:] = prow
            for i in range(size):
                f = work[i][col] % self.order
                if i != col and f:
                    work[i][col:] = [x - f * y for x, y in zip(work[i][col:], prow, strict=True)]
        return tuple(tuple(x % self.order for x in row[size:]) for row in work), det % self.order

    def random_vector(self, length: int, rng: random.Random | None = None) -> Vector:
        """Independent uniform scalars.

        From the OS CSPRNG (rng None) the compiled module draws them all from one read of
        random bytes, by rejection as `secrets.randbelow` does one at a time.
        """
        if rng is not None or _compiled is None:
            return [self.random_scalar(rng) for _ in range(length)]
        out: Vector = []
        # Each 32-byte word is accepted with probability r / 2^bits > 1/2.
        while len(out) < length:
            missing = length - len(out)
            out += _compiled.sample(os.urandom(32 * (2 * missing + 8)), self.order)
        return out[:length]

    def random_invertible(
        self, size: int, rng: random.Random | None = None
    ) -> tuple[Matrix, Matrix, int]:
        """A uniform invertible matrix with its inverse and determinant (rejection sampling)."""
        return self._random_invertible(size, rng, False, 1, False)

    def random_dual_basis(
        self, size: int, rng: random.Random | None = None, scale: int = 1, by_det: bool = False
    ) -> tuple[Matrix, Matrix, int]:
        """A uniform invertible B, its dual basis scale·(B⁻¹)ᵀ (times det B too with `by_det`)
        and det B; the same draws as `random_invertible`."""
        return self._random_invertible(size, rng, True, scale % self.order, by_det)

    def _random_invertible(
        self, size: int, rng: random.Random | None, dual: bool, scale: int, by_det: bool
    ) -> tuple[Matrix, Matrix, int]:
        while True:
            entries = self.random_vector(size * size, rng)
            m = tuple(tuple(entries[i : i + size]) for i in range(0, size * size, size))
            if _compiled is not None:
                inverted = _compiled.invert(m, self.order, dual, scale, by_det)
            else:
                inverted = self.invert_by_elimination(m)
                if inverted is not None and dual:
                    inv, det = inverted
                    factor = scale * det if by_det else scale
                    inverted = self.scale_matrix(transpose(inv), factor), det
            if inverted is not None:
                return m, inverted[0], inverted[1]


_BLS = Zr(ORDER)
dot = _BLS.dot
add = _BLS.add
scale = _BLS.scale
vec_mat = _BLS.vec_mat
mat_vec = _BLS.mat_vec
scale_matrix = _BLS.scale_matrix
invert = _BLS.invert
random_vector = _BLS.random_vector
random_invertible = _BLS.random_invertible
