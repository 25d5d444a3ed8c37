"""The compiled fast paths of KeyGen, Enc and Dec against the plain code they stand in for.

Fixed-base tables (signed windows of every size, the generators' and arbitrary points'), the
column sums of the quadratic schemes' decryption and the batch normalisation before pairing,
each on random inputs beside petrelic's one-at-a-time operations or the group layer's MSM path;
and the tables a key keeps (`precompute`, `table_bytes`).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from petrelic.multiplicative.pairing import G1, G2

from core.errors import ShapeError
from core.fe import _mcl, _relic, group
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

R = group.ORDER
SCALARS = st.one_of(
    st.sampled_from([0, 1, -1, 2, R - 1, R, R + 1, 2**254, 2**255 - 19]),
    st.integers(-(2**300), 2**300),
    st.integers(0, 2**16),
)


def _plain(point: Any, scalars: list[int]) -> list[Any]:
    with group.LOCK:
        return [point ** (s % R) for s in scalars]


def _signed_digit_edges(window: int, rng: random.Random) -> list[int]:
    """Scalars whose every window is 0, 2^(w−1) − 1, 2^(w−1), 2^(w−1) + 1 or 2^w − 1: where the
    signed recoding carries or does not (kept below 2^250 < r, so reduction leaves them)."""
    half = 1 << (window - 1)
    digits = [0, half - 1, half, half + 1, 2 * half - 1]
    out = []
    for _ in range(6):
        k = sum(rng.choice(digits) << (window * i) for i in range(256 // window + 1))
        out.append(k % 2**250)
    return out


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from([G1, G2]),
    window=st.integers(2, 12),
    exponent=st.integers(1, R - 1),
    scalars=st.lists(SCALARS, max_size=8),
    seed=st.integers(0, 2**32),
)
def test_fixed_base_matches_plain_multiplication(
    kind: Any, window: int, exponent: int, scalars: list[int], seed: int
) -> None:
    with group.LOCK:
        point = kind.generator() ** exponent
    base = group.FixedBase(point, window)
    scalars = scalars + _signed_digit_edges(window, random.Random(seed))
    assert base.mul(scalars) == _plain(point, scalars)
    entry = 96 if kind is G1 else 192
    assert base.nbytes == 8 + -(-256 // window) * 2 ** (window - 1) * entry


@pytest.mark.parametrize("kind", [G1, G2], ids=["g1", "g2"])
def test_fixed_base_of_the_identity_and_empty_batches(kind: Any) -> None:
    with group.LOCK:
        identity = kind.neutral_element()
        g = kind.generator()
    assert group.FixedBase(identity).mul([0, 5, R - 1]) == [identity] * 3
    assert group.FixedBase(g).mul([]) == []
    assert group.FixedBase(g).mul([0, R]) == [identity, identity]


def test_fixed_base_without_the_compiled_module(monkeypatch: pytest.MonkeyPatch) -> None:
    with group.LOCK:
        g = G2.generator() ** 12345
    built = group.FixedBase(g)
    monkeypatch.setattr(_relic, "pairing_ext", None)
    plain = group.FixedBase(g)
    assert plain.nbytes == 0
    scalars = [3, -4, R - 2, 2**200, *range(8)]
    assert plain.mul(scalars) == built.mul(scalars) == _plain(g, scalars)


@settings(max_examples=30, deadline=None)
@given(
    kind=st.sampled_from([_mcl.Bn254G1, _mcl.Bn254G2]),
    window=st.integers(2, 12),
    exponent=st.integers(0, _mcl.ORDER - 1),
    scalars=st.lists(SCALARS, max_size=8),
    seed=st.integers(0, 2**32),
)
def test_bn254_fixed_base_matches_mcl(
    kind: Any, window: int, exponent: int, scalars: list[int], seed: int
) -> None:
    """The same tables over mcl's layout: mcl's own multiplication agrees, the identity too."""
    point = _mcl.mul(_mcl.generator(kind), [exponent])[0]
    # mcl's points are Jacobian: a sum is not normalised, which the table must handle
    point = point * _mcl.generator(kind)
    base = _mcl.FixedBase(point, window)
    scalars = scalars + _signed_digit_edges(window, random.Random(seed))
    got, want = base.mul(scalars), _mcl.mul(point, scalars)
    assert [p.to_bytes() for p in got] == [p.to_bytes() for p in want]
    assert got == want


def test_bn254_fixed_base_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    g = _mcl.generator(_mcl.Bn254G2)
    identity = _mcl.mul(g, [0])[0]
    assert _mcl.FixedBase(identity).mul([3, 0]) == [identity, identity]
    with pytest.raises(TypeError):
        _mcl.FixedBase(group.g1_gen_mul([1])[0])  # type: ignore[arg-type]
    built = _mcl.FixedBase(g)
    monkeypatch.setattr(_relic, "pairing_ext", None)
    plain = _mcl.FixedBase(g)
    assert plain.nbytes == 0 and built.nbytes > 0
    assert plain.mul([5, -1]) == built.mul([5, -1]) == _mcl.mul(g, [5, -1])


def test_generator_results_are_affine() -> None:
    """Batch normalisation leaves z = 1, with RELIC's tag of affine points (which the decoder
    also writes), so that encoding and pairing them skip a normalisation each."""
    points = group.g1_gen_mul([5, 7, 0]) + group.g2_gen_mul([5, 7])
    with group.LOCK:
        decoded = group.g1_from_bytes(points[0].to_binary())
        tags = [p.pt[0].coord for p in points if not p.is_neutral_element()]
        assert tags == [decoded.pt[0].coord] * 4
        assert points[2].is_neutral_element()


ENTRIES = st.one_of(
    st.sampled_from([0, 0, 0, 1, -1, 2, -3, 16, -17]),
    st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    rows=st.integers(1, 6),
    cols=st.integers(1, 6),
    small=st.booleans(),
)
def test_column_sums_match_one_msm_per_column(
    data: st.DataObject, rows: int, cols: int, small: bool
) -> None:
    entries = st.integers(-3, 3) if small else ENTRIES
    f = [data.draw(st.lists(entries, min_size=cols, max_size=cols)) for _ in range(rows)]
    exponents = data.draw(st.lists(st.integers(0, R - 1), min_size=rows, max_size=rows))
    with group.LOCK:
        g = G1.generator()
        # a product of two points is projective in RELIC: the compiled path normalises it
        points = [g**e * g for e in exponents]
    want = group.columns_by_msm(group.g1_msm, group.g1_neg, points, f)
    assert group.g1_columns(points, f) == want


def test_column_sums_shapes() -> None:
    points = group.g1_gen_mul([1, 2])
    assert group.g1_columns([], []) == []
    with pytest.raises(ShapeError):
        group.g1_columns(points, [[1, 2]])
    with pytest.raises(ShapeError):
        group.g1_columns(points, [[1, 2], [3]])
    with pytest.raises(TypeError):
        group.g1_columns(group.g2_gen_mul([1, 2]), [[1, 2], [3, 4]])  # type: ignore[arg-type]


def test_pairing_normalises_projective_points(rng: random.Random) -> None:
    """Products of points (projective) and the identity among them pair as the affine ones."""
    a, b = [rng.randrange(R) for _ in range(4)], [rng.randrange(R) for _ in range(4)]
    with group.LOCK:
        g1, g2 = G1.generator(), G2.generator()
        p = [g1**x * g1 for x in a] + [G1.neutral_element()]
        q = [g2**y * g2 for y in b] + [g2**5]
        want = group.gt_generator() ** (
            sum((x + 1) * (y + 1) for x, y in zip(a, b, strict=True)) % R
        )
    assert group.pair(p, q) == want
    assert group.pair(p, group.prepare_g2(q)) == want


@pytest.fixture
def rng() -> random.Random:
    return random.Random(25)


@pytest.mark.parametrize("curve", group.CURVES)
def test_keys_build_their_tables_once(curve: str) -> None:
    for ip in (bjk, tao, kim):
        msk = ip.setup(3, random.Random(1), curve=curve)
        assert msk.table_bytes == 0
        assert msk.precompute() is msk
        packed = msk.packed_b
        assert msk.precompute().packed_b is packed  # built once
        # two square matrices of 32-byte entries
        assert msk.table_bytes == 2 * len(msk.b) ** 2 * 32
    for ip in (lin, kks, opt):
        msk = ip.setup(3, random.Random(1), curve=curve)
        assert msk.precompute().table_bytes == 0
    for q in (bcfg, sgp):
        pk, msk = q.setup(3, random.Random(1), curve=curve)
        assert pk.table_bytes == 0 and msk.precompute().table_bytes == 0
        pk.precompute()
        # 4-bit windows: 512 affine multiples per point, of 96 and 192 bytes on BLS12-381,
        # 64 and 128 on BN254
        g1, g2 = (96, 192) if curve == group.BLS12_381 else (64, 128)
        g2_points = 4 if q is bcfg else 3
        assert pk.table_bytes == 3 * (8 + 512 * g1) + g2_points * (8 + 512 * g2)
