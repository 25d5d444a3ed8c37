"""Kim–Kim–Seo function-private inner-product encryption (TCS 2019).

Fully function hiding under SXDH, from a generalised Brakerski–Segev transformation.
Ciphertexts live in G1 and keys in G2, 2n+8 elements each: two halves of n+4. Only the first
halves contribute to decryption; the second halves (a ciphertext under the uniform ĥ, a key for
the zero vector) are the shadow slot of the security proof. Fixed decryption base gT.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from petrelic.multiplicative.pairing import G1Element, G2Element, GTElement

from core.fe import encoding, group, linalg
from core.fe.group import LOCK
from core.fe.prepared import PreparedKeyBase

NAME = "kks"


def _size(n: int) -> int:
    return 2 * n + 8


def _n2(n: int) -> int:
    return n + 2


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """η, η̄, s, t, u, v, and h = s + η·t, ĥ (uniform), h̄ = u + η̄·v."""

    n: int
    eta: int
    eta_bar: int
    s: tuple[int, ...]
    t: tuple[int, ...]
    u: tuple[int, ...]
    v: tuple[int, ...]
    h: tuple[int, ...]
    h_hat: tuple[int, ...]
    h_bar: tuple[int, ...]

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    LAYOUT = (
        (encoding.SCALAR, encoding.one),
        (encoding.SCALAR, encoding.one),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
        (encoding.SCALAR, encoding.vector(_n2)),
        (encoding.SCALAR, encoding.vector(_n2)),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
        (encoding.SCALAR, encoding.vector(encoding.dimension)),
        (encoding.SCALAR, encoding.vector(_n2)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Key(encoding.Encoded):
    """[KeyHalf(w) ‖ KeyHalf(0)]₂ with w = (−⟨s,y⟩, −⟨t,y⟩) ‖ y."""

    n: int
    k: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = ((encoding.G2, encoding.vector(_size)),)


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """[CtHalf(h, x) ‖ CtHalf(ĥ, x)]₁."""

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


def base(curve: str = group.DEFAULT_CURVE) -> GTElement:
    """The decryption base gT, over which to build the `DlogTable`."""
    return group.curve(curve).gt_generator()


def setup(
    n: int, rng: random.Random | None = None, *, curve: str = group.DEFAULT_CURVE
) -> MasterKey:
    """Draw the secrets; ĥ = a + η·b for fresh a, b that are then discarded. O(n)."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        eta, eta_bar = grp.zr.random_scalar(rng), grp.zr.random_scalar(rng)
        s, t = grp.zr.random_vector(n, rng), grp.zr.random_vector(n, rng)
        u, v = grp.zr.random_vector(n + 2, rng), grp.zr.random_vector(n + 2, rng)
        a, b = grp.zr.random_vector(n, rng), grp.zr.random_vector(n, rng)
        h = grp.zr.add(s, grp.zr.scale(t, eta))
        h_hat = grp.zr.add(a, grp.zr.scale(b, eta))
        h_bar = grp.zr.add(u, grp.zr.scale(v, eta_bar))
        vectors = (s, t, u, v, h, h_hat, h_bar)
        return encoding.identified(
            MasterKey(n, eta, eta_bar, *(tuple(w) for w in vectors), curve=grp.name)
        )


def _ct_half(
    msk: MasterKey, g: Sequence[int], x: list[int], rng: random.Random | None
) -> list[int]:
    grp = group.curve(msk.curve)
    rho = grp.zr.random_scalar(rng)
    c = [rho, msk.eta * rho % grp.order, *grp.zr.add(x, grp.zr.scale(g, rho))]
    return [-grp.zr.dot(msk.u, c) % grp.order, -grp.zr.dot(msk.v, c) % grp.order, *c]


def _key_half(msk: MasterKey, w: list[int], rng: random.Random | None) -> list[int]:
    grp = group.curve(msk.curve)
    rho = grp.zr.random_scalar(rng)
    return [rho, msk.eta_bar * rho % grp.order, *grp.zr.add(w, grp.zr.scale(msk.h_bar, rho))]


def keygen(msk: MasterKey, y: Sequence[int], rng: random.Random | None = None) -> Key:
    """Two key halves, each under its own ρ: one for w, one for the zero vector."""
    grp = group.curve(msk.curve)
    ys = linalg.inputs(y, msk.n)
    with LOCK:
        w = [-grp.zr.dot(msk.s, ys) % grp.order, -grp.zr.dot(msk.t, ys) % grp.order, *ys]
        k = _key_half(msk, w, rng) + _key_half(msk, [0] * (msk.n + 2), rng)
        return Key(msk.n, tuple(grp.g2_gen_mul(k)), curve=grp.name, master_id=msk.master_id)


def encrypt(msk: MasterKey, x: Sequence[int], rng: random.Random | None = None) -> Ciphertext:
    """Two ciphertext halves of x, under h and ĥ, each with its own ρ."""
    grp = group.curve(msk.curve)
    xs = linalg.inputs(x, msk.n)
    with LOCK:
        c = _ct_half(msk, msk.h, xs, rng) + _ct_half(msk, msk.h_hat, xs, rng)
        return Ciphertext(msk.n, tuple(grp.g1_gen_mul(c)), curve=grp.name, master_id=msk.master_id)


def prepare(sk: Key) -> PreparedKey:
    """Precompute the pairing lines of the key, for keys used many times."""
    grp = group.curve(sk.curve)
    with LOCK:
        return PreparedKey(sk, grp.prepare_g2(sk.k))


def decrypt(table: group.DlogTable, sk: Key | PreparedKey, ct: Ciphertext) -> int | None:
    """⟨x, y⟩ by a lookup of e(C, K) = gT^⟨x,y⟩ in a table built over `base()`."""
    if not isinstance(sk, Key | PreparedKey) or not isinstance(ct, Ciphertext):
        raise TypeError(f"{NAME}.decrypt takes a {NAME} key and a {NAME} ciphertext")
    grp = group.same_curve(sk, ct)
    linalg.same_dimension(sk.n, ct.n)
    encoding.same_master(sk, ct)
    with LOCK:
        return table.find(grp.pair(ct.c, sk.k))
