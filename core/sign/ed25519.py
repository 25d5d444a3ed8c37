"""Ed25519 (RFC 8032, pure: the message itself is signed). Secrets are the 32-byte seed.

Signing is libsodium's (through PyNaCl's bindings): from the seed it derives the expanded key
and the public key in one call, which costs less than OpenSSL's `from_private_bytes`
(docs/performance/history/2026-12-02.md, "Signatures"), and signatures are deterministic, so
either library gives the same bytes.
A derived key (`derive`) is Vault Transit's: the seed for a context is HKDF-SHA256 (RFC 5869)
of the 64 bytes seed ‖ public key, as Go keeps an Ed25519 private key, with no salt and the
context as info, 32 bytes long.
A `SigningKey` derives them once, so that a key held in memory signs without deriving them
again (the derivation is about half of a signature's time). The public key it signs with is
derived from the seed, never taken from storage: Ed25519 signing with a public key that does
not belong to the seed leaks the seed.

Verification is OpenSSL's, by way of `cryptography`, after the checks libsodium makes before
its own (`crypto_sign_verify_detached`): the public key A is canonically encoded (y < p), and
neither A nor R, the signature's first half, is one of the eight points of small order, in any
encoding. OpenSSL makes only the others (S < L, A decodes, R equals the encoding it computes):
with A and R the identity and S = 0 the verification equation holds for every message, so
anyone could "sign" anything for a key of their choosing; a small-order A makes a signature
valid for many messages. Wycheproof's ed25519 vectors give the same verdicts either way.
"""

import os

import nacl.bindings
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.errors import InvalidKeyError

KEY_BYTES = 32
SIGNATURE_BYTES = 64
_P = 2**255 - 19
_Y_BITS = (1 << 255) - 1  # an encoding without the sign bit of x: the y coordinate
# The y coordinates of the eight points of order 1, 2, 4 and 8 (1, p - 1, 0 and the two of the
# order-8 points), and the non-canonical p and p + 1 that also decode to 0 and 1: with the sign
# bit, every encoding of a small-order point (libsodium's `ge25519_has_small_order` list).
_SMALL_ORDER_Y = frozenset(
    {
        0,
        1,
        _P - 1,
        0x05FC536D880238B13933C6D305ACDFD5F098EFF289F4C345B027B2C28F95E826,
        0x7A03AC9277FDC74EC6CC392CFA53202A0F67100D760B3CBA4FD84D3D706A17C7,
        _P,
        _P + 1,
    }
)


def _keypair(secret: bytes) -> tuple[bytes, bytes]:
    """(public key, libsodium's 64-byte secret key) of a seed."""
    if len(secret) != KEY_BYTES:
        raise InvalidKeyError(f"ed25519 secret key must be {KEY_BYTES} bytes")
    public, expanded = nacl.bindings.crypto_sign_seed_keypair(bytes(secret))
    return public, expanded


def generate_keypair() -> tuple[bytes, bytes]:
    """A fresh (seed, public key) pair."""
    secret = os.urandom(KEY_BYTES)
    return secret, public_key(secret)


def public_key(secret: bytes) -> bytes:
    return _keypair(secret)[0]


class SigningKey:
    """A seed ready to sign: libsodium's expanded secret key and the public key, derived from
    the seed once."""

    __slots__ = ("_expanded", "public")

    def __init__(self, secret: bytes) -> None:
        self.public, self._expanded = _keypair(secret)

    def __repr__(self) -> str:
        return f"SigningKey(public={self.public.hex()})"

    def sign(self, message: bytes) -> bytes:
        signed: bytes = nacl.bindings.crypto_sign(bytes(message), self._expanded)
        return signed[:SIGNATURE_BYTES]


def derive(key: SigningKey, secret: bytes, context: bytes) -> SigningKey:
    """The signing key of `context` under the seed `secret` (`key` its signing key)."""
    seed = HKDF(hashes.SHA256(), KEY_BYTES, None, context).derive(secret + key.public)
    return SigningKey(seed)


def parse_public(given: bytes) -> bytes:
    """A public key as a caller gives it, for `verify`: the 32 bytes as they are, or a
    SubjectPublicKeyInfo in DER as its 32 bytes. Anything else comes back as it is, for
    `verify` to refuse."""
    if len(given) == KEY_BYTES:
        return given
    try:
        key = serialization.load_der_public_key(given)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return given
    return key.public_bytes_raw() if isinstance(key, Ed25519PublicKey) else given


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public`'s signature of `message`; False for a malformed key or
    signature."""
    if len(public) != KEY_BYTES or len(signature) != SIGNATURE_BYTES:
        return False
    a_y = int.from_bytes(public, "little") & _Y_BITS
    r_y = int.from_bytes(signature[:KEY_BYTES], "little") & _Y_BITS
    if a_y >= _P or a_y in _SMALL_ORDER_Y or r_y in _SMALL_ORDER_Y:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(bytes(public)).verify(bytes(signature), bytes(message))
    except (InvalidSignature, ValueError):
        return False
    return True
