"""ECDSA on secp256k1 through libsecp256k1 (coincurve's binding), as Ethereum and Bitcoin use it.

Signing uses libsecp256k1's RFC 6979 deterministic nonce and always gives a low S (s <= n/2).
Verification accepts a high S too: both are valid ECDSA signatures (Wycheproof's
ecdsa_secp256k1_sha256 vectors count them valid), so the S of a DER or compact signature is
normalised before libsecp256k1's verify, which by itself refuses high S.

Forms: DER (strict, as libsecp256k1 parses it), compact (r || s, 64 bytes) and recoverable
(r || s || v, 65 bytes, v the recovery id 0-3 as eth-keys reads it; 27-30 is taken too). The
message is hashed with SHA-256 or Keccak-256, or, `prehashed`, is itself the 32-byte digest.
"""

import hashlib
import os
from typing import Literal

from coincurve._libsecp256k1 import ffi, lib
from Crypto.Hash import keccak
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from core.ecies import secp256k1
from core.errors import EncodingError, InvalidKeyError

Hash = Literal["sha256", "keccak256"]
Format = Literal["der", "compact", "recoverable"]
HASHES: tuple[Hash, ...] = ("sha256", "keccak256")
FORMATS: tuple[Format, ...] = ("der", "compact", "recoverable")
DIGEST_BYTES = 32
MAX_DER_BYTES = 72
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_CONTEXT = secp256k1.CONTEXT


def keccak256(data: bytes) -> bytes:
    """Keccak-256 as Ethereum uses it (the original padding, not SHA3-256's)."""
    return keccak.new(data=data, digest_bits=256).digest()


def digest(message: bytes, hash: Hash = "sha256", prehashed: bool = False) -> bytes:
    """The 32 bytes that are signed: the message's hash, or the message itself when prehashed
    (EncodingError if it is not 32 bytes)."""
    if prehashed:
        if len(message) != DIGEST_BYTES:
            raise EncodingError(
                f"a prehashed message is a {DIGEST_BYTES}-byte digest, not {len(message)} bytes"
            )
        return bytes(message)
    if hash == "sha256":
        return hashlib.sha256(message).digest()
    if hash == "keccak256":
        return keccak256(message)
    raise EncodingError(f"hash must be one of {', '.join(HASHES)}, not {hash!r}")


def generate_keypair() -> tuple[bytes, bytes]:
    """A fresh (secret, SEC1 uncompressed public key) pair."""
    while True:
        secret = os.urandom(32)
        if 0 < int.from_bytes(secret) < _N:
            return secret, public_key(secret)


def public_key(secret: bytes) -> bytes:
    """The SEC1 uncompressed public key (65 bytes) of a secret scalar."""
    return secp256k1.encode(secp256k1.base_multiple(secret), compressed=False)


def parse_public(given: bytes) -> bytes:
    """A public key as a caller gives it, for `verify`: SEC1 (33 or 65 bytes, or 64, X ‖ Y) as
    it is, or a SubjectPublicKeyInfo in DER as SEC1 uncompressed. Anything else comes back as
    it is, for `verify` to refuse."""
    if len(given) in (33, 64, 65):
        return given
    try:
        key = serialization.load_der_public_key(given)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return given
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256k1":
        return given
    return key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )


def sign(
    secret: bytes,
    message: bytes,
    hash: Hash = "sha256",
    prehashed: bool = False,
    format: Format = "der",
) -> bytes:
    """The signature of `message` (RFC 6979 nonce, low S) in `format`."""
    if format not in FORMATS:
        raise EncodingError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if len(secret) != 32:
        raise InvalidKeyError("secp256k1 secret key must be 32 bytes")
    signed = digest(message, hash, prehashed)
    recoverable = ffi.new("secp256k1_ecdsa_recoverable_signature *")
    if not lib.secp256k1_ecdsa_sign_recoverable(
        _CONTEXT, recoverable, signed, secret, ffi.NULL, ffi.NULL
    ):
        raise InvalidKeyError("secp256k1 secret key must be in [1, n-1]")
    if format == "recoverable":
        out = ffi.new("unsigned char[64]")
        recid = ffi.new("int *")
        lib.secp256k1_ecdsa_recoverable_signature_serialize_compact(
            _CONTEXT, out, recid, recoverable
        )
        return bytes(ffi.buffer(out, 64)) + bytes([recid[0]])
    plain = ffi.new("secp256k1_ecdsa_signature *")
    lib.secp256k1_ecdsa_recoverable_signature_convert(_CONTEXT, plain, recoverable)
    if format == "compact":
        out = ffi.new("unsigned char[64]")
        lib.secp256k1_ecdsa_signature_serialize_compact(_CONTEXT, out, plain)
        return bytes(ffi.buffer(out, 64))
    out = ffi.new(f"unsigned char[{MAX_DER_BYTES}]")
    size = ffi.new("size_t *", MAX_DER_BYTES)
    lib.secp256k1_ecdsa_signature_serialize_der(_CONTEXT, out, size, plain)
    return bytes(ffi.buffer(out, size[0]))


def verify(
    public: bytes,
    message: bytes,
    signature: bytes,
    hash: Hash = "sha256",
    prehashed: bool = False,
    format: Format = "der",
) -> bool:
    """Whether `signature` (in `format`) is `public`'s signature of `message`. A malformed
    public key or signature is False; a malformed digest or option raises EncodingError."""
    if format not in FORMATS:
        raise EncodingError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    signed = digest(message, hash, prehashed)
    try:
        point = secp256k1.parse(bytes(public))
    except InvalidKeyError:
        return False
    if format == "recoverable":
        recovered = _recover(signed, signature)
        return recovered is not None and secp256k1.encode(
            recovered, compressed=True
        ) == secp256k1.encode(point, compressed=True)
    parsed = ffi.new("secp256k1_ecdsa_signature *")
    if format == "der":
        ok = lib.secp256k1_ecdsa_signature_parse_der(_CONTEXT, parsed, signature, len(signature))
    else:
        ok = len(signature) == 64 and lib.secp256k1_ecdsa_signature_parse_compact(
            _CONTEXT, parsed, signature
        )
    if not ok:
        return False
    lib.secp256k1_ecdsa_signature_normalize(_CONTEXT, parsed, parsed)
    return bool(lib.secp256k1_ecdsa_verify(_CONTEXT, parsed, signed, point))


def recover(
    message: bytes, signature: bytes, hash: Hash = "sha256", prehashed: bool = False
) -> bytes | None:
    """The SEC1 uncompressed public key a recoverable signature of `message` names, or None
    when it names none."""
    point = _recover(digest(message, hash, prehashed), signature)
    return None if point is None else secp256k1.encode(point, compressed=False)


def _recover(signed: bytes, signature: bytes) -> secp256k1.Point | None:
    if len(signature) != 65:
        return None
    recid = signature[64] - 27 if signature[64] >= 27 else signature[64]
    if not 0 <= recid <= 3:
        return None
    parsed = ffi.new("secp256k1_ecdsa_recoverable_signature *")
    if not lib.secp256k1_ecdsa_recoverable_signature_parse_compact(
        _CONTEXT, parsed, signature[:64], recid
    ):
        return None
    point = ffi.new("secp256k1_pubkey *")
    if not lib.secp256k1_ecdsa_recover(_CONTEXT, point, parsed, signed):
        return None
    return point
