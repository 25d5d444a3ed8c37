"""Bishop–Jain–Kowalczyk function-hiding inner-product encryption (ASIACRYPT 2015).

Weakly function hiding under SXDH. Ciphertexts live in G1 and keys in G2, 2n+6 elements each.
The decryption base e(C₀, K₀) depends on both the key's and the ciphertext's randomness, so
`decrypt` takes bounds and searches the range afresh for every pair (no reusable table).
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

NAME = "bjk"


def _size(n: int) -> int:
    return 2 * n + 4


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """Dual bases B, B* = (B⁻¹)ᵀ of dimension 2n+4 and D, D* of dimension 2."""

    n: int
    b: Matrix
    b_star: Matrix
    d: Matrix
    d_star: Matrix

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    TABLES = ("packed_b", "packed_b_star")
    LAYOUT = (
        (encoding.SCALAR, encoding.matrix(_size, _size)),
        (encoding.SCALAR, encoding.matrix(_size, _size)),
        (encoding.SCALAR, encoding.matrix(lambda n: 2, lambda n: 2)),
        (encoding.SCALAR, encoding.matrix(lambda n: 2, lambda n: 2)),
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
    """K₀ = [(β, β̃)·D]₂ and K = [k·B]₂."""

    n: int
    k0: tuple[G2Element, ...]
    k: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = (
        (encoding.G2, encoding.vector(lambda n: 2)),
        (encoding.G2, encoding.vector(_size)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """C₀ = [(α, α̃)·D*]₁ and C = [c·B*]₁."""

    n: int
    c0: tuple[G1Element, ...]
    c: tuple[G1Element, ...]

    SCHEME = NAME
    KIND = encoding.CIPHERTEXT
    LAYOUT = (
        (encoding.G1, encoding.vector(lambda n: 2)),
        (encoding.G1, encoding.vector(_size)),
    )


@dataclass(frozen=True, eq=False)
class PreparedKey(PreparedKeyBase):
    """A key with the pairing lines of all its G2 points precomputed; encodes as its key.

    The prepared parts carry the key's field names, so decryption reads either form alike.
    """

    key: Key
    k0: group.PreparedG2 = field(repr=False)
    k: group.PreparedG2 = field(repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> PreparedKey:
        return prepare(Key.from_bytes(data))


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> MasterKey:
    """Draw the dual bases; O(n³) for the (2n+4)-dimensional inversion."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        b, b_star, _ = grp.zr.random_dual_basis(_size(n), rng)
        d, d_star, _ = grp.zr.random_dual_basis(2, rng)
        return encoding.identified(MasterKey(n, b, b_star, d, d_star, curve=grp.name))


def keygen(msk: MasterKey, y: Sequence[int], rng: random.Random | None = None) -> Key:
    """k = (β·y ‖ β̃·y ‖ 0, β, 0, β̃); the key is [(β, β̃)·D]₂ and [k·B]₂."""
    grp = group.curve(msk.curve)
    ys = linalg.inputs(y, msk.n)
    with LOCK:
        beta, beta_t = grp.zr.random_scalar(rng), grp.zr.random_scalar(rng)
        k = _combine(msk.packed_b, msk.b, ys, (beta, 2 * msk.n + 1), (beta_t, 2 * msk.n + 3))
        points = grp.g2_gen_mul(grp.zr.vec_mat([beta, beta_t], msk.d) + k)
        return Key(
            msk.n, tuple(points[:2]), tuple(points[2:]), curve=grp.name, master_id=msk.master_id
        )


def encrypt(msk: MasterKey, x: Sequence[int], rng: random.Random | None = None) -> Ciphertext:
    """c = (α·x ‖ α̃·x ‖ α, 0, α̃, 0); the ciphertext is [(α, α̃)·D*]₁ and [c·B*]₁."""
    grp = group.curve(msk.curve)
    xs = linalg.inputs(x, msk.n)
    with LOCK:
        alpha, alpha_t = grp.zr.random_scalar(rng), grp.zr.random_scalar(rng)
        c = _combine(
            msk.packed_b_star, msk.b_star, xs, (alpha, 2 * msk.n), (alpha_t, 2 * msk.n + 2)
        )
        points = grp.g1_gen_mul(grp.zr.vec_mat([alpha, alpha_t], msk.d_star) + c)
        return Ciphertext(
            msk.n, tuple(points[:2]), tuple(points[2:]), curve=grp.name, master_id=msk.master_id
        )


def _combine(
    packed: linalg.PackedMatrix,
    m: Matrix,
    v: list[int],
    first: tuple[int, int],
    second: tuple[int, int],
) -> list[int]:
    """(a·v ‖ b·v ‖ tail)·M, where the tail holds a at row i and b at row j, computed as
    a·(v·M_top + Mᵢ) + b·(v·M_mid + Mⱼ): v's small entries meet M before the full-size a, b."""
    (a, i), (b, j) = first, second
    zr = linalg.Zr(packed.order)
    n = len(v)
    top = packed.vec_mul([*v, *([0] * (n + 4))])
    mid = packed.vec_mul([*([0] * n), *v, 0, 0, 0, 0])
    return zr.add(zr.scale(zr.add(top, m[i]), a), zr.scale(zr.add(mid, m[j]), b))


def prepare(sk: Key) -> PreparedKey:
    """Precompute the pairing lines of every key point, for keys used many times."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2(sk.k0), grp.prepare_g2(sk.k))


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
        base = grp.pair(ct.c0, sk.k0)
        return group.dlog(base, grp.pair(ct.c, sk.k), lo, hi)
