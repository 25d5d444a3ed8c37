"""The secp256k1 operations of ECIES, as direct libsecp256k1 calls through coincurve's binding.

coincurve's key objects validate, copy and wrap on every step, and `PrivateKey.multiply`, the
only public way to multiply two scalars, also derives two public keys. On a 1 KiB encryption
that wrapping cost more than the AES-GCM and HKDF together, so the few calls ECIES needs are
made here on libsecp256k1's own `secp256k1_pubkey` structures. Every operation on secrets is
libsecp256k1's constant-time one.
"""

from typing import Any

from coincurve._libsecp256k1 import ffi, lib
from coincurve.context import GLOBAL_CONTEXT
from coincurve.flags import EC_COMPRESSED, EC_UNCOMPRESSED

from core.errors import InvalidKeyError

Point = Any  # a cffi `secp256k1_pubkey *`

CONTEXT = GLOBAL_CONTEXT.ctx


def parse(encoded: bytes) -> Point:
    """A SEC1 point (02/03 compressed or 04 uncompressed) or raw 64-byte X || Y.

    The SEC1 'hybrid' forms 06/07 are refused: they would give a second encoding of a point.
    """
    if len(encoded) == 64:
        encoded = b"\x04" + encoded
    if not (
        (len(encoded) == 33 and encoded[0] in (2, 3)) or (len(encoded) == 65 and encoded[0] == 4)
    ):
        raise InvalidKeyError(
            "secp256k1 public key must be 33 bytes (02/03), 65 bytes (04) or 64 bytes (X || Y)"
        )
    point = ffi.new("secp256k1_pubkey *")
    if not lib.secp256k1_ec_pubkey_parse(CONTEXT, point, encoded, len(encoded)):
        raise InvalidKeyError("secp256k1 public key is not a point on the curve")
    return point


def base_multiple(scalar: bytes) -> Point:
    """scalar·G for a secret key, from libsecp256k1's precomputed table of G: about half the
    time of a multiplication of an arbitrary point (docs/performance/choices.md)."""
    point = ffi.new("secp256k1_pubkey *")
    if not lib.secp256k1_ec_pubkey_create(CONTEXT, point, scalar):
        raise InvalidKeyError("secp256k1 secret key must be in [1, n-1]")
    return point


def multiply(point: Point, scalar: bytes) -> Point:
    """scalar·point for a secret key; never the point at infinity, as n is prime."""
    product = ffi.new("secp256k1_pubkey *", point[0])
    if not lib.secp256k1_ec_pubkey_tweak_mul(CONTEXT, product, scalar):
        raise InvalidKeyError("secp256k1 secret key must be in [1, n-1]")
    return product


def scalar_product(a: bytes, b: bytes) -> bytes:
    """a·b mod n for two secret keys: with it the shared point k·(s·G) of an encryption to a
    key whose secret s is at hand is the generator multiple (k·s)·G."""
    product = ffi.new("unsigned char[32]", a)
    if not lib.secp256k1_ec_seckey_tweak_mul(CONTEXT, product, b):
        raise InvalidKeyError("secp256k1 secret key must be in [1, n-1]")
    return bytes(ffi.buffer(product, 32))


def encode(point: Point, compressed: bool) -> bytes:
    """SEC1 encoding: 33 bytes compressed, 65 uncompressed."""
    length = 33 if compressed else 65
    out = ffi.new("unsigned char[65]")
    size = ffi.new("size_t *", length)
    flags = EC_COMPRESSED if compressed else EC_UNCOMPRESSED
    lib.secp256k1_ec_pubkey_serialize(CONTEXT, out, size, point, flags)
    return bytes(ffi.buffer(out, length))
