"""Kim–Lewi–Mandal–Montgomery–Roy–Wu function-hiding inner-product encryption (SCN 2018).

Fully function hiding (simulation secure in the generic group model). Ciphertexts live in G1
and keys in G2, n+1 elements each. B* = det(B)·(B⁻¹)ᵀ, the transposed adjugate, is matched by
the key's K₀ = [α·det B]₂. The decryption base e(C₀, K₀) is per key/ciphertext pair, so
`decrypt` takes bounds and searches the range afresh.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from petrelic.multiplicative.pairing import G1Element, G2Element

from core.fe import encoding, group, linalg
from core.fe.group import LOCK
from core.fe.linalg import Matrix
from core.fe.prepared import PreparedKeyBase

NAME = "kim"


def _size(n: int) -> int:
    return n


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """det B, B and B* = det(B)·(B⁻¹)ᵀ, all n-dimensional."""

    n: int
    det: int
    b: Matrix
    b_star: Matrix

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    TABLES = ("packed_b", "packed_b_star")
    LAYOUT = (
        (encoding.SCALAR, encoding.one),
        (encoding.SCALAR, encoding.matrix(_size, _size)),
        (encoding.SCALAR, encoding.matrix(_size, _size)),
    )

    @cached_property
    def packed_b(self) -> linalg.PackedMatrix:
        """B packed for fast vector products; built on first use, not encoded."""
        return linalg.PackedMatrix(self.b, group.curve(self.curve).order)

    @cached_property
    def packed_b_star(self) -> linalg.PackedMatrix:
        """B* packed for fast vector products; built on first use, not encoded."""
        return linalg.PackedMatrix(self.b_star, group.curve(self.curve).order)


@dataclass(frozen=True, eq=False, repr=False)
class Key(encoding.Encoded):
    """K₀ = [α·det B]₂ and K = [α·(y·B)]₂."""

    n: int
    k0: G2Element
    k: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = ((encoding.G2, encoding.one), (encoding.G2, encoding.vector(_size)))


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """C₀ = [β]₁ and C = [β·(x·B*)]₁."""

    n: int
    c0: G1Element
    c: tuple[G1Element, ...]

    SCHEME = NAME
    KIND = encoding.CIPHERTEXT
    LAYOUT = ((encoding.G1, encoding.one), (encoding.G1, encoding.vector(_size)))


@dataclass(frozen=True, eq=False)
class PreparedKey(PreparedKeyBase):
    """A key with the pairing lines of all its G2 points precomputed; encodes as its key."""

    key: Key
    k0: group.PreparedG2 = field(repr=False)
    k: group.PreparedG2 = field(repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> PreparedKey:
        return prepare(Key.from_bytes(data))


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> MasterKey:
    """Draw B and its scaled dual; O(n³) for the inversion."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        b, b_star, det = grp.zr.random_dual_basis(n, rng, by_det=True)
        return encoding.identified(MasterKey(n, det, b, b_star, curve=grp.name))


def keygen(msk: MasterKey, y: Sequence[int], rng: random.Random | None = None) -> Key:
    """[α·det B]₂ and [α·(y·B)]₂ for a fresh α."""
    grp = group.curve(msk.curve)
    ys = linalg.inputs(y, msk.n)
    with LOCK:
        alpha = grp.zr.random_scalar(rng)
        points = grp.g2_gen_mul(
            [alpha * msk.det % grp.order, *grp.zr.scale(msk.packed_b.vec_mul(ys), alpha)]
        )
        return Key(msk.n, points[0], tuple(points[1:]), curve=grp.name, master_id=msk.master_id)


def encrypt(msk: MasterKey, x: Sequence[int], rng: random.Random | None = None) -> Ciphertext:
    """[β]₁ and [β·(x·B*)]₁ for a fresh β."""
    grp = group.curve(msk.curve)
    xs = linalg.inputs(x, msk.n)
    with LOCK:
        beta = grp.zr.random_scalar(rng)
        points = grp.g1_gen_mul([beta, *grp.zr.scale(msk.packed_b_star.vec_mul(xs), beta)])
        return Ciphertext(
            msk.n, points[0], tuple(points[1:]), curve=grp.name, master_id=msk.master_id
        )


def prepare(sk: Key) -> PreparedKey:
    """Precompute the pairing lines of every key point, for keys used many times."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2([sk.k0]), grp.prepare_g2(sk.k))


def decrypt(sk: Key | PreparedKey, ct: Ciphertext, lo: int, hi: int) -> int | None:
    """⟨x, y⟩ if it lies in [lo, hi], else None: e(C, K) = e(C₀, K₀)^⟨x,y⟩."""
    if not isinstance(sk, Key | PreparedKey) or not isinstance(ct, Ciphertext):
        raise TypeError(f"{NAME}.decrypt takes a {NAME} key and a {NAME} ciphertext")
    if lo > hi:
        raise ValueError("lo <= hi")
    grp = group.same_curve(sk, ct)
    linalg.same_dimension(sk.n, ct.n)
    encoding.same_master(sk, ct)
    with LOCK:
        k0 = sk.k0 if isinstance(sk, PreparedKey) else [sk.k0]
        base = grp.pair([ct.c0], k0)
        return group.dlog(base, grp.pair(ct.c, sk.k), lo, hi)
