"""Lin's inner-product encryption (CRYPTO 2017), lifted from weak to full function hiding.

SXDH. The weak scheme runs at dimension 2n on zero-padded vectors (x ‖ 0ⁿ), (y ‖ 0ⁿ): the
padding only serves the security hybrids. Ciphertexts live in G1 and keys in G2, 2n+2 elements
each. An inner ElGamal-like layer (secret s) hides x and an outer layer (secret t) re-randomises
the key; they cancel in the pairing, which lands on the fixed base gT.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from petrelic.multiplicative.pairing import G1Element, G2Element, GTElement

from core.fe import encoding, group, linalg
from core.fe.group import LOCK
from core.fe.prepared import PreparedKeyBase

NAME = "lin"


def _size(n: int) -> int:
    return 2 * n + 2


@dataclass(frozen=True, eq=False, repr=False)
class MasterKey(encoding.Encoded):
    """s ∈ Z_r^{2n} and t ∈ Z_r^{2n+1}."""

    n: int
    s: tuple[int, ...]
    t: tuple[int, ...]

    SCHEME = NAME
    KIND = encoding.MASTER_KEY
    LAYOUT = (
        (encoding.SCALAR, encoding.vector(lambda n: 2 * n)),
        (encoding.SCALAR, encoding.vector(lambda n: 2 * n + 1)),
    )


@dataclass(frozen=True, eq=False, repr=False)
class Key(encoding.Encoded):
    """[(−ρ) ‖ (ρ·t + u)]₂ with u = (⟨ŷ, s⟩ ‖ ŷ)."""

    n: int
    k: tuple[G2Element, ...]

    SCHEME = NAME
    KIND = encoding.KEY
    LAYOUT = ((encoding.G2, encoding.vector(_size)),)


@dataclass(frozen=True, eq=False, repr=False)
class Ciphertext(encoding.Encoded):
    """[⟨t, v⟩ ‖ v]₁ with v = (−ρ') ‖ (ρ'·s + x̂)."""

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
    """Draw the two secret vectors; O(n)."""
    n = linalg.check_dimension(n)
    grp = group.curve(curve)
    with LOCK:
        s = grp.zr.random_vector(2 * n, rng)
        t = grp.zr.random_vector(2 * n + 1, rng)
        return encoding.identified(MasterKey(n, tuple(s), tuple(t), curve=grp.name))


def keygen(msk: MasterKey, y: Sequence[int], rng: random.Random | None = None) -> Key:
    """The weak key of ŷ = (y ‖ 0ⁿ) under a fresh ρ."""
    grp = group.curve(msk.curve)
    ys = linalg.inputs(y, msk.n)
    with LOCK:
        y_hat = ys + [0] * msk.n
        u = [grp.zr.dot(y_hat, msk.s), *y_hat]
        rho = grp.zr.random_scalar(rng)
        k = [-rho % grp.order, *grp.zr.add(grp.zr.scale(msk.t, rho), u)]
        return Key(msk.n, tuple(grp.g2_gen_mul(k)), curve=grp.name, master_id=msk.master_id)


def encrypt(msk: MasterKey, x: Sequence[int], rng: random.Random | None = None) -> Ciphertext:
    """The weak ciphertext of x̂ = (x ‖ 0ⁿ) under a fresh ρ'."""
    grp = group.curve(msk.curve)
    xs = linalg.inputs(x, msk.n)
    with LOCK:
        x_hat = xs + [0] * msk.n
        rho = grp.zr.random_scalar(rng)
        v = [-rho % grp.order, *grp.zr.add(grp.zr.scale(msk.s, rho), x_hat)]
        return Ciphertext(
            msk.n,
            tuple(grp.g1_gen_mul([grp.zr.dot(msk.t, v), *v])),
            curve=grp.name,
            master_id=msk.master_id,
        )


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
