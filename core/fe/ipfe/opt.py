"""Ojaswi et al. function-hiding inner-product encryption (IACR CiC 2025).

Fully function hiding (simulation secure in the generic group model). Ciphertexts live in G1
and keys in G2, n+4 elements each: the shortest of the six schemes with a fixed decryption
base gT. x and y are one-time masked by vectors from the row space of a random 2×n matrix A;
a 4-dimensional dual-basis part carries exactly the cross terms that remove the masks.
Setup is O(n), with no large inversion.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from petrelic.multiplicative.pairing import G1Element, G2Element, GTElement

from core.fe import encoding, group, linalg
from core.fe.group import LOCK
from core.fe.linalg import Matrix
from core.fe.prepared import PreparedKeyBase

NAME = "opt"


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """A ∈ Z_r^{2×n} (no rank condition), B and B* = (B⁻¹)ᵀ of dimension 4."""

    n: int
    a: Matrix
    b: Matrix
    b_star: Matrix

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    LAYOUT = (
        (encoding.SCALAR, encoding.matrix(encoding.fixed(2), encoding.dimension)),
        (encoding.SCALAR, encoding.matrix(encoding.fixed(4), encoding.fixed(4))),
        (encoding.SCALAR, encoding.matrix(encoding.fixed(4), encoding.fixed(4))),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Key(encoding.Encoded):
    """K_r = [B·(σ ‖ A·ỹ)]₂ and K = [ỹ]₂ with ỹ = σ·A + y."""

    n: int
    kr: tuple[G2Element, ...]
    k: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = (
        (encoding.G2, encoding.vector(encoding.fixed(4))),
        (encoding.G2, encoding.vector(encoding.dimension)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """C_r = [B*·(A·x ‖ σ')]₁ and C = [x̃]₁ with x̃ = σ'·A + x."""

    n: int
    cr: tuple[G1Element, ...]
    c: tuple[G1Element, ...]

    SCHEME = NAME
    KIND = encoding.CIPHERTEXT
    LAYOUT = (
        (encoding.G1, encoding.vector(encoding.fixed(4))),
        (encoding.G1, encoding.vector(encoding.dimension)),
    )


@dataclass(frozen=True, eq=False)
class PreparedKey(PreparedKeyBase):
    """A key prepared as the joined list K ‖ K_r, the order decryption pairs it in."""

    key: Key
    lines: group.PreparedG2 = field(repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> PreparedKey:
        return prepare(Key.from_bytes(data))


def base(curve: str = group.DEFAULT_CURVE) -> GTElement:
    """The decryption base gT, over which to build the `DlogTable`."""
    return group.curve(curve).gt_generator()


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> MasterKey:
    """Draw A and the 4-dimensional dual bases; O(n)."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        a = (tuple(grp.zr.random_vector(n, rng)), tuple(grp.zr.random_vector(n, rng)))
        b, b_inv, _ = grp.zr.random_invertible(4, rng)
        return encoding.identified(MasterKey(n, a, b, linalg.transpose(b_inv), curve=grp.name))


def keygen(msk: MasterKey, y: Sequence[int], rng: random.Random | None = None) -> Key:
    """Mask y with σ·A for a fresh σ ∈ Z_r²."""
    grp = group.curve(msk.curve)
    ys = linalg.inputs(y, msk.n)
    with LOCK:
        sigma = grp.zr.random_vector(2, rng)
        y_masked = grp.zr.add(grp.zr.vec_mat(sigma, msk.a), ys)
        kr = grp.zr.mat_vec(msk.b, sigma + grp.zr.mat_vec(msk.a, y_masked))
        points = grp.g2_gen_mul(kr + y_masked)
        return Key(
            msk.n, tuple(points[:4]), tuple(points[4:]), curve=grp.name, master_id=msk.master_id
        )


def encrypt(msk: MasterKey, x: Sequence[int], rng: random.Random | None = None) -> Ciphertext:
    """Mask x with σ'·A for a fresh σ' ∈ Z_r²."""
    grp = group.curve(msk.curve)
    xs = linalg.inputs(x, msk.n)
    with LOCK:
        sigma = grp.zr.random_vector(2, rng)
        x_masked = grp.zr.add(grp.zr.vec_mat(sigma, msk.a), xs)
        cr = grp.zr.mat_vec(msk.b_star, grp.zr.mat_vec(msk.a, xs) + sigma)
        points = grp.g1_gen_mul(cr + x_masked)
        return Ciphertext(
            msk.n, tuple(points[:4]), tuple(points[4:]), curve=grp.name, master_id=msk.master_id
        )


def prepare(sk: Key) -> PreparedKey:
    """Precompute the pairing lines of K ‖ K_r, for keys used many times."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2(sk.k + sk.kr))


def decrypt(table: group.DlogTable, sk: Key | PreparedKey, ct: Ciphertext) -> int | None:
    """⟨x, y⟩ from e(C, K)·e(C_r, K_r)⁻¹ = gT^⟨x,y⟩, one multi-pairing over (C ‖ −C_r)."""
    if not isinstance(sk, Key | PreparedKey) or not isinstance(ct, Ciphertext):
        raise TypeError(f"{NAME}.decrypt takes a {NAME} key and a {NAME} ciphertext")
    grp = group.same_curve(sk, ct)
    linalg.same_dimension(sk.n, ct.n)
    encoding.same_master(sk, ct)
    with LOCK:
        g2s = sk.lines if isinstance(sk, PreparedKey) else sk.k + sk.kr
        return table.find(grp.pair(ct.c + tuple(grp.g1_neg(ct.cr)), g2s))
