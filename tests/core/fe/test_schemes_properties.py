"""Property tests: every scheme agrees with the plain integer inner product / quadratic form.

Random vectors and matrices with negative entries, zeros and signed 64-bit extremes, against
ranges that include, exactly hit or just miss the true value. Example counts are bounded so
that the suite stays fast.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SMALL = st.integers(min_value=-100, max_value=100)
PROPS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)


@cache
def _ip_keys(ip: Any, n: int) -> Any:
    return ip.setup(n, random.Random(n))


@cache
def _q_keys(qs: Any, n: int) -> Any:
    return qs.setup(n, random.Random(n))


def _vectors(entries: st.SearchStrategy[int]) -> st.SearchStrategy[tuple[list[int], list[int]]]:
    return st.integers(min_value=1, max_value=4).flatmap(
        lambda n: st.tuples(
            st.lists(entries, min_size=n, max_size=n), st.lists(entries, min_size=n, max_size=n)
        )
    )


@PROPS
@given(xy=_vectors(SMALL), seed=st.integers(0, 2**32))
def test_ip_matches_inner_product(ip: Any, xy: tuple[list[int], list[int]], seed: int) -> None:
    x, y = xy
    rng = random.Random(seed)
    msk = _ip_keys(ip, len(x))
    want = sum(a * b for a, b in zip(x, y, strict=True))
    sk, ct = ip.keygen(msk, y, rng), ip.encrypt(msk, x, rng=rng)
    bound = 100 * 100 * len(x)
    assert ip.decryptor(-bound, bound, msk)(sk, ct) == want
    # A range that starts or ends exactly at the value finds it; one that just misses does not.
    assert ip.decryptor(want, want + 3, msk)(ip.prepare(sk), ct) == want
    assert ip.decryptor(want - 5, want, msk)(sk, ct) == want
    assert ip.decryptor(want + 1, want + 40, msk)(sk, ct) is None
    assert ip.decryptor(want - 40, want - 1, msk)(sk, ct) is None


@PROPS
@given(xy=_vectors(I64), seed=st.integers(0, 2**32))
def test_ip_never_wraps_large_values(ip: Any, xy: tuple[list[int], list[int]], seed: int) -> None:
    """|⟨x, y⟩| < 2¹²⁸ ≪ r: an out-of-range value is None, never a wrapped number."""
    x, y = xy
    rng = random.Random(seed)
    msk = _ip_keys(ip, len(x))
    want = sum(a * b for a, b in zip(x, y, strict=True))
    got = ip.decryptor(-100, 100, msk)(ip.keygen(msk, y, rng), ip.encrypt(msk, x, rng=rng))
    assert got == (want if -100 <= want <= 100 else None)


@st.composite
def _quadratic(draw: st.DrawFn, entries: st.SearchStrategy[int]) -> tuple[Any, ...]:
    n = draw(st.integers(min_value=1, max_value=3))
    row = st.lists(entries, min_size=n, max_size=n)
    return draw(st.lists(row, min_size=n, max_size=n)), draw(row), draw(row)


def _form(f: list[list[int]], x: list[int], y: list[int]) -> int:
    n = len(x)
    return sum(x[i] * f[i][j] * y[j] for i in range(n) for j in range(n))


@PROPS
@given(case=_quadratic(st.integers(-20, 20)), seed=st.integers(0, 2**32))
def test_q_matches_quadratic_form(qs: Any, case: tuple[Any, ...], seed: int) -> None:
    f, x, y = case
    rng = random.Random(seed)
    pk, msk = _q_keys(qs, len(x))
    want = _form(f, x, y)
    sk, ct = qs.keygen(msk, f, rng), qs.encrypt(pk, x, y, rng)
    assert qs.decryptor(-72000, 72000)(sk, ct) == want
    assert qs.decryptor(want, want)(qs.prepare(sk), ct) == want
    assert qs.decryptor(want + 1, want + 30)(sk, ct) is None


@PROPS
@given(case=_quadratic(I64), seed=st.integers(0, 2**32))
def test_q_never_wraps_large_values(qs: Any, case: tuple[Any, ...], seed: int) -> None:
    """|xᵀFy| < 2¹⁹³ ≪ r, so large inputs give their value or None."""
    f, x, y = case
    rng = random.Random(seed)
    pk, msk = _q_keys(qs, len(x))
    want = _form(f, x, y)
    got = qs.decryptor(-100, 100)(qs.keygen(msk, f, rng), qs.encrypt(pk, x, y, rng))
    assert got == (want if -100 <= want <= 100 else None)
