"""Adapters that let one conformance suite run on every FE scheme.

Each adapter offers setup/keygen/encrypt/prepare and a decryptor factory, as in RustPFE's
`tests/common`: fixed-base schemes build one `DlogTable` over their base and reuse it,
bjk and kim search the range on every decryption. Like RustPFE, every case runs on both curves.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from core.fe.group import BLS12_381, BN254, CURVES, DlogTable
from core.fe.ipfe import bjk, kim, kks, lin, opt, tao
from core.fe.qfe import bcfg, sgp

P = int(
    "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF"
    "6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
    16,
)
"""The BLS12-381 base-field prime, for building points outside the r-order subgroup."""
P_BN = int("2523648240000001BA344D80000000086121000000000013A700000000000013", 16)
"""mcl's BN254 base-field prime."""

Decryptor = Callable[[Any, Any], "int | None"]


@dataclass(frozen=True)
class IpScheme:
    """One inner-product scheme behind the common verbs."""

    module: ModuleType
    curve: str = BLS12_381

    @property
    def name(self) -> str:
        return self.module.NAME

    @property
    def id(self) -> str:
        return f"{self.module.NAME}-{self.curve}"

    @property
    def per_pair_base(self) -> bool:
        return self.module in (bjk, kim)

    def setup(self, n: int, rng: random.Random) -> Any:
        return self.module.setup(n, rng, curve=self.curve)

    def keygen(self, msk: Any, y: Sequence[int], rng: random.Random) -> Any:
        return self.module.keygen(msk, y, rng)

    def encrypt(self, msk: Any, x: Sequence[int], rng: random.Random) -> Any:
        return self.module.encrypt(msk, x, rng)

    def prepare(self, sk: Any) -> Any:
        return self.module.prepare(sk)

    def table(self, msk: Any, lo: int, hi: int) -> DlogTable:
        base = msk.base if self.module is tao else self.module.base(self.curve)
        return DlogTable(base, lo, hi)

    def decryptor(self, msk: Any, lo: int, hi: int) -> Decryptor:
        if self.per_pair_base:
            return lambda sk, ct: self.module.decrypt(sk, ct, lo, hi)
        table = self.table(msk, lo, hi)
        return lambda sk, ct: self.module.decrypt(table, sk, ct)


@dataclass(frozen=True)
class QScheme:
    """One quadratic scheme behind the common verbs."""

    module: ModuleType
    curve: str = BLS12_381

    @property
    def name(self) -> str:
        return self.module.NAME

    @property
    def id(self) -> str:
        return f"{self.module.NAME}-{self.curve}"

    def setup(self, n: int, rng: random.Random) -> tuple[Any, Any]:
        return self.module.setup(n, rng, curve=self.curve)

    def keygen(self, msk: Any, f: Sequence[Sequence[int]], rng: random.Random) -> Any:
        if self.module is sgp:
            return sgp.keygen(msk, f)
        return self.module.keygen(msk, f, rng)

    def encrypt(self, pk: Any, x: Sequence[int], y: Sequence[int], rng: random.Random) -> Any:
        return self.module.encrypt(pk, x, y, rng)

    def prepare(self, sk: Any) -> Any:
        return self.module.prepare(sk)

    def decryptor(self, lo: int, hi: int) -> Decryptor:
        table = DlogTable(self.module.base(self.curve), lo, hi)
        return lambda sk, ct: self.module.decrypt(table, sk, ct)


IP_SCHEMES = [IpScheme(m, c) for c in CURVES for m in (bjk, tao, kim, lin, kks, opt)]
Q_SCHEMES = [QScheme(m, c) for c in CURVES for m in (bcfg, sgp)]


@pytest.fixture(params=IP_SCHEMES, ids=lambda s: s.id)
def ip(request: pytest.FixtureRequest) -> IpScheme:
    return request.param


@pytest.fixture(params=Q_SCHEMES, ids=lambda s: s.id)
def qs(request: pytest.FixtureRequest) -> QScheme:
    return request.param


@pytest.fixture(params=IP_SCHEMES + Q_SCHEMES, ids=lambda s: s.id)
def any_scheme(request: pytest.FixtureRequest) -> IpScheme | QScheme:
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
