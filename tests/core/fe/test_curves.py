"""The group interface `group.curve(name)` on both curves, and what happens when curves mix.

The BLS12-381 backend is the module-level functions tested in depth by test_group*.py; here
every operation runs on both backends against plain algebraic identities, plus BN254's
encoding checks and the errors of a key of one curve meeting a ciphertext of the other.
"""

from __future__ import annotations

import random
from copy import copy

import pytest

from core.errors import EncodingError, ShapeError
from core.fe import group
from core.fe.group import BLS12_381, BN254, CURVES, DlogTable
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

# Sizes (G1, G2, GT) of each curve's encodings; BN254's r from mcl (CurveFp254BNb).
SIZES = {BLS12_381: (49, 97, 384), BN254: (32, 64, 384)}
BN254_R = 16798108731015832284940804142231733909759579603404752749028378864165570215949


@pytest.fixture(params=CURVES)
def c(request: pytest.FixtureRequest) -> group.Curve:
    return group.curve(request.param)


def test_lookup_and_constants() -> None:
    assert group.DEFAULT_CURVE == BLS12_381
    assert group.curve(BN254).order == BN254_R
    assert group.curve(BLS12_381).order == group.ORDER
    assert repr(group.curve(BN254)) == "Curve('bn254')"
    for bad in ("bls12-377", "BN254", None, 3):
        with pytest.raises(ValueError, match="unknown curve"):
            group.curve(bad)  # type: ignore[arg-type]
    for name, (g1, g2, gt) in SIZES.items():
        cv = group.curve(name)
        assert (cv.g1_bytes, cv.g2_bytes, cv.gt_bytes, cv.scalar_bytes) == (g1, g2, gt, 32)


def test_group_laws(c: group.Curve, rng: random.Random) -> None:
    a, b = c.zr.random_scalar(rng), c.zr.random_scalar(rng)
    for gen_mul, mul, encode in (
        (c.g1_gen_mul, c.g1_mul, c.g1_to_bytes),
        (c.g2_gen_mul, c.g2_mul, c.g2_to_bytes),
    ):
        pa, pb, pab, one, zero = gen_mul([a, b, a + b, 1, 0])
        # The identity is compared by its encoding: RELIC's comparison of a projective
        # identity (z = 0) against another point is not reliable.
        identity = bytes(len(encode(pa)))
        assert encode(zero) == encode(pa * pa.inverse()) == encode(gen_mul([c.order])[0])
        assert encode(zero) == identity != encode(pa)
        assert pa * pb == pab
        assert one**a == pa
        assert gen_mul([-a])[0] == pa.inverse()
        assert mul(one, [a, b, -3]) == [pa, pb, gen_mul([-3])[0]]
        assert copy(pa) == pa
    assert c.g1_neg(c.g1_gen_mul([5])) == c.g1_gen_mul([-5])


@pytest.mark.parametrize("kind", ["small", "full"])
def test_msm_matches_naive_sum(c: group.Curve, kind: str, rng: random.Random) -> None:
    points = c.g1_gen_mul([rng.randrange(1, 1000) for _ in range(12)])
    bound = 16 if kind == "small" else c.order
    scalars = [rng.randrange(-bound, bound) for _ in points]
    naive = c.g1_gen_mul([0])[0]
    for p, s in zip(points, scalars, strict=True):
        naive = naive * c.g1_mul(p, [s])[0]
    assert c.g1_msm(points, scalars) == naive
    assert c.g1_to_bytes(c.g1_msm([], [])) == bytes(c.g1_bytes)
    with pytest.raises(ShapeError):
        c.g1_msm(points, scalars[:-1])


def test_pairing_bilinear_and_prepared(c: group.Curve, rng: random.Random) -> None:
    a, b, d = (c.zr.random_scalar(rng) for _ in range(3))
    g1s = c.g1_gen_mul([a, b])
    g2s = c.g2_gen_mul([b, d])
    gt = c.gt_generator()
    want = gt ** (a * b + b * d)
    assert c.pair(g1s, g2s) == want
    prepared = c.prepare_g2(g2s)
    assert len(prepared) == 2
    assert c.pair(g1s, prepared) == want
    assert c.pair([], []) == c.gt_identity()
    assert gt**c.order == c.gt_identity() != gt
    assert gt * gt.inverse() == c.gt_identity()
    assert c.pair([c.g1_gen_mul([0])[0]], c.g2_gen_mul([1])) == c.gt_identity()
    with pytest.raises(ShapeError):
        c.pair(g1s, g2s[:1])


def test_round_trips_and_identity(c: group.Curve, rng: random.Random) -> None:
    s = c.zr.random_scalar(rng)
    p1, z1 = c.g1_gen_mul([s, 0])
    p2, z2 = c.g2_gen_mul([s, 0])
    e = c.gt_generator() ** s
    assert len(c.g1_to_bytes(p1)) == c.g1_bytes
    assert c.g1_vector_from_bytes(c.g1_to_bytes(p1) + c.g1_to_bytes(z1), 2) == [p1, z1]
    assert c.g2_vector_from_bytes(b"xx" + c.g2_to_bytes(p2), 1, offset=2) == [p2]
    assert c.g1_to_bytes(z1) == bytes(c.g1_bytes)
    assert c.g2_to_bytes(z2) == bytes(c.g2_bytes)
    assert c.gt_from_bytes(c.gt_to_bytes(e)) == e
    assert c.scalar_from_bytes(c.scalar_to_bytes(-s)) == (-s) % c.order
    with pytest.raises(EncodingError, match="not reduced"):
        c.scalar_from_bytes(c.order.to_bytes(32, "big"))


def test_bad_encodings_rejected(c: group.Curve) -> None:
    with pytest.raises(EncodingError, match="must be bytes"):
        c.g1_vector_from_bytes("00", 1)  # type: ignore[arg-type]
    with pytest.raises(EncodingError, match="need"):
        c.g1_vector_from_bytes(bytes(c.g1_bytes), 2)
    with pytest.raises(ValueError, match="negative"):
        c.g2_vector_from_bytes(bytes(c.g2_bytes), -1)
    with pytest.raises(EncodingError, match=f"must be {c.gt_bytes} bytes"):
        c.gt_from_bytes(bytes(c.gt_bytes - 1))


def test_bn254_point_checks(bad_points: dict[str, dict[str, bytes]]) -> None:
    c = group.curve(BN254)
    bad = bad_points[BN254]
    with pytest.raises(EncodingError, match="G1 element 1 is not a canonical encoding"):
        c.g1_vector_from_bytes(c.g1_to_bytes(c.g1_gen_mul([1])[0]) + bad["g1 off curve"], 2)
    with pytest.raises(EncodingError, match="G2 element is not in the prime-order subgroup"):
        c.g2_vector_from_bytes(bad["g2 off subgroup"], 1)
    two = (2).to_bytes(32, "little")  # 2 + 0·w…: in Fp12, but of order dividing p − 1, not r
    with pytest.raises(EncodingError, match="GT element is not in the prime-order subgroup"):
        c.gt_from_bytes(two + bytes(352))
    p = 0x2523648240000001BA344D80000000086121000000000013A700000000000013
    gt = c.gt_to_bytes(c.gt_generator())
    unreduced = (int.from_bytes(gt[:32], "little") + p).to_bytes(32, "little") + gt[32:]
    with pytest.raises(EncodingError, match="not a canonical Fp12 encoding"):
        c.gt_from_bytes(unreduced)


def test_elements_of_the_other_curve_are_type_errors() -> None:
    bls, bn = group.curve(BLS12_381), group.curve(BN254)
    p_bls, p_bn = bls.g1_gen_mul([3])[0], bn.g1_gen_mul([3])[0]
    q_bn = bn.g2_gen_mul([3])[0]
    for call in (
        lambda: bn.pair([p_bls], [q_bn]),
        lambda: bn.pair([p_bn], [p_bn]),
        lambda: bn.g1_msm([p_bls], [1]),
        lambda: bn.g1_mul(p_bls, [2]),
        lambda: bn.g1_neg([q_bn]),
        lambda: bn.prepare_g2([p_bn]),
        lambda: bn.g1_to_bytes(q_bn),
        lambda: bls.pair([p_bn], [bls.g2_gen_mul([1])[0]]),
        lambda: p_bn * q_bn,
    ):
        with pytest.raises(TypeError):
            call()
    assert p_bn != p_bls
    assert (p_bn == 3) is False


def test_dlog_tables_per_curve(c: group.Curve) -> None:
    gt = c.gt_generator()
    table = DlogTable(gt, -500, 500)
    assert table.curve == c.name
    for v in (-500, -37, 0, 1, 499):
        assert table.find(gt**v) == v
    assert table.find(gt**501) is None
    assert group.dlog(gt**3, gt**-36, -20, 20) == -12
    other = group.curve(BN254 if c.name == BLS12_381 else BLS12_381)
    with pytest.raises(TypeError, match=f"this table is for {c.name}"):
        table.find(other.gt_generator())
    with pytest.raises(TypeError, match="built over a GT element"):
        DlogTable(c.g1_gen_mul([1])[0], 0, 10)


IP_MODULES = (bjk, tao, kim, lin, kks, opt)
PER_PAIR = (bjk, kim)


@pytest.mark.parametrize("module", IP_MODULES, ids=lambda m: m.NAME)
def test_ip_key_and_ciphertext_of_other_curves(module: object, rng: random.Random) -> None:
    """A key of one curve and a ciphertext of the other: a clear ValueError, never a number."""
    m: object = module
    msks = {name: m.setup(2, rng, curve=name) for name in CURVES}  # type: ignore[attr-defined]
    sk = m.keygen(msks[BLS12_381], [1, 2], rng)  # type: ignore[attr-defined]
    ct = m.encrypt(msks[BN254], [3, 4], rng)  # type: ignore[attr-defined]
    assert (sk.curve, ct.curve) == (BLS12_381, BN254)
    for key in (sk, m.prepare(sk)):  # type: ignore[attr-defined]
        with pytest.raises(ValueError, match="key is for bls12-381 and the ciphertext for bn254"):
            if m in PER_PAIR:
                m.decrypt(key, ct, -100, 100)  # type: ignore[attr-defined]
            else:
                base = msks[BLS12_381].base if m is tao else m.base(BLS12_381)  # type: ignore[attr-defined]
                m.decrypt(DlogTable(base, -100, 100), key, ct)  # type: ignore[attr-defined]
    if m not in PER_PAIR:
        bn_sk = m.keygen(msks[BN254], [1, 2], rng)  # type: ignore[attr-defined]
        base = msks[BLS12_381].base if m is tao else m.base(BLS12_381)  # type: ignore[attr-defined]
        with pytest.raises(TypeError, match="this table is for bls12-381"):
            m.decrypt(DlogTable(base, -100, 100), bn_sk, ct)  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", (bcfg, sgp), ids=lambda m: m.NAME)
def test_q_key_and_ciphertext_of_other_curves(module: object, rng: random.Random) -> None:
    m: object = module
    (_, msk), (pk, _) = (m.setup(2, rng, curve=name) for name in CURVES)  # type: ignore[attr-defined]
    sk = m.keygen(msk, [[1, 0], [0, 1]]) if m is sgp else m.keygen(msk, [[1, 0], [0, 1]], rng)  # type: ignore[attr-defined]
    ct = m.encrypt(pk, [1, 2], [3, 4], rng)  # type: ignore[attr-defined]
    table = DlogTable(m.base(BLS12_381), -100, 100)  # type: ignore[attr-defined]
    for key in (sk, m.prepare(sk)):  # type: ignore[attr-defined]
        with pytest.raises(ValueError, match="key is for bls12-381 and the ciphertext for bn254"):
            m.decrypt(table, key, ct)  # type: ignore[attr-defined]
