"""Ed25519 (RFC 8032, pure: the message itself is signed) through OpenSSL by way of
`cryptography`.

OpenSSL's verification refuses a non-canonical S (S >= L) and a public key that does not
decode, which is what Wycheproof's ed25519 vectors ask. Secrets are the 32-byte seed.
"""

import os

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from core.errors import InvalidKeyError

KEY_BYTES = 32
SIGNATURE_BYTES = 64


def _private(secret: bytes) -> Ed25519PrivateKey:
    if len(secret) != KEY_BYTES:
        raise InvalidKeyError(f"ed25519 secret key must be {KEY_BYTES} bytes")
    return Ed25519PrivateKey.from_private_bytes(bytes(secret))


def generate_keypair() -> tuple[bytes, bytes]:
    """A fresh (seed, public key) pair."""
    secret = os.urandom(KEY_BYTES)
    return secret, public_key(secret)


def public_key(secret: bytes) -> bytes:
    return _private(secret).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def sign(secret: bytes, message: bytes) -> bytes:
    return _private(secret).sign(bytes(message))


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
