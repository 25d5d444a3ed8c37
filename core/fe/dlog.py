"""Discrete logarithms in GT over a bounded signed range (baby-step giant-step).

The baby-step table holds a 64-bit fingerprint of each power base^j (0 ≤ j < m): the first raw
limb of its Fp12 value, which RELIC (BLS12-381) and mcl (BN254, in Montgomery form) keep fully
reduced, so it is canonical. Reading it costs a
fraction of a microsecond, against ~17 µs for hashing the serialised element. An element and
its inverse (its conjugate) share that limb, so one table answers both base^j and base^-j: each
giant step covers a window of 2m − 1 values around its centre. Unrelated elements may collide
too, so every hit is confirmed exactly (one small exponentiation) before it is returned. Keys
and exponents live in sorted numpy arrays (12 bytes per baby step), searched with
`searchsorted`; memory is bounded whatever the range. The baby steps depend on the base and m
only, so `DlogTable.over` searches another range with the same arrays; reused tables have a
power-of-two m, so a base needs at most a couple of dozen of them, wherever its ranges lie.

Windows are visited outward from the point of [lo, hi] nearest to zero, so small results (the
common case for inner products) come back after a few steps even in a huge range. A value
outside the range costs a full sweep of about span / (2m) giant steps: callers bound the span.
For a degenerate base (one of small order, such as the identity), several values in the range
match; the one nearest that starting point is returned.
"""

from __future__ import annotations

import copy
from math import isqrt
from typing import Any, cast

import numpy as np
from petrelic.bindings import _FFI as PETRELIC_FFI
from petrelic.multiplicative.pairing import GT, GTElement

from core.fe import _mcl, _relic
from core.fe._relic import LOCK, ORDER, lib

# A reused table trades memory for lookups: ranges up to FULL_TABLE values are covered by a
# single window; larger ones aim at GIANT_STEPS_TARGET giant steps for a full sweep, with at
# most MAX_BABY_STEPS entries (12 MiB); m is rounded up to a power of two. One-off tables
# (per-pair bases) balance build and search, with at most MAX_ONE_OFF_BABY_STEPS entries.
FULL_TABLE = 1 << 14
GIANT_STEPS_TARGET = 16
MAX_BABY_STEPS = 1 << 20
MAX_ONE_OFF_BABY_STEPS = 1 << 16


def _fingerprint(e: GTElement | _mcl.Bn254GT) -> int:
    if type(e) is _mcl.Bn254GT:
        return e.fingerprint()
    return e.pt[0][0][0][0]  # type: ignore[union-attr]


def _mul_into(acc: GTElement | _mcl.Bn254GT, other: GTElement | _mcl.Bn254GT) -> None:
    """acc ← acc · other, in place (caller holds LOCK)."""
    if type(acc) is _mcl.Bn254GT:
        _mcl.lib.mclBnGT_mul(acc.v, acc.v, other.v)
    else:
        lib.fp12_mul_lazyr(acc.pt, acc.pt, other.pt)  # type: ignore[union-attr]


def _baby_keys(base: GTElement | _mcl.Bn254GT, m: int) -> np.ndarray:
    """Fingerprints of base^0 … base^(m-1) (caller holds LOCK)."""
    keys = np.empty(m, dtype=np.uint64)
    if type(base) is _mcl.Bn254GT:
        cur = _mcl.gt_identity()
    elif _relic.pairing_ext is not None:
        _relic.pairing_ext.baby_steps(PETRELIC_FFI.buffer(cast(Any, base).pt), keys)
        return keys
    else:
        cur = GT.neutral_element()
    for j in range(m):
        keys[j] = _fingerprint(cur)
        _mul_into(cur, base)
    return keys


def baby_steps_for(span: int, balanced: bool) -> int:
    """Table size m for a range of span + 1 values (each window covers 2m − 1 of them).

    Reusable sizes are powers of two, so that ranges of similar width share one table.
    """
    if balanced:
        return min(isqrt(span // 2) + 1, MAX_ONE_OFF_BABY_STEPS)
    wanted = min(span + 1, max(FULL_TABLE, -(-span // (2 * GIANT_STEPS_TARGET))))
    return min(1 << (wanted - 1).bit_length(), MAX_BABY_STEPS)


class DlogTable:
    """Baby steps of `base` for searches in [lo, hi], built once and reused by `find` and `over`.

    `balanced=True` picks about √(span/2) baby steps: the cheapest build plus one search, for
    one-off use. The default spends more on the table so that each `find` needs few giant steps.
    """

    def __init__(
        self, base: GTElement | _mcl.Bn254GT, lo: int, hi: int, *, balanced: bool = False
    ) -> None:
        if type(base) not in (GTElement, _mcl.Bn254GT):
            raise TypeError(f"a table is built over a GT element, not {type(base).__name__}")
        if lo > hi:
            raise ValueError("lo <= hi")
        self._type = type(base)
        self.curve = "bn254" if self._type is _mcl.Bn254GT else "bls12-381"
        self._order = _mcl.ORDER if self._type is _mcl.Bn254GT else ORDER
        self.baby_steps = m = baby_steps_for(hi - lo, balanced)
        with LOCK:
            self._base = base.__copy__()
            keys = _baby_keys(self._base, m)
            order = np.argsort(keys, kind="stable")
            self._keys = keys[order]
            self._exponents = order.astype(np.uint32)
            self._step_up = base ** (-(2 * m - 1) % self._order)
            self._step_down = self._step_up.inverse()
        self._bind(lo, hi)

    def over(self, lo: int, hi: int) -> DlogTable:
        """This table's baby steps (shared, not copied) searched over [lo, hi] instead.

        Any range is answered exactly; a full sweep costs about (hi − lo) / (2m) giant steps.
        """
        if (lo, hi) == (self.lo, self.hi):
            return self
        if lo > hi:
            raise ValueError("lo <= hi")
        table = copy.copy(self)
        table._bind(lo, hi)
        return table

    def _bind(self, lo: int, hi: int) -> None:
        """Search [lo, hi], from its point nearest zero (the only range-dependent state)."""
        self.lo = lo
        self.hi = hi
        self.span = hi - lo
        self._start = min(max(0, lo), hi)
        with LOCK:
            self._shift = self._base ** (-self._start % self._order)

    @property
    def nbytes(self) -> int:
        """Memory held by the table's arrays (shared with the tables `over` returns)."""
        return self._keys.nbytes + self._exponents.nbytes

    def _match(self, gamma: GTElement, centre: int) -> int | None:
        """The x in [lo, hi] with gamma == base^(x − centre), |x − centre| < m, if any."""
        key = np.uint64(_fingerprint(gamma))
        idx = int(self._keys.searchsorted(key))
        while idx < self.baby_steps and self._keys[idx] == key:
            j = int(self._exponents[idx])
            power = self._base**j
            if gamma == power:
                x = centre + j
            elif gamma == power.inverse():
                x = centre - j
            else:
                x = None
            if x is not None and self.lo <= x <= self.hi:
                return x
            idx += 1
        return None

    def find(self, target: GTElement) -> int | None:
        """Return the x in [lo, hi] with base^x == target, or None."""
        if type(target) is not self._type:
            raise TypeError(
                f"this table is for {self.curve}; the target is a {type(target).__name__}"
            )
        reach = self.baby_steps - 1
        width = 2 * reach + 1
        with LOCK:
            up = target * self._shift
            down = up.__copy__()
            found = self._match(up, self._start)
            t = 1
            while found is None:
                centre_up = self._start + t * width
                centre_down = self._start - t * width
                if centre_up - reach > self.hi and centre_down + reach < self.lo:
                    return None
                if centre_up - reach <= self.hi:
                    _mul_into(up, self._step_up)
                    found = self._match(up, centre_up)
                if found is None and centre_down + reach >= self.lo:
                    _mul_into(down, self._step_down)
                    found = self._match(down, centre_down)
                t += 1
        return found


def dlog(
    base: GTElement | _mcl.Bn254GT, target: GTElement | _mcl.Bn254GT, lo: int, hi: int
) -> int | None:
    """One-off search with a balanced table (per-pair bases change on every decryption)."""
    return DlogTable(base, lo, hi, balanced=True).find(target)
