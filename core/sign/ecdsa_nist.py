"""ECDSA on the NIST curves P-256, P-384 and P-521 (FIPS 186-5), through OpenSSL by way of
pyca/cryptography.

A key is stored as its PKCS#8 DER (what export gives and BYOK takes) and shown as its SEC1
uncompressed point. Each curve has its hash by default (SHA-256, SHA-384, SHA-512: the pairs
JOSE's ES256, ES384 and ES512 name); any of the three may be asked for, or, `prehashed`, the
message is the digest itself.

Signatures are DER (the ECDSA-Sig-Value of RFC 3279, parsed strictly: OpenSSL refuses any other
BER encoding of it) or compact, r ‖ s each in the curve's byte length (IEEE P1363, what JOSE
and WebCrypto use). Signing draws a random nonce (OpenSSL's); verification accepts any valid
signature, high S included.
"""

from typing import Any, Literal

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

from core.errors import EncodingError, InvalidKeyError
from core.sign import digests, pkcs8

Curve = Literal["p256", "p384", "p521"]
Format = Literal["der", "compact"]
FORMATS: tuple[Format, ...] = ("der", "compact")
CURVES: dict[str, ec.EllipticCurve] = {
    "p256": ec.SECP256R1(),
    "p384": ec.SECP384R1(),
    "p521": ec.SECP521R1(),
}
DEFAULT_HASH: dict[str, digests.Hash] = {"p256": "sha256", "p384": "sha384", "p521": "sha512"}
_POINT = (serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def scalar_bytes(curve: str) -> int:
    """The byte length of a scalar (and of r and s in the compact form): 32, 48, 66."""
    return (CURVES[curve].key_size + 7) // 8


def _point(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(*_POINT)


def generate(curve: str) -> tuple[bytes, bytes]:
    """A fresh (PKCS#8 DER, SEC1 uncompressed public key) pair."""
    key = ec.generate_private_key(CURVES[curve])
    return pkcs8.dump(key), _point(key)


def take(curve: str, material: bytes) -> tuple[bytes, bytes]:
    """A key made elsewhere, as PKCS#8 DER, once it is a valid key of `curve`: (PKCS#8 DER as
    stored, SEC1 public key); InvalidKeyError otherwise."""
    key = pkcs8.load(material, f"an ecdsa-{curve} key")
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != CURVES[curve].name:
        found = key.curve.name if isinstance(key, ec.EllipticCurvePrivateKey) else "not EC"
        raise InvalidKeyError(f"an ecdsa-{curve} key is on {CURVES[curve].name}, not {found}")
    return pkcs8.dump(key), _point(key)


def signing_key(material: bytes) -> ec.EllipticCurvePrivateKey:
    """The stored PKCS#8 as pyca's key, read once per version held in memory."""
    key = serialization.load_der_private_key(material, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key


def parse_public(curve: str, given: bytes) -> ec.EllipticCurvePublicKey | None:
    """A public key of `curve` as a caller gives it: SEC1 (uncompressed or compressed) or a
    SubjectPublicKeyInfo in DER; None for anything else, a key of another curve included."""
    try:
        if given[:1] == b"\x30":
            key: Any = serialization.load_der_public_key(given)
        else:
            key = ec.EllipticCurvePublicKey.from_encoded_point(CURVES[curve], given)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != CURVES[curve].name:
        return None
    return key


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise EncodingError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")


def sign(
    key: ec.EllipticCurvePrivateKey,
    message: bytes,
    hash: str,
    prehashed: bool = False,
    format: str = "der",
) -> bytes:
    """The signature of `message` (its `hash`, or itself when prehashed) in `format`."""
    _check_format(format)
    data, algorithm = digests.signed(message, hash, prehashed)
    der = key.sign(data, ec.ECDSA(algorithm))
    if format == "der":
        return der
    size = (key.curve.key_size + 7) // 8
    r, s = utils.decode_dss_signature(der)
    return r.to_bytes(size) + s.to_bytes(size)


def verify(
    key: ec.EllipticCurvePublicKey,
    message: bytes,
    signature: bytes,
    hash: str,
    prehashed: bool = False,
    format: str = "der",
) -> bool:
    """Whether `signature` (in `format`) is `key`'s of `message`. A malformed signature is
    False; a malformed digest or option raises EncodingError."""
    _check_format(format)
    data, algorithm = digests.signed(message, hash, prehashed)
    if format == "compact":
        size = (key.curve.key_size + 7) // 8
        if len(signature) != 2 * size:
            return False
        r, s = int.from_bytes(signature[:size]), int.from_bytes(signature[size:])
        signature = utils.encode_dss_signature(r, s)
    try:
        key.verify(signature, data, ec.ECDSA(algorithm))
    except InvalidSignature:
        return False
    return True
