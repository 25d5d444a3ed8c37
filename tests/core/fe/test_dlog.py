"""Baby-step giant-step tables (fe-test-cases.md §4) and their numpy fingerprint index."""

from __future__ import annotations

import random

import numpy as np
import pytest
from petrelic.multiplicative.pairing import GTElement

from core.fe import _relic, dlog, group
from core.fe.dlog import DlogTable

R = group.ORDER


def _gt(x: int, base: GTElement | None = None) -> GTElement:
    with group.LOCK:
        return (base or group.gt_generator()) ** (x % R)


def test_signed_range() -> None:
    table = DlogTable(group.gt_generator(), -5, 10)
    for x in (-5, 0, 7, 10):
        assert table.find(_gt(x)) == x
    assert table.find(_gt(11)) is None
    assert table.find(_gt(-6)) is None


def test_identity_base() -> None:
    table = DlogTable(group.gt_identity(), 3, 9)
    assert table.find(group.gt_identity()) == 3
    assert table.find(group.gt_generator()) is None


def test_lo_above_hi() -> None:
    with pytest.raises(ValueError, match="lo <= hi"):
        DlogTable(group.gt_generator(), 1, 0)
    with pytest.raises(ValueError, match="lo <= hi"):
        group.dlog(group.gt_generator(), group.gt_identity(), 1, 0)


def test_single_value_range() -> None:
    table = DlogTable(group.gt_generator(), 42, 42)
    assert table.find(_gt(42)) == 42
    assert table.find(_gt(41)) is None


def test_inverse_shares_fingerprint_but_is_not_returned() -> None:
    """gT^-3 has the fingerprint of gT^3; the exact check must reject it."""
    a, b = _gt(3), _gt(-3)
    assert dlog._fingerprint(a) == dlog._fingerprint(b)
    assert DlogTable(group.gt_generator(), 0, 10).find(b) is None
    assert DlogTable(group.gt_generator(), -10, 10).find(b) == -3


def test_balanced_one_off_search(rng: random.Random) -> None:
    base = group.pair(group.g1_gen_mul([rng.randrange(R)]), group.g2_gen_mul([rng.randrange(R)]))
    for x in (-1000, -1, 0, 999, 1000):
        assert group.dlog(base, _gt(x, base), -1000, 1000) == x
    # 3 baby steps over [0, 10]: windows of 5 values centred on 0, 5, 10, 15; 11 and 12 fall in
    # the last one, past hi
    assert DlogTable(base, 0, 10, balanced=True).baby_steps == 3
    assert [group.dlog(base, _gt(x, base), 0, 10) for x in (10, 11, 12, -1)] == [10, *[None] * 3]


def test_huge_range_finds_small_values_quickly(rng: random.Random) -> None:
    """Windows go outward from 0, so |x| small is found at once even in a 2^64-wide range."""
    base = _gt(rng.randrange(R))
    for x in (0, 5, -7, 2**20, -(2**20) - 3):
        assert group.dlog(base, _gt(x, base), -(2**63), 2**63) == x
    assert DlogTable(base, -(2**63), 2**63, balanced=True).nbytes == 12 * 2**16


def test_ranges_on_one_side_of_zero() -> None:
    above = DlogTable(group.gt_generator(), 10**6, 2 * 10**6)
    below = DlogTable(group.gt_generator(), -2 * 10**6, -(10**6))
    for x in (10**6, 1_234_567, 2 * 10**6):
        assert above.find(_gt(x)) == x
        assert below.find(_gt(-x)) == -x
    for x in (10**6 - 1, 2 * 10**6 + 1, 0, -(10**6)):
        assert above.find(_gt(x)) is None
        assert below.find(_gt(-x)) is None


def test_table_sizes() -> None:
    small = DlogTable(group.gt_generator(), -5, 10)
    assert small.baby_steps == 16
    assert small.nbytes == 16 * 12
    wide = DlogTable(group.gt_generator(), 0, 10**6)
    assert wide.baby_steps == 2**15  # ⌈10^6 / (2 · GIANT_STEPS_TARGET)⌉, rounded up to 2^k
    assert wide.nbytes == wide.baby_steps * 12
    for x in (0, 1, 123_456, 999_999, 10**6):
        assert wide.find(_gt(x)) == x
    assert wide.find(_gt(10**6 + 1)) is None
    assert dlog.baby_steps_for(2**64, balanced=False) == dlog.MAX_BABY_STEPS


def test_fingerprint_collisions_are_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a 4-bit fingerprint most hits are false; exact checks must still give x or None."""
    monkeypatch.setattr(_relic, "pairing_ext", None)
    monkeypatch.setattr(dlog, "_fingerprint", lambda e: e.pt[0][0][0][0] & 0xF)
    table = DlogTable(group.gt_generator(), -300, 300)
    for x in (-300, -17, 0, 1, 250, 300):
        assert table.find(_gt(x)) == x
    assert table.find(_gt(301)) is None
    assert table.find(_gt(-301)) is None


def test_python_baby_steps_match_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    base = _gt(987654321)
    with group.LOCK:
        compiled = dlog._baby_keys(base, 50)
        monkeypatch.setattr(_relic, "pairing_ext", None)
        plain = dlog._baby_keys(base, 50)
    assert np.array_equal(compiled, plain)
    table = DlogTable(base, -20, 20)
    assert [table.find(_gt(x, base)) for x in (-20, 0, 20, 21)] == [-20, 0, 20, None]


def test_reusable_sizes_are_powers_of_two() -> None:
    """Bounds [k, k + w] have one table size whatever k, and a base has few sizes at all."""
    sizes = {dlog.baby_steps_for(span, balanced=False) for span in range(0, 2**21, 997)}
    sizes |= {dlog.baby_steps_for(2**e + d, balanced=False) for e in range(64) for d in (-1, 0, 1)}
    assert all(m & (m - 1) == 0 for m in sizes)
    assert len(sizes) <= 21
    for span in (0, 1, 15, 16, 17, 10**4, 2**32):
        m = dlog.baby_steps_for(span, balanced=False)
        assert min(span + 1, dlog.MAX_BABY_STEPS) <= 2 * m - 1  # one window or a few steps
        assert m <= max(2 * (span + 1), dlog.FULL_TABLE) or m == dlog.MAX_BABY_STEPS


def test_over_shares_the_baby_steps() -> None:
    table = DlogTable(group.gt_generator(), -5, 10)
    moved = table.over(1000, 1015)
    assert (moved.lo, moved.hi, moved.span) == (1000, 1015, 15)
    assert (table.lo, table.hi) == (-5, 10)
    assert moved._keys is table._keys and moved.nbytes == table.nbytes
    assert table.over(-5, 10) is table
    assert moved.find(_gt(1007)) == 1007 and table.find(_gt(1007)) is None
    with pytest.raises(ValueError, match="lo <= hi"):
        table.over(1, 0)


@pytest.mark.parametrize("kind", ["bls12-381", "bn254", "4-bit fingerprint", "identity"])
def test_over_matches_brute_force(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One small table (m = 8) moved over many windows, narrower and far wider than its own
    2m − 1, on both sides of zero: every value in or near each window, against brute force."""
    curve = group.curve(group.BN254 if kind == "bn254" else group.BLS12_381)
    base = curve.gt_identity() if kind == "identity" else curve.gt_generator()
    if kind == "4-bit fingerprint":
        monkeypatch.setattr(_relic, "pairing_ext", None)
        monkeypatch.setattr(dlog, "_fingerprint", lambda e: e.pt[0][0][0][0] & 0xF)
    table = DlogTable(base, 0, 7)
    assert table.baby_steps == 8
    with group.LOCK:
        powers = {x: base ** (x % table._order) for x in range(-80, 81)}
    # every lo, and spans that put an end of the range on the edge of a window (8, 23, 38)
    windows = [(lo, lo + span) for lo in range(-60, 41) for span in (0, 1, 7, 8, 15, 23, 38)]
    for lo, hi in windows:
        moved = table.over(lo, hi)
        nearest_zero = min(max(0, lo), hi)  # what the identity base answers: all x match
        for x in range(max(lo - 3, -80), min(hi + 3, 80) + 1):
            expected = nearest_zero if kind == "identity" else x if lo <= x <= hi else None
            assert moved.find(powers[x]) == expected, (lo, hi, x)


@pytest.mark.slow
def test_reused_table_many_lookups(rng: random.Random) -> None:
    table = DlogTable(group.gt_generator(), -(10**6), 10**6)
    xs = [rng.randint(-(10**6), 10**6) for _ in range(30)] + [-(10**6), 10**6]
    assert [table.find(_gt(x)) for x in xs] == xs
