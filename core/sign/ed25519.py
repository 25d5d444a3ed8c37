"""Ed25519 (RFC 8032, pure: the message itself is signed). Secrets are the 32-byte seed.

Signing is libsodium's (through PyNaCl's bindings): from the seed it derives the expanded key
and the public key in one call, which costs less than OpenSSL's `from_private_bytes`
(bench/README.md), and signatures are deterministic, so either library gives the same bytes.
A `SigningKey` derives them once, so that a key held in memory signs without deriving them
again (the derivation is about half of a signature's time). The public key it signs with is
derived from the seed, never taken from storage: Ed25519 signing with a public key that does
not belong to the seed leaks the seed.

Verification is OpenSSL's, by way of `cryptography`: it refuses a non-canonical S (S >= L) and a
public key that does not decode, which is what Wycheproof's ed25519 vectors ask.
"""

import os

import nacl.bindings
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from core.errors import InvalidKeyError

KEY_BYTES = 32
SIGNATURE_BYTES = 64


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


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public`'s signature of `message`; False for a malformed key or
    signature."""
    if len(public) != KEY_BYTES or len(signature) != SIGNATURE_BYTES:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(bytes(public)).verify(bytes(signature), bytes(message))
    except (InvalidSignature, ValueError):
        return False
    return True
