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
    assert wide.baby_steps == -(-(10**6) // (2 * dlog.GIANT_STEPS_TARGET))
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


@pytest.mark.slow
def test_reused_table_many_lookups(rng: random.Random) -> None:
    table = DlogTable(group.gt_generator(), -(10**6), 10**6)
    xs = [rng.randint(-(10**6), 10**6) for _ in range(30)] + [-(10**6), 10**6]
    assert [table.find(_gt(x)) for x in xs] == xs
