"""Baltico–Catalano–Fiore–Gay quadratic functional encryption (CRYPTO 2017), as in RustPFE.

Public key, adaptively secure in the generic group model. A key for an n×n matrix F decrypts a
ciphertext of (x, y) to xᵀFy; the key carries F in the clear. Ciphertexts hold 2n G1 and 2n+2
G2 elements; keys n+2 G1 and n G2 elements (aF and Fb precomputed). Decryption costs 3n+2
pairings with the fixed base gT.
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

NAME = "bcfg"


@dataclass(frozen=True, eq=False, repr=False)
class PublicKey(encoding.Encoded):
    """[a]₁, [b]₂ and [w]₂."""

    n: int
    a: tuple[G1Element, ...]
    b: tuple[G2Element, ...]
    w: G2Element

    SCHEME = NAME
    KIND = encoding.PUBLIC_KEY
    TABLES = ("bases",)
    LAYOUT = (
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.one),
    )

    @cached_property
    def bases(self) -> tuple[tuple[Any, ...], tuple[Any, ...], Any]:
        """Fixed-base tables of [a]₁, [b]₂ and [w]₂, which every encryption multiplies by fresh
        scalars; built on first use, not encoded."""
        grp = group.curve(self.curve)
        return (
            tuple(map(grp.fixed_base, self.a)),
            tuple(map(grp.fixed_base, self.b)),
            grp.fixed_base(self.w),
        )


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """w ∈ Z_r and a, b ∈ Z_rⁿ."""

    n: int
    w: int
    a: tuple[int, ...]
    b: tuple[int, ...]

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    LAYOUT = (
        (encoding.SCALAR, encoding.one),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Key(encoding.Encoded):
    """F, s1 = [⟨a, Fb⟩ + γw]₁, s2 = [γ]₁, af = [aF]₁ and fb = [Fb]₂."""

    n: int
    f: Matrix
    s1: G1Element
    s2: G1Element
    af: tuple[G1Element, ...]
    fb: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = (
        (encoding.I64, encoding.matrix(encoding.dimension, encoding.dimension)),
        (encoding.G1, encoding.one),
        (encoding.G1, encoding.one),
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """c = [ρa + x]₁, ĉ = [τa + σx]₁, d = [σb + y]₂, d̂ = [ζb + ρy]₂, e = [λ]₂, ê = [λw]₂."""

    n: int
    c: tuple[G1Element, ...]
    c_hat: tuple[G1Element, ...]
    d: tuple[G2Element, ...]
    d_hat: tuple[G2Element, ...]
    e: G2Element
    e_hat: G2Element

    SCHEME = NAME
    KIND = encoding.CIPHERTEXT
    LAYOUT = (
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G1, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.vector(encoding.dimension)),
        (encoding.G2, encoding.one),
        (encoding.G2, encoding.one),
    )


@dataclass(frozen=True, eq=False)
class PreparedKey(PreparedKeyBase):
    """A key with the lines of its n G2 points (fb) precomputed; encodes as its key."""

    key: Key
    fb: group.PreparedG2 = field(repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> PreparedKey:
        return prepare(Key.from_bytes(data))


def base(curve: str = group.DEFAULT_CURVE) -> GTElement:
    """The decryption base gT, over which to build the `DlogTable`."""
    return group.curve(curve).gt_generator()


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> tuple[PublicKey, MasterKey]:
    """Draw w, a, b; the public key is their images."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        w = grp.zr.random_scalar(rng)
        a, b = grp.zr.random_vector(n, rng), grp.zr.random_vector(n, rng)
        msk = encoding.identified(MasterKey(n, w, tuple(a), tuple(b), curve=grp.name))
    return public_key(msk), msk


def public_key(msk: MasterKey) -> PublicKey:
    """The public key of a master key: the images of a in G1, and of b and w in G2."""
    grp = group.curve(msk.curve)
    n = msk.n
    with LOCK:
        g2s = grp.g2_gen_mul([*msk.b, msk.w])
        g1s = tuple(grp.g1_gen_mul(msk.a))
    return PublicKey(n, g1s, tuple(g2s[:n]), g2s[n], curve=grp.name, master_id=msk.master_id)


def keygen(msk: MasterKey, f: Sequence[Sequence[int]], rng: random.Random | None = None) -> Key:
    """F with [⟨a, Fb⟩ + γw]₁, [γ]₁, [aF]₁ and [Fb]₂ for a fresh γ."""
    grp = group.curve(msk.curve)
    fm, fb = linalg.function_products(f, msk.n, msk.b)
    _, af = linalg.function_products(linalg.transpose(fm), msk.n, msk.a)  # aF = Fᵀa
    with LOCK:
        gamma = grp.zr.random_scalar(rng)
        s1 = (grp.zr.dot(msk.a, fb) + gamma * msk.w) % grp.order
        g1s = grp.g1_gen_mul([s1, gamma, *af])
        g2s = tuple(grp.g2_gen_mul(fb))
        parts = (fm, g1s[0], g1s[1], tuple(g1s[2:]), g2s)
        return Key(msk.n, *parts, curve=grp.name, master_id=msk.master_id)


def encrypt(
    pk: PublicKey, x: Sequence[int], y: Sequence[int], rng: random.Random | None = None
) -> Ciphertext:
    """Everything from the public key, with ρ, σ, τ, ζ fresh and λ = ρσ − ζ − τ."""
    grp = group.curve(pk.curve)
    xs = linalg.inputs(x, pk.n)
    ys = linalg.inputs(y, pk.n)
    n = pk.n
    with LOCK:
        rho, sigma, tau, zeta = (grp.zr.random_scalar(rng) for _ in range(4))
        blind = (rho * sigma - zeta - tau) % grp.order
        a_bases, b_bases, w_base = pk.bases
        a_masks = [base.mul([rho, tau]) for base in a_bases]
        g1_plain = grp.g1_gen_mul(xs + [sigma * v for v in xs])
        c = tuple(m[0] * p for m, p in zip(a_masks, g1_plain[:n], strict=True))
        c_hat = tuple(m[1] * p for m, p in zip(a_masks, g1_plain[n:], strict=True))
        b_masks = [base.mul([sigma, zeta]) for base in b_bases]
        g2_plain = grp.g2_gen_mul(ys + [rho * v for v in ys] + [blind])
        d = tuple(m[0] * p for m, p in zip(b_masks, g2_plain[:n], strict=True))
        d_hat = tuple(m[1] * p for m, p in zip(b_masks, g2_plain[n : 2 * n], strict=True))
        e_hat = w_base.mul([blind])[0]
        parts = (c, c_hat, d, d_hat, g2_plain[2 * n], e_hat)
        return Ciphertext(n, *parts, curve=grp.name, master_id=pk.master_id)


def prepare(sk: Key) -> PreparedKey:
    """Precompute the lines of fb; the ciphertext's own G2 points cannot be prepared."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2(sk.fb))


def decrypt(table: group.DlogTable, sk: Key | PreparedKey, ct: Ciphertext) -> int | None:
    """xᵀFy from E(c, F, d)·e(af, d̂)⁻¹·e(ĉ, fb)⁻¹·e(s1, e)⁻¹·e(s2, ê) = gT^{xᵀFy}."""
    if not isinstance(sk, Key | PreparedKey) or not isinstance(ct, Ciphertext):
        raise TypeError(f"{NAME}.decrypt takes a {NAME} key and a {NAME} ciphertext")
    grp = group.same_curve(sk, ct)
    linalg.same_dimension(sk.n, ct.n)
    encoding.same_master(sk, ct)
    key = sk.key if isinstance(sk, PreparedKey) else sk
    with LOCK:
        g1s = [*grp.g1_columns(ct.c, key.f), *grp.g1_neg([*key.af, key.s1]), key.s2]
        g2s = [*ct.d, *ct.d_hat, ct.e, ct.e_hat]
        c_hat_neg = grp.g1_neg(ct.c_hat)
        if isinstance(sk, PreparedKey):
            value = grp.pair(g1s, g2s) * grp.pair(c_hat_neg, sk.fb)
        else:
            value = grp.pair(g1s + c_hat_neg, g2s + list(key.fb))
        return table.find(value)
