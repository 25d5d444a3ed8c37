"""Group layer: batched RELIC routines agree with petrelic's plain one-at-a-time operations.

References are computed with petrelic's operators (single scalar multiplications, single
pairings) or through bilinearity with known exponents, so every fast path is checked against
an independent computation.
"""

from __future__ import annotations

import random

import pytest
from petrelic.multiplicative.pairing import G1, G2, GT, G1Element, G2Element, GTElement

from core.errors import EncodingError, ShapeError
from core.fe import _relic, group

R = group.ORDER
P = int(
    "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF"
    "6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
    16,
)  # the BLS12-381 base-field prime

SCALARS = [0, 1, -1, 2, -7, 2**31, -(2**40), R - 1, R, R + 3, -R - 5, 2**300 + 11]


def _gt(x: int) -> GTElement:
    with group.LOCK:
        return group.gt_generator() ** (x % R)


def _mixed(rng: random.Random, n: int) -> list[int]:
    return [
        rng.choice([rng.randrange(R), rng.randrange(-20, 21), -rng.randrange(R)]) for _ in range(n)
    ]


def test_order_and_generators() -> None:
    assert R == int(G1.order()) == int(GT.order())
    assert R.bit_length() == 255
    with group.LOCK:
        assert group.g1_generator() == G1.generator()
        assert group.g2_generator() == G2.generator()
        assert group.gt_generator() == G1.generator().pair(G2.generator())
        assert group.gt_identity() == GT.neutral_element()


def test_random_scalar(rng: random.Random) -> None:
    assert group.random_scalar(random.Random(5)) == random.Random(5).randrange(R)
    draws = {group.random_scalar() for _ in range(20)} | {group.random_scalar(rng)}
    assert len(draws) == 21
    assert all(0 <= s < R for s in draws)


@pytest.mark.parametrize("compiled", [True, False], ids=["window-table", "comb-table"])
@pytest.mark.parametrize(
    ("gen_mul", "group_cls"), [(group.g1_gen_mul, G1), (group.g2_gen_mul, G2)], ids=["g1", "g2"]
)
def test_generator_tables_match_plain_multiplication(gen_mul, group_cls, compiled, rng) -> None:
    scalars = [*SCALARS, *(rng.randrange(R) for _ in range(10))]
    with pytest.MonkeyPatch.context() as mp:
        if not compiled:
            mp.setattr(_relic, "pairing_ext", None)
        got = gen_mul(scalars)
        assert gen_mul([]) == []
    with group.LOCK:
        g = group_cls.generator()
        assert got == [g ** (s % R) for s in scalars]


def test_generator_tables_across_curves(rng: random.Random) -> None:
    a, b = rng.randrange(R), rng.randrange(R)
    [pa] = group.g1_gen_mul([a])
    [qb] = group.g2_gen_mul([b])
    assert group.pair([pa], [qb]) == _gt(a * b)


@pytest.mark.parametrize("count", [3, 20], ids=["wnaf", "comb-table"])
@pytest.mark.parametrize(
    ("mul", "gen_mul"),
    [(group.g1_mul, group.g1_gen_mul), (group.g2_mul, group.g2_gen_mul)],
    ids=["g1", "g2"],
)
def test_point_times_many_scalars(mul, gen_mul, count, rng) -> None:
    [point] = gen_mul([rng.randrange(R)])
    scalars = [*SCALARS, *(rng.randrange(R) for _ in range(count))][-count:]
    scalars[0] = -3
    with group.LOCK:
        expected = [point ** (s % R) for s in scalars]
    assert mul(point, scalars) == expected


@pytest.mark.parametrize(
    ("msm", "gen_mul", "neutral"),
    [
        (group.g1_msm, group.g1_gen_mul, G1.neutral_element),
        (group.g2_msm, group.g2_gen_mul, G2.neutral_element),
    ],
    ids=["g1", "g2"],
)
@pytest.mark.parametrize("kind", ["ternary", "small", "mixed", "full"])
def test_msm_matches_naive_sum(msm, gen_mul, neutral, kind, rng) -> None:
    n = 40
    scalars = {
        "ternary": [rng.choice([-1, 0, 1]) for _ in range(n)],
        "small": [rng.randrange(-group.SMALL_MSM, group.SMALL_MSM + 1) for _ in range(n)],
        "mixed": _mixed(rng, n),
        "full": [rng.randrange(R) for _ in range(n)],
    }[kind]
    points = gen_mul([rng.randrange(R) for _ in range(n)])
    with group.LOCK:
        expected = neutral()
        for p, s in zip(points, scalars, strict=True):
            expected = expected * p ** (s % R)
    assert msm(points, scalars) == expected


def test_msm_edge_cases(rng: random.Random) -> None:
    with group.LOCK:
        assert group.g1_msm([], []) == G1.neutral_element()
        assert group.g2_msm([], []) == G2.neutral_element()
    points = group.g1_gen_mul([3, 5])
    assert group.g1_msm(points, [0, 0]) == group.g1_gen_mul([0])[0]
    assert group.g1_msm(points, [2, -1]) == group.g1_gen_mul([1])[0]
    assert group.g1_msm(points, [R + 2, -1 - R]) == group.g1_gen_mul([1])[0]


def test_msm_across_chunks(monkeypatch: pytest.MonkeyPatch, rng: random.Random) -> None:
    exps = [rng.randrange(R) for _ in range(10)]
    scalars = [rng.randrange(R) for _ in range(10)]
    expected = sum(e * s for e, s in zip(exps, scalars, strict=True))
    monkeypatch.setattr(group, "MSM_CHUNK", 3)
    assert group.g1_msm(group.g1_gen_mul(exps), scalars) == group.g1_gen_mul([expected])[0]
    assert group.g2_msm(group.g2_gen_mul(exps), scalars) == group.g2_gen_mul([expected])[0]


def test_msm_shape_and_type_guards() -> None:
    with pytest.raises(ShapeError) as info:
        group.g1_msm(group.g1_gen_mul([1, 2]), [1, 2, 3])
    assert (info.value.expected, info.value.actual) == (2, 3)
    with pytest.raises(ShapeError):
        group.g2_msm(group.g2_gen_mul([1]), [])
    with pytest.raises(TypeError, match="G1Element"):
        group.g1_msm(group.g2_gen_mul([1]), [1])


def test_neg() -> None:
    assert group.g1_neg(group.g1_gen_mul([5, 0])) == group.g1_gen_mul([-5, 0])


def test_pairing_product_small_multiples() -> None:
    """fe-test-cases §4: e(2,5)·e(3,7) / e(2,5) = gT^21."""
    g1s = group.g1_gen_mul([2, 3])
    g2s = group.g2_gen_mul([5, 7])
    both = group.pair(g1s, g2s)
    first = group.pair(g1s[:1], g2s[:1])
    with group.LOCK:
        assert both / first == group.gt_generator() ** 21


def test_multi_pairing_matches_single_pairings(rng: random.Random) -> None:
    g1s = group.g1_gen_mul([rng.randrange(R) for _ in range(6)]) + group.g1_gen_mul([0])
    g2s = group.g2_gen_mul([rng.randrange(R) for _ in range(5)]) + group.g2_gen_mul([0, 9])
    with group.LOCK:
        expected = GT.neutral_element()
        for a, b in zip(g1s, g2s, strict=True):
            expected = expected * a.pair(b)
    assert group.pair(g1s, g2s) == expected
    assert group.pair([], []) == group.gt_identity()


@pytest.mark.slow
def test_multi_pairing_across_chunk_boundary(rng: random.Random) -> None:
    n = group.PAIRING_CHUNK + 3
    a = [rng.randrange(1, 2**20) for _ in range(n)]
    b = [rng.randrange(1, 2**20) for _ in range(n)]
    got = group.pair(group.g1_gen_mul(a), group.g2_gen_mul(b))
    assert got == _gt(sum(x * y for x, y in zip(a, b, strict=True)))


def test_pair_length_mismatch() -> None:
    g1s = group.g1_gen_mul([1, 2])
    g2s = group.g2_gen_mul([1, 2, 3])
    with pytest.raises(ShapeError) as info:
        group.pair(g1s, g2s)
    assert (info.value.expected, info.value.actual) == (3, 2)
    with pytest.raises(ShapeError) as info:
        group.pair(g1s, group.prepare_g2(g2s))
    assert str(info.value) == "input has 2 entries where 3 are needed"
    with pytest.raises(TypeError, match="G2Element"):
        group.pair(g1s, g1s)


def _prepared_cases(rng: random.Random) -> tuple[list[G1Element], list[G2Element]]:
    g1s = group.g1_gen_mul([rng.randrange(R) for _ in range(7)] + [0])
    g2s = group.g2_gen_mul([rng.randrange(R) for _ in range(6)] + [0, rng.randrange(R)])
    return g1s, g2s


def test_prepared_pairing_identical_to_plain(rng: random.Random) -> None:
    assert _relic.pairing_ext is not None, "the compiled pairing module should load here"
    g1s, g2s = _prepared_cases(rng)
    prepared = group.prepare_g2(g2s)
    assert len(prepared) == len(g2s)
    assert prepared._lines is not None
    for _ in range(2):
        assert group.pair(g1s, prepared) == group.pair(g1s, g2s)
        g1s = group.g1_gen_mul([rng.randrange(R) for _ in g2s])
    assert group.pair([], group.prepare_g2([])) == group.gt_identity()
    # the raw bytes agree too, not only the comparison
    with group.LOCK:
        assert group.pair(g1s, prepared).to_binary(False) == group.pair(g1s, g2s).to_binary(False)


def test_prepared_pairing_fallback(monkeypatch: pytest.MonkeyPatch, rng: random.Random) -> None:
    g1s, g2s = _prepared_cases(rng)
    compiled = group.prepare_g2(g2s)
    monkeypatch.setattr(_relic, "pairing_ext", None)
    plain = group.prepare_g2(g2s)
    assert plain._lines is None
    assert group.pair(g1s, plain) == group.pair(g1s, g2s) == group.pair(g1s, compiled)


def test_compiled_module_missing() -> None:
    assert _relic.load_compiled("core.fe._no_such_module") is None


def test_compiled_module_guards() -> None:
    ext = _relic.pairing_ext
    assert ext is not None
    with group.LOCK:
        with pytest.raises(ValueError, match="whole number"):
            ext.prepare(b"\x00" * 7)
        lines, present = ext.prepare(bytes(_relic.G2_POINT_SIZE))
        assert present == b"\x00"
        with pytest.raises(ValueError, match="buffer sizes"):
            ext.pair(lines, present, b"", bytearray(_relic.ffi.sizeof("fp12_st")))
        with pytest.raises(ValueError, match="bad buffer sizes"):
            ext.baby_steps(b"\x00", bytearray(8))
        g1 = bytes(_relic.G1_POINT_SIZE)
        with pytest.raises(ValueError, match="kind"):
            ext.fixed_table(5, g1, 4)
        for window in (1, 13):
            with pytest.raises(ValueError, match="window"):
                ext.fixed_table(1, g1, window)
        with pytest.raises(ValueError, match="window"):
            ext.fixed_table(1, bytes(_relic.G2_POINT_SIZE), 4)
        for table in (
            b"",
            b"\x01\x04" + bytes(100),
            b"\x05\x04" + bytes(6),
            b"\x01\x0d" + bytes(6),
        ):
            with pytest.raises(ValueError, match="not a fixed-base table"):
                ext.fixed_mul(table, b"", bytearray())
        table = ext.fixed_table(1, g1, 4)
        with pytest.raises(ValueError, match="do not match"):
            ext.fixed_mul(table, bytes(32), bytearray(_relic.G1_POINT_SIZE + 1))
        with pytest.raises(ValueError, match="below 2\\^255"):
            ext.fixed_mul(table, bytes(31) + b"\x80", bytearray(_relic.G1_POINT_SIZE))
        with pytest.raises(ValueError, match="kind"):
            ext.normalize(0, bytearray())
        with pytest.raises(ValueError, match="whole number"):
            ext.normalize(1, bytearray(7))
        with pytest.raises(ValueError, match="do not match"):
            ext.column_sums(b"", b"", bytearray())
        with pytest.raises(ValueError, match="do not match"):
            ext.column_sums(g1, bytes(12), bytearray())
        with pytest.raises(ValueError, match="do not match"):
            ext.column_sums(g1, bytes(16), bytearray(_relic.G1_POINT_SIZE))
        with pytest.raises(OSError, match="cannot reach"):
            ext.init("/nonexistent/librelic.so")


# --- encodings -----------------------------------------------------------------------------


def _sqrt_exists(v: int) -> bool:
    return pow(v % P, (P - 1) // 2, P) in (0, 1)


def test_round_trips(rng: random.Random) -> None:
    for s in (1, 2, rng.randrange(R)):
        [p] = group.g1_gen_mul([s])
        [q] = group.g2_gen_mul([s])
        e = group.pair([p], [q])
        assert len(group.g1_to_bytes(p)) == group.G1_BYTES
        assert len(group.g2_to_bytes(q)) == group.G2_BYTES
        assert len(group.gt_to_bytes(e)) == group.GT_BYTES
        assert group.g1_from_bytes(group.g1_to_bytes(p)) == p
        assert group.g2_from_bytes(bytearray(group.g2_to_bytes(q))) == q
        assert group.gt_from_bytes(memoryview(group.gt_to_bytes(e))) == e
    for s in (0, 1, R - 1, R, -1):
        b = group.scalar_to_bytes(s)
        assert len(b) == group.SCALAR_BYTES
        assert group.scalar_from_bytes(b) == s % R


def test_identity_encodes_as_zero_bytes() -> None:
    [p0] = group.g1_gen_mul([0])
    [q0] = group.g2_gen_mul([0])
    assert group.g1_to_bytes(p0) == bytes(group.G1_BYTES)
    assert group.g2_to_bytes(q0) == bytes(group.G2_BYTES)
    assert group.gt_to_bytes(group.gt_identity()) == bytes(group.GT_BYTES)
    assert group.g1_from_bytes(bytes(group.G1_BYTES)) == p0
    assert group.g2_from_bytes(bytes(group.G2_BYTES)) == q0
    assert group.gt_from_bytes(bytes(group.GT_BYTES)) == group.gt_identity()


@pytest.mark.parametrize(
    ("decode", "size"),
    [
        (group.g1_from_bytes, group.G1_BYTES),
        (group.g2_from_bytes, group.G2_BYTES),
        (group.gt_from_bytes, group.GT_BYTES),
        (group.scalar_from_bytes, group.SCALAR_BYTES),
    ],
    ids=["g1", "g2", "gt", "scalar"],
)
def test_wrong_length_or_type(decode, size) -> None:
    for bad in (b"", bytes(size - 1), bytes(size + 1), b"\x02" * (size - 1)):
        with pytest.raises(EncodingError, match=f"must be {size} bytes"):
            decode(bad)
    with pytest.raises(EncodingError, match="must be bytes"):
        decode("00" * size)


def test_truncated_encoding_rejected() -> None:
    good = group.g1_to_bytes(group.g1_generator())
    with pytest.raises(EncodingError, match="49 bytes, got 48"):
        group.g1_from_bytes(good[:-1])


def test_bad_prefix_rejected() -> None:
    good = group.g1_to_bytes(group.g1_generator())
    for prefix in (0, 1, 4, 0xFF):
        with pytest.raises(EncodingError, match="prefix"):
            group.g1_from_bytes(bytes([prefix]) + good[1:])
    with pytest.raises(EncodingError, match="prefix"):
        group.g2_from_bytes(b"\x04" + group.g2_to_bytes(group.g2_generator())[1:])


def test_off_curve_rejected() -> None:
    x = 1
    while _sqrt_exists(x**3 + 4):
        x += 1
    with pytest.raises(EncodingError, match="not a point on the curve"):
        group.g1_from_bytes(b"\x02" + x.to_bytes(48, "big"))
    with pytest.raises(EncodingError, match="not a point on the curve"):
        group.g1_from_bytes(b"\x03" + P.to_bytes(48, "big"))  # x = p is not reduced
    k = 1  # x = (k, 0): x³ + 4(1 + u) is a square in Fp² iff its norm is a square in Fp
    while _sqrt_exists((k**3 + 4) ** 2 + 16):
        k += 1
    with pytest.raises(EncodingError, match="not a point on the curve"):
        group.g2_from_bytes(b"\x02" + k.to_bytes(48, "big") + bytes(48))


def test_off_subgroup_rejected() -> None:
    x = 1
    while not _sqrt_exists(x**3 + 4):
        x += 1
    with pytest.raises(EncodingError, match="prime-order subgroup"):
        group.g1_from_bytes(b"\x02" + x.to_bytes(48, "big"))
    k = 1
    while not _sqrt_exists((k**3 + 4) ** 2 + 16):
        k += 1
    with pytest.raises(EncodingError, match="prime-order subgroup"):
        group.g2_from_bytes(b"\x02" + k.to_bytes(48, "big") + bytes(48))


def _cyclotomic_outside_gt() -> bytes:
    """A compressible Fp12 element outside GT: (a small Fp12 element)^((p⁶−1)(p²+1))."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("void fp12_conv_cyc(void *c, void *a);")
    ffi.cdef("void fp12_read_bin(void *a, const uint8_t *b, int n);")
    lib = ffi.dlopen(_relic.LIBRELIC_PATH, ffi.RTLD_NOW | ffi.RTLD_NOLOAD)
    e = GTElement()
    with group.LOCK:
        lib.fp12_read_bin(e.pt, b"".join((k + 2).to_bytes(48, "big") for k in range(12)), 576)
        lib.fp12_conv_cyc(e.pt, e.pt)
        return e.to_binary()


def test_gt_bad_encodings_rejected() -> None:
    good = group.gt_to_bytes(_gt(12345))
    with pytest.raises(EncodingError, match="not a valid compressed Fp12"):
        group.gt_from_bytes(b"\xff" * group.GT_BYTES)
    flipped = bytearray(good)
    flipped[100] ^= 1
    with pytest.raises(EncodingError, match="canonical form"):
        group.gt_from_bytes(bytes(flipped))
    with pytest.raises(EncodingError, match="prime-order subgroup"):
        group.gt_from_bytes(_cyclotomic_outside_gt())


def test_scalar_not_reduced_rejected() -> None:
    with pytest.raises(EncodingError, match="not reduced"):
        group.scalar_from_bytes(R.to_bytes(32, "big"))
