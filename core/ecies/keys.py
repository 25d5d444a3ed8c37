"""Keys and the key agreement of each curve: parsing, generation, public parts, ECDH + HKDF.

Secret keys are 32 bytes on every curve: a scalar in [1, n-1] for secp256k1, any 32 bytes for
x25519 (clamped by X25519 itself) and an Ed25519 seed for ed25519. Error messages name what was
wrong with a key and never include its bytes.

ed25519 point arithmetic uses libsodium through PyNaCl (`crypto_scalarmult_ed25519_noclamp`,
`crypto_core_ed25519_is_valid_point`): constant-time, and its point check is the one wanted
here (canonical encoding, not of small order, in the prime-order subgroup). secp256k1 is
libsecp256k1 (`core.ecies.secp256k1`); X25519 is OpenSSL through `cryptography`.
"""

import hashlib
import os
import re

import nacl.bindings
import nacl.exceptions
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from core.ecies import secp256k1
from core.ecies.config import CURVES
from core.errors import InvalidKeyError

KeyInput = bytes | bytearray | memoryview | str

SECRET_KEY_LENGTH = 32
_HEX = re.compile(r"[0-9a-fA-F]*")
_P25519 = 2**255 - 19
_SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
# HMAC-SHA256 pads (RFC 2104): a 32-byte key XOR 0x36 / 0x5c, then 32 bytes of the pad itself.
_XOR_IPAD = bytes(b ^ 0x36 for b in range(256))
_XOR_OPAD = bytes(b ^ 0x5C for b in range(256))
_IPAD_TAIL = b"\x36" * 32
_OPAD_TAIL = b"\x5c" * 32
_ZERO_KEY_INNER = hashlib.sha256(b"\x36" * 64)
_ZERO_KEY_OUTER = hashlib.sha256(b"\x5c" * 64)


def key_bytes(key: KeyInput, what: str) -> bytes:
    """Bytes of a key given as bytes-like or as hex (optional `0x`, any case)."""
    if isinstance(key, str):
        text = key[2:] if key[:2] in ("0x", "0X") else key
        if len(text) % 2 or not _HEX.fullmatch(text):
            raise InvalidKeyError(f"{what} is not valid hex")
        return bytes.fromhex(text)
    if isinstance(key, bytes | bytearray | memoryview):
        return bytes(key)
    raise InvalidKeyError(f"{what} must be bytes or a hex string, not {type(key).__name__}")


def check_curve(curve: str) -> None:
    if curve not in CURVES:
        raise ValueError(f"curve must be one of {', '.join(CURVES)}")


def hkdf_sha256(ikm: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) with empty salt and info, 32 bytes of output.

    That is PRK = HMAC(0^32, ikm), OKM = HMAC(PRK, 0x01), written out as the four SHA-256
    hashes of RFC 2104 with the zero key's inner and outer states computed once:
    `hmac.digest` sets up OpenSSL's HMAC afresh on each call, which costs twice as much for the
    two (docs/performance/choices.md).
    """
    inner = _ZERO_KEY_INNER.copy()
    inner.update(ikm)
    outer = _ZERO_KEY_OUTER.copy()
    outer.update(inner.digest())
    prk = outer.digest()
    inner_okm = hashlib.sha256(prk.translate(_XOR_IPAD) + _IPAD_TAIL + b"\x01").digest()
    return hashlib.sha256(prk.translate(_XOR_OPAD) + _OPAD_TAIL + inner_okm).digest()


# secp256k1 -----------------------------------------------------------------------------------


def secp256k1_secret(secret: bytes) -> bytes:
    if len(secret) != SECRET_KEY_LENGTH:
        raise InvalidKeyError(f"secp256k1 secret key must be 32 bytes, got {len(secret)}")
    if not 0 < int.from_bytes(secret, "big") < _SECP256K1_N:
        raise InvalidKeyError("secp256k1 secret key must be in [1, n-1]")
    return secret


def secp256k1_kdf(
    sender: secp256k1.Point, written: bytes, shared: secp256k1.Point, compressed: bool
) -> bytes:
    """HKDF(sender || shared), both points in the same SEC1 form.

    `written` is the sender's key as the payload carries it, taken as it is when it already has
    that form: libsecp256k1 parses only canonical encodings, so it is the one `encode` gives.
    """
    if len(written) != (33 if compressed else 65):
        written = secp256k1.encode(sender, compressed)
    return hkdf_sha256(written + secp256k1.encode(shared, compressed))


# x25519 --------------------------------------------------------------------------------------


def x25519_point(encoded: bytes) -> X25519PublicKey:
    """A canonical X25519 public key: 32 bytes, u < p, bit 255 clear.

    X25519 itself ignores bit 255 and reduces u mod p, so other encodings are aliases of a
    canonical one; they are refused to keep payloads non-malleable.
    """
    if len(encoded) != 32:
        raise InvalidKeyError(f"x25519 public key must be 32 bytes, got {len(encoded)}")
    if int.from_bytes(encoded, "little") >= _P25519:
        raise InvalidKeyError("x25519 public key is not canonical (u >= p or bit 255 set)")
    return X25519PublicKey.from_public_bytes(encoded)


def x25519_shared(secret: bytes, point: X25519PublicKey, sender: bytes) -> bytes:
    try:
        shared = X25519PrivateKey.from_private_bytes(secret).exchange(point)
    except ValueError:
        raise InvalidKeyError("x25519 public key is a low-order point") from None
    return hkdf_sha256(sender + shared)


# ed25519 -------------------------------------------------------------------------------------


def ed25519_scalar(seed: bytes) -> bytes:
    """The Ed25519 secret scalar of a seed: SHA-512(seed)[0:32], clamped (RFC 8032)."""
    scalar = bytearray(hashlib.sha512(seed).digest()[:32])
    scalar[0] &= 248
    scalar[31] &= 127
    scalar[31] |= 64
    return bytes(scalar)


def ed25519_point(encoded: bytes) -> bytes:
    """A canonical point of the prime-order subgroup, not of small order (libsodium's check)."""
    if len(encoded) != 32:
        raise InvalidKeyError(f"ed25519 public key must be 32 bytes, got {len(encoded)}")
    if not nacl.bindings.crypto_core_ed25519_is_valid_point(encoded):
        raise InvalidKeyError(
            "ed25519 public key is not a canonical point of the prime-order subgroup"
        )
    return encoded


def ed25519_shared(seed: bytes, point: bytes, sender: bytes) -> bytes:
    try:
        shared = nacl.bindings.crypto_scalarmult_ed25519_noclamp(ed25519_scalar(seed), point)
    except nacl.exceptions.RuntimeError:
        raise InvalidKeyError("ed25519 key agreement gave the identity point") from None
    return hkdf_sha256(sender + shared)


# public API ----------------------------------------------------------------------------------


def secret_key(secret: KeyInput, curve: str) -> bytes:
    """Validated 32 secret-key bytes for `curve`."""
    check_curve(curve)
    raw = key_bytes(secret, f"{curve} secret key")
    if curve == "secp256k1":
        secp256k1_secret(raw)
    elif len(raw) != SECRET_KEY_LENGTH:
        raise InvalidKeyError(f"{curve} secret key must be 32 bytes, got {len(raw)}")
    return raw


def public_key(secret: KeyInput, curve: str = "secp256k1", compressed: bool = False) -> bytes:
    """The public key of `secret`: SEC1 (65 bytes, or 33 if `compressed`) for secp256k1,
    32 bytes for x25519 and ed25519 (`compressed` is ignored there)."""
    raw = secret_key(secret, curve)
    if curve == "secp256k1":
        return secp256k1.encode(secp256k1.base_multiple(raw), compressed)
    if curve == "x25519":
        return X25519PrivateKey.from_private_bytes(raw).public_key().public_bytes_raw()
    return nacl.bindings.crypto_scalarmult_ed25519_base_noclamp(ed25519_scalar(raw))


def random_secret(curve: str) -> bytes:
    """Fresh secret-key bytes from the operating system's CSPRNG (for secp256k1, redrawn until
    in [1, n-1]; a redraw has probability below 2^-127)."""
    while True:
        secret = os.urandom(SECRET_KEY_LENGTH)
        if curve != "secp256k1" or 0 < int.from_bytes(secret, "big") < _SECP256K1_N:
            return secret


def generate_keypair(curve: str = "secp256k1") -> tuple[bytes, bytes]:
    """A fresh (secret, public) pair; the secp256k1 public key is the 65-byte SEC1 form."""
    check_curve(curve)
    secret = random_secret(curve)
    return secret, public_key(secret, curve)
