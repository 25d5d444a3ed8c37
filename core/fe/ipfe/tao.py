"""Tomida–Abe–Okamoto function-hiding inner-product encryption (ISC 2016).

Fully function hiding under XDLIN. Ciphertexts live in G1 and keys in G2, 2n+5 elements each.
B* = ρ·(B⁻¹)ᵀ, so decryption lands on the fixed base gT^ρ = `msk.base`: one `DlogTable` over
that base serves every key and ciphertext of the master key. The base reveals nothing useful
about ρ and may be given to decryptors.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from petrelic.multiplicative.pairing import G1Element, G2Element, GTElement

from core.fe import encoding, group, linalg
from core.fe.group import LOCK
from core.fe.linalg import Matrix
from core.fe.prepared import PreparedKeyBase

NAME = "tao"


def _size(n: int) -> int:
    return 2 * n + 5


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """Dual bases with B·B*ᵀ = ρ·I, and the decryption base gT^ρ."""

    n: int
    b: Matrix
    b_star: Matrix
    base: GTElement

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    TABLES = ("packed_b", "packed_b_star")
    LAYOUT = (
        (encoding.SCALAR, encoding.matrix(_size, _size)),
        (encoding.SCALAR, encoding.matrix(_size, _size)),
        (encoding.GT, encoding.one),
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
    """K = [k·B]₂ with k = (y ‖ 0ⁿ⁺² ‖ σ₁, σ₂, 0)."""

    n: int
    k: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = ((encoding.G2, encoding.vector(_size)),)


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """C = [c·B*]₁ with c = (x ‖ 0ⁿ ‖ τ₁, τ₂, 0, 0, 0)."""

    n: int
    c: tuple[G1Element, ...]

    SCHEME = NAME
    KIND = encoding.CIPHERTEXT
    LAYOUT = ((encoding.G1, encoding.vector(_size)),)


@dataclass(frozen=True, eq=False)
class PreparedKey(PreparedKeyBase):
    """A key with its pairing lines precomputed; encodes as its key."""

    key: Key
    k: group.PreparedG2 = field(repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> PreparedKey:
        return prepare(Key.from_bytes(data))


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> MasterKey:
    """Draw ρ and the (2n+5)-dimensional dual bases; O(n³) for the inversion."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        rho = grp.zr.random_scalar(rng)
        b, b_star, _ = grp.zr.random_dual_basis(_size(n), rng, rho)
        return encoding.identified(
            MasterKey(n, b, b_star, grp.gt_generator() ** rho, curve=grp.name)
        )


def keygen(msk: MasterKey, y: Sequence[int], rng: random.Random | None = None) -> Key:
    """[k·B]₂; the random entries sit where every ciphertext vector is zero."""
    grp = group.curve(msk.curve)
    ys = linalg.inputs(y, msk.n)
    with LOCK:
        sigma1, sigma2 = grp.zr.random_scalar(rng), grp.zr.random_scalar(rng)
        k = [*ys, *([0] * (msk.n + 2)), sigma1, sigma2, 0]
        return Key(
            msk.n,
            tuple(grp.g2_gen_mul(msk.packed_b.vec_mul(k))),
            curve=grp.name,
            master_id=msk.master_id,
        )


def encrypt(msk: MasterKey, x: Sequence[int], rng: random.Random | None = None) -> Ciphertext:
    """[c·B*]₁; the random entries sit where every key vector is zero."""
    grp = group.curve(msk.curve)
    xs = linalg.inputs(x, msk.n)
    with LOCK:
        tau1, tau2 = grp.zr.random_scalar(rng), grp.zr.random_scalar(rng)
        c = [*xs, *([0] * msk.n), tau1, tau2, 0, 0, 0]
        return Ciphertext(
            msk.n,
            tuple(grp.g1_gen_mul(msk.packed_b_star.vec_mul(c))),
            curve=grp.name,
            master_id=msk.master_id,
        )


def prepare(sk: Key) -> PreparedKey:
    """Precompute the pairing lines of the key, for keys used many times."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2(sk.k))


def decrypt(table: group.DlogTable, sk: Key | PreparedKey, ct: Ciphertext) -> int | None:
    """⟨x, y⟩ by a lookup of e(C, K) = base^⟨x,y⟩ in a table built over `msk.base`."""
    if not isinstance(sk, Key | PreparedKey) or not isinstance(ct, Ciphertext):
        raise TypeError(f"{NAME}.decrypt takes a {NAME} key and a {NAME} ciphertext")
    grp = group.same_curve(sk, ct)
    linalg.same_dimension(sk.n, ct.n)
    encoding.same_master(sk, ct)
    with LOCK:
        return table.find(grp.pair(ct.c, sk.k))
