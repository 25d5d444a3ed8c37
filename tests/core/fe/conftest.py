"""One conformance suite for every FE scheme, through `core.fe.schemes`.

Its adapter offers setup/keygen/encrypt/prepare and a decryptor factory, as RustPFE's
`tests/common` does: fixed-base schemes build one `DlogTable` over their base and reuse it,
bjk and kim search the range on every decryption. Like RustPFE, every case runs on both curves.
"""

from __future__ import annotations

import random

import pytest

from core.fe.group import BLS12_381, BN254, CURVES
from core.fe.schemes import SCHEMES, Scheme

P = int(
    "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF"
    "6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
    16,
)
"""The BLS12-381 base-field prime, for building points outside the r-order subgroup."""
P_BN = int("2523648240000001BA344D80000000086121000000000013A700000000000013", 16)
"""mcl's BN254 base-field prime."""

IP_SCHEMES = [s.on(c) for c in CURVES for s in SCHEMES.values() if not s.quadratic]
Q_SCHEMES = [s.on(c) for c in CURVES for s in SCHEMES.values() if s.quadratic]


@pytest.fixture(params=IP_SCHEMES, ids=lambda s: s.id)
def ip(request: pytest.FixtureRequest) -> Scheme:
    return request.param


@pytest.fixture(params=Q_SCHEMES, ids=lambda s: s.id)
def qs(request: pytest.FixtureRequest) -> Scheme:
    return request.param


@pytest.fixture(params=IP_SCHEMES + Q_SCHEMES, ids=lambda s: s.id)
def any_scheme(request: pytest.FixtureRequest) -> Scheme:
    return request.param


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A deterministic RNG per test, seeded from the test's id."""
    return random.Random(request.node.nodeid)


def _sqrt_exists(v: int) -> bool:
    return pow(v % P, (P - 1) // 2, P) in (0, 1)


def _off_subgroup_g1() -> bytes:
    """Compressed bytes of a point on y² = x³ + 4 outside the r-order subgroup."""
    x = 1
    while not _sqrt_exists(x**3 + 4):
        x += 1
    y = pow(x**3 + 4, (P + 1) // 4, P)
    assert y * y % P == (x**3 + 4) % P
    return b"\x02" + x.to_bytes(48, "big")


def _off_curve_g1() -> bytes:
    """Compressed bytes of an x with no point on the curve."""
    x = 1
    while _sqrt_exists(x**3 + 4):
        x += 1
    return b"\x02" + x.to_bytes(48, "big")


def _off_subgroup_g2() -> bytes:
    """Compressed bytes of a point on y² = x³ + 4(1 + u) outside the r-order subgroup.

    With x = (k, 0), the right-hand side is (k³ + 4) + 4u, a square in Fp² exactly when its
    norm (k³ + 4)² + 16 is a square in Fp.
    """
    k = 1
    while not _sqrt_exists((k**3 + 4) ** 2 + 16):
        k += 1
    return b"\x02" + k.to_bytes(48, "big") + bytes(48)


def _bn_square(v: int) -> bool:
    return pow(v % P_BN, (P_BN - 1) // 2, P_BN) in (0, 1)


def _bn_off_curve_g1() -> bytes:
    """mcl's compressed bytes (x little-endian) of an x with no point on y² = x³ + 2."""
    x = 1
    while _bn_square(x**3 + 2):
        x += 1
    return x.to_bytes(32, "little")


def _bn_off_subgroup_g2() -> bytes:
    """A point on the twist y² = x³ + (1 − i) outside the r-order subgroup (cofactor 2p − r):
    x = (k, 0) with (k³ + 1) − i a square in Fp², i.e. (k³ + 1)² + 1 a square in Fp."""
    k = 1
    while not _bn_square((k**3 + 1) ** 2 + 1):
        k += 1
    return k.to_bytes(32, "little") + bytes(32)


@pytest.fixture(scope="session")
def bad_points() -> dict[str, dict[str, bytes]]:
    """Per curve, well-formed encodings of points that must be rejected, by what is wrong."""
    return {
        BLS12_381: {
            "g1 off subgroup": _off_subgroup_g1(),
            "g1 off curve": _off_curve_g1(),
            "g2 off subgroup": _off_subgroup_g2(),
        },
        BN254: {"g1 off curve": _bn_off_curve_g1(), "g2 off subgroup": _bn_off_subgroup_g2()},
    }
