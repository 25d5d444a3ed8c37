"""Discrete logarithms in GT over a bounded signed range (baby-step giant-step)."""

from __future__ import annotations

from math import isqrt

from petrelic.multiplicative.pairing import GT, GTElement

from core.fe._relic import LOCK


class DlogTable:
    """Baby steps of `base` over [lo, hi], built once and reused for many `find` calls."""

    def __init__(self, base: GTElement, lo: int, hi: int) -> None:
        if lo > hi:
            raise ValueError("lo <= hi")
        self.lo = lo
        self.hi = hi
        self.span = hi - lo
        self.m = isqrt(self.span) + 1
        with LOCK:
            baby: dict[bytes, int] = {}
            cur = GT.neutral_element()
            for j in range(self.m):
                baby.setdefault(cur.to_binary(), j)
                cur = cur * base
            self._baby = baby
            self._shift = base ** (-lo % int(GT.order()))
            self._giant = (base ** self.m).inverse()

    @property
    def nbytes(self) -> int:
        """Approximate memory held by the table."""
        return sum(len(k) + 32 for k in self._baby)

    def find(self, target: GTElement) -> int | None:
        """Return the x in [lo, hi] with base^x == target, or None."""
        with LOCK:
            gamma = target * self._shift
            for i in range(self.span // self.m + 1):
                j = self._baby.get(gamma.to_binary())
                if j is not None and i * self.m + j <= self.span:
                    return self.lo + i * self.m + j
                gamma = gamma * self._giant
        return None


def dlog(base: GTElement, target: GTElement, lo: int, hi: int) -> int | None:
    """One-off search: builds a table for this base and range and throws it away."""
    return DlogTable(base, lo, hi).find(target)
