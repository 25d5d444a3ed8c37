"""Dufour-Sans–Gay–Pointcheval quadratic functional encryption ("Reading in the Dark", 2018).

Public key, secure in the generic group model. A key for an n×n matrix F decrypts a ciphertext
of (x, y) to xᵀFy; the key carries F in the clear. Ciphertexts hold 2n+1 G1 and 2n G2 elements,
keys one G2 element. Two independent vectors and no bias coordinate, as in RustPFE. Key
generation is deterministic. Fixed decryption base gT.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from petrelic.multiplicative.pairing import G1Element, G2Element, GTElement

from core.fe import encoding, group, linalg
from core.fe.group import LOCK
from core.fe.linalg import Matrix
from core.fe.prepared import PreparedKeyBase

NAME = "sgp"


@dataclass(frozen=True, eq=False, repr=False)
class PublicKey(encoding.Encoded):
    """[s]₁ and [t]₂."""

    n: int
    s: tuple[G1Element, ...]
    t: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.PUBLIC_KEY
    TABLES = ("bases",)
    LAYOUT = (
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
    )

    @cached_property
    def bases(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Fixed-base tables of [s]₁ and [t]₂, which every encryption multiplies by fresh
        scalars; built on first use, not encoded."""
        grp = group.curve(self.curve)
        return tuple(map(grp.fixed_base, self.s)), tuple(map(grp.fixed_base, self.t))


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """s, t ∈ Z_rⁿ."""

    n: int
    s: tuple[int, ...]
    t: tuple[int, ...]

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    LAYOUT = (
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Key(encoding.Encoded):
    """F (signed 64-bit entries) and [sᵀFt]₂."""

    n: int
    f: Matrix
    k: G2Element

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = (
        (encoding.I64, encoding.matrix(encoding.dimension, encoding.dimension)),
        (encoding.G2, encoding.one),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """[γ]₁, a₀, a₁ (G1) and b₀, b₁ (G2): (x, γs) and (y, −t) mixed by a fresh W."""

    n: int
    g: G1Element
    a0: tuple[G1Element, ...]
    a1: tuple[G1Element, ...]
    b0: tuple[G2Element, ...]
    b1: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.CIPHERTEXT
    LAYOUT = (
        (encoding.G1, encoding.one),
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
    )


@dataclass(frozen=True, eq=False)
class PreparedKey(PreparedKeyBase):
    """A key with the lines of its single G2 point precomputed; encodes as its key.

    Only one point can be prepared, so this gives no real speed-up; it exists so that every
    scheme offers the same verbs.
    """

    key: Key
    k: group.PreparedG2 = field(repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> PreparedKey:
        return prepare(Key.from_bytes(data))


def base(curve: str = group.DEFAULT_CURVE) -> GTElement:
    """The decryption base gT, over which to build the `DlogTable`."""
    return group.curve(curve).gt_generator()


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> tuple[PublicKey, MasterKey]:
    """Draw s, t; the public key is their images in G1 and G2."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        s, t = grp.zr.random_vector(n, rng), grp.zr.random_vector(n, rng)
        msk = encoding.identified(MasterKey(n, tuple(s), tuple(t), curve=grp.name))
    return public_key(msk), msk


def public_key(msk: MasterKey) -> PublicKey:
    """The public key of a master key: the images of s in G1 and t in G2."""
    grp = group.curve(msk.curve)
    with LOCK:
        images = (tuple(grp.g1_gen_mul(msk.s)), tuple(grp.g2_gen_mul(msk.t)))
    return PublicKey(msk.n, *images, curve=grp.name, master_id=msk.master_id)


def keygen(msk: MasterKey, f: Sequence[Sequence[int]]) -> Key:
    """[sᵀFt]₂; deterministic, no randomness."""
    grp = group.curve(msk.curve)
    fm, ft = linalg.function_products(f, msk.n, msk.t)
    with LOCK:
        value = grp.zr.dot(msk.s, ft)
        point = grp.g2_gen_mul([value])[0]
        return Key(msk.n, fm, point, curve=grp.name, master_id=msk.master_id)


def encrypt(
    pk: PublicKey, x: Sequence[int], y: Sequence[int], rng: random.Random | None = None
) -> Ciphertext:
    """a_k,i = [W*_k0·xᵢ + γ·W*_k1·sᵢ]₁ and b_k,j = [W_k0·yⱼ − W_k1·tⱼ]₂, W fresh per call."""
    grp = group.curve(pk.curve)
    xs = linalg.inputs(x, pk.n)
    ys = linalg.inputs(y, pk.n)
    order = grp.order
    with LOCK:
        gamma = grp.zr.random_scalar(rng)
        w, w_inv, _ = grp.zr.random_invertible(2, rng)
        w_star = linalg.transpose(w_inv)
        n = pk.n
        s_bases, t_bases = pk.bases
        masks = [base.mul([gamma * w_star[0][1], gamma * w_star[1][1]]) for base in s_bases]
        plain = grp.g1_gen_mul(
            [gamma] + [w_star[0][0] * v for v in xs] + [w_star[1][0] * v for v in xs]
        )
        a0 = tuple(m[0] * p for m, p in zip(masks, plain[1 : n + 1], strict=True))
        a1 = tuple(m[1] * p for m, p in zip(masks, plain[n + 1 :], strict=True))
        masks2 = [base.mul([-w[0][1] % order, -w[1][1] % order]) for base in t_bases]
        plain2 = grp.g2_gen_mul([w[0][0] * v for v in ys] + [w[1][0] * v for v in ys])
        b0 = tuple(m[0] * p for m, p in zip(masks2, plain2[:n], strict=True))
        b1 = tuple(m[1] * p for m, p in zip(masks2, plain2[n:], strict=True))
        return Ciphertext(n, plain[0], a0, a1, b0, b1, curve=grp.name, master_id=pk.master_id)


def prepare(sk: Key) -> PreparedKey:
    """Precompute the lines of the key's G2 point."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2([sk.k]))


def decrypt(table: group.DlogTable, sk: Key | PreparedKey, ct: Ciphertext) -> int | None:
    """xᵀFy from e([γ]₁, [sᵀFt]₂)·E(a₀, F, b₀)·E(a₁, F, b₁) = gT^{xᵀFy}."""
    if not isinstance(sk, Key | PreparedKey) or not isinstance(ct, Ciphertext):
        raise TypeError(f"{NAME}.decrypt takes a {NAME} key and a {NAME} ciphertext")
    grp = group.same_curve(sk, ct)
    linalg.same_dimension(sk.n, ct.n)
    encoding.same_master(sk, ct)
    key = sk.key if isinstance(sk, PreparedKey) else sk
    with LOCK:
        g1s = grp.g1_columns(ct.a0, key.f) + grp.g1_columns(ct.a1, key.f)
        g2s = ct.b0 + ct.b1
        if isinstance(sk, PreparedKey):
            value = grp.pair(g1s, g2s) * grp.pair([ct.g], sk.k)
        else:
            value = grp.pair([ct.g, *g1s], (key.k, *g2s))
        return table.find(value)
