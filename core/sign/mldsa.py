"""ML-DSA (FIPS 204), pure, with the empty context: ML-DSA-44, ML-DSA-65 and ML-DSA-87, through
OpenSSL by way of pyca/cryptography.

A key is stored as its 32-byte seed ξ, from which FIPS 204's KeyGen derives everything else;
export gives it as PKCS#8 DER (RFC 9881's seed form), and BYOK takes either. The public key is
FIPS 204's encoding (1,312, 1,952 or 2,592 bytes); signatures are 2,420, 3,309 or 4,627 bytes.
Signing is hedged (FIPS 204's default: fresh randomness in every signature).

With `mu`, the caller gives μ, the 64-byte message representative of FIPS 204 (SHAKE256 of
the public key's hash, the context's encoding and the message), computed where the message is
(as AWS KMS's EXTERNAL_MU): the service signs or verifies it without ever seeing the message.
"""

from typing import Any, Literal

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import mldsa

from core.errors import EncodingError, InvalidKeyError
from core.sign import pkcs8

Level = Literal["44", "65", "87"]
SEED_BYTES = 32
MU_BYTES = 64
PUBLIC_BYTES = {"44": 1312, "65": 1952, "87": 2592}
SIGNATURE_BYTES = {"44": 2420, "65": 3309, "87": 4627}
_PRIVATE: dict[str, Any] = {
    "44": mldsa.MLDSA44PrivateKey,
    "65": mldsa.MLDSA65PrivateKey,
    "87": mldsa.MLDSA87PrivateKey,
}
_PUBLIC: dict[str, Any] = {
    "44": mldsa.MLDSA44PublicKey,
    "65": mldsa.MLDSA65PublicKey,
    "87": mldsa.MLDSA87PublicKey,
}


def generate(level: str) -> tuple[bytes, bytes]:
    """A fresh (seed, public key) pair."""
    key = _PRIVATE[level].generate()
    return key.private_bytes_raw(), key.public_key().public_bytes_raw()


def signing_key(level: str, seed: bytes) -> Any:
    """The key FIPS 204's KeyGen derives from `seed` (InvalidKeyError for one of another
    length)."""
    if len(seed) != SEED_BYTES:
        raise InvalidKeyError(f"an ML-DSA seed has {SEED_BYTES} bytes, not {len(seed)}")
    return _PRIVATE[level].from_seed_bytes(seed)


def take(level: str, material: bytes) -> tuple[bytes, bytes]:
    """A key made elsewhere, its 32-byte seed or PKCS#8 DER (RFC 9881: the seed form, or both
    seed and expanded key, which OpenSSL checks are one key), once it is an ML-DSA-`level`
    key: (seed as stored, public key); InvalidKeyError otherwise (an expanded key without its
    seed included: the service keeps seeds)."""
    if len(material) == SEED_BYTES:
        key = signing_key(level, material)
    else:
        key = pkcs8.load(material, f"an ml-dsa-{level} key, its 32-byte seed or PKCS#8,")
        if not isinstance(key, _PRIVATE[level]):
            raise InvalidKeyError(
                f"an ml-dsa-{level} key is ML-DSA-{level}, not {type(key).__name__}"
            )
    return key.private_bytes_raw(), key.public_key().public_bytes_raw()


def export(level: str, seed: bytes) -> bytes:
    """The stored seed as PKCS#8 DER (RFC 9881's seed-only form)."""
    return pkcs8.dump(signing_key(level, seed))


def parse_public(level: str, given: bytes) -> Any:
    """An ML-DSA-`level` public key as a caller gives it: FIPS 204's encoding or a
    SubjectPublicKeyInfo in DER; None for anything else."""
    try:
        if len(given) == PUBLIC_BYTES[level]:
            return _PUBLIC[level].from_public_bytes(given)
        key = serialization.load_der_public_key(given)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return None
    return key if isinstance(key, _PUBLIC[level]) else None


def _check_mu(mu: bytes) -> None:
    if len(mu) != MU_BYTES:
        raise EncodingError(
            f"mu is the {MU_BYTES}-byte message representative, not {len(mu)} bytes"
        )


def sign(key: Any, message: bytes, mu: bool = False) -> bytes:
    """The signature of `message`, or, with `mu`, of the message representative it is."""
    if mu:
        _check_mu(message)
        signature: bytes = key.sign_mu(message)
    else:
        signature = key.sign(message)
    return signature


def verify(key: Any, message: bytes, signature: bytes, mu: bool = False) -> bool:
    """Whether `signature` is `key`'s of `message` (or of the representative `message`, with
    `mu`). A malformed signature is False; a mu of the wrong length raises EncodingError."""
    if mu:
        _check_mu(message)
    try:
        if mu:
            key.verify_mu(signature, message)
        else:
            key.verify(signature, message)
    except InvalidSignature:
        return False
    return True
