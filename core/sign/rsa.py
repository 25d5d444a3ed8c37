"""RSA signatures (RFC 8017) with 2048-, 3072- and 4096-bit keys, through OpenSSL by way of
pyca/cryptography: RSASSA-PSS with MGF1 on the message's hash and a salt as long as the digest
(the default; verification takes exactly that salt length, nothing else), or RSASSA-PKCS1-v1_5.
Vault's Transit signs PSS with the longest salt the key allows and verifies any salt length
(`salt="auto"`), so that its signatures verify here and the ones made here verify there; it also
takes a salt length in bytes, from 0 to the longest (RFC 8017 9.1.1: the encoded message's length
less the digest's and 2), for signing and verifying alike.
PKCS#1 v1.5 also signs prehashed bytes as given, with hash "none" (Transit's
`hash_algorithm=none`): no DigestInfo is added (the caller built it, or signs a protocol's own
encoding), and at most the modulus' length less 11 bytes.

A key is stored as its PKCS#8 DER (what export gives and BYOK takes) and shown as its
SubjectPublicKeyInfo: RSA has no raw public form. A key brought in must have the modulus size
of its type and a public exponent from 65537 to 2^256 (NIST SP 800-56B's range; small
exponents invite the forgeries lax PKCS#1 v1.5 verifiers allow); OpenSSL checks its primes and
CRT values as pyca reads it.
"""

from typing import Any, Literal

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding as paddings
from cryptography.hazmat.primitives.asymmetric import rsa, utils

from core.errors import EncodingError, InvalidKeyError
from core.sign import digests, pkcs8

Padding = Literal["pss", "pkcs1v15"]
PADDINGS: tuple[Padding, ...] = ("pss", "pkcs1v15")
# PSS salt lengths: the digest's, (Transit's "auto") the longest to sign and any to verify, or
# a number of bytes.
Salt = Literal["digest", "auto"] | int
SIZES = (2048, 3072, 4096)
PUBLIC_EXPONENT = 65537
_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _spki(key: rsa.RSAPrivateKey) -> bytes:
    return key.public_key().public_bytes(*_SPKI)


def generate(bits: int) -> tuple[bytes, bytes]:
    """A fresh (PKCS#8 DER, SubjectPublicKeyInfo DER) pair, with e = 65537."""
    key = rsa.generate_private_key(PUBLIC_EXPONENT, bits)
    return pkcs8.dump(key), _spki(key)


def take(bits: int, material: bytes) -> tuple[bytes, bytes]:
    """A key made elsewhere, as PKCS#8 DER, once it is a valid RSA key of `bits` bits with an
    exponent in range: (PKCS#8 DER as stored, SubjectPublicKeyInfo); InvalidKeyError
    otherwise."""
    key = pkcs8.load(material, f"an rsa-{bits} key")
    if not isinstance(key, rsa.RSAPrivateKey):
        raise InvalidKeyError(f"an rsa-{bits} key is RSA, not {type(key).__name__}")
    if key.key_size != bits:
        raise InvalidKeyError(f"an rsa-{bits} key has a {bits}-bit modulus, not {key.key_size}")
    e = key.public_key().public_numbers().e
    if not (PUBLIC_EXPONENT <= e < 2**256 and e % 2):
        raise InvalidKeyError(f"the public exponent is an odd number from 65537 to 2^256, not {e}")
    return pkcs8.dump(key), _spki(key)


def signing_key(material: bytes) -> rsa.RSAPrivateKey:
    """The stored PKCS#8 as pyca's key, read once per version held in memory. Its checks were
    made when it was drawn or taken in; made again, they would cost tens of milliseconds."""
    key = serialization.load_der_private_key(
        material, password=None, unsafe_skip_rsa_key_validation=True
    )
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def parse_public(bits: int, given: bytes) -> rsa.RSAPublicKey | None:
    """An RSA public key of `bits` bits as a SubjectPublicKeyInfo in DER; None for anything
    else."""
    try:
        key: Any = serialization.load_der_public_key(given)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return None
    if not isinstance(key, rsa.RSAPublicKey) or key.key_size != bits:
        return None
    return key


Hashing = hashes.HashAlgorithm | utils.Prehashed | utils.NoDigestInfo


def _scheme(
    message: bytes, hash: str, prehashed: bool, kind: str, salt: Any
) -> tuple[bytes, paddings.AsymmetricPadding, Hashing]:
    """What pyca takes to sign or verify: the data, the padding and the hash (or none)."""
    if kind not in PADDINGS:
        raise EncodingError(f"padding must be one of {', '.join(PADDINGS)}, not {kind!r}")
    if hash == digests.NO_HASH:
        if kind != "pkcs1v15" or not prehashed:
            raise EncodingError("hash none signs the message as given: prehashed, pkcs1v15 only")
        return message, paddings.PKCS1v15(), utils.NoDigestInfo()
    data, algorithm = digests.signed(message, hash, prehashed)
    if kind == "pkcs1v15":
        return data, paddings.PKCS1v15(), algorithm
    return data, paddings.PSS(paddings.MGF1(digests.algorithm(hash)), salt), algorithm


def sign(
    key: rsa.RSAPrivateKey,
    message: bytes,
    hash: str = "sha256",
    prehashed: bool = False,
    padding: str = "pss",
    salt: Salt = "digest",
) -> bytes:
    """The signature of `message` (its `hash`, or itself when prehashed) with `padding`; a
    salt longer than the key and hash allow raises EncodingError."""
    _check_salt(key, hash, padding, salt)
    length = paddings.PSS.MAX_LENGTH if salt == "auto" else _fixed_length(salt)
    data, scheme, algorithm = _scheme(message, hash, prehashed, padding, length)
    if hash == digests.NO_HASH and len(data) > key.key_size // 8 - 11:  # RFC 8017 9.2, step 3
        raise EncodingError(
            f"with hash none, an rsa-{key.key_size} key signs at most "
            f"{key.key_size // 8 - 11} bytes, not {len(data)}"
        )
    return key.sign(data, scheme, algorithm)


def verify(
    key: rsa.RSAPublicKey,
    message: bytes,
    signature: bytes,
    hash: str = "sha256",
    prehashed: bool = False,
    padding: str = "pss",
    salt: Salt = "digest",
) -> bool:
    """Whether `signature` is `key`'s of `message` with `padding`. A malformed signature is
    False; a malformed digest or option (a salt longer than the key and hash allow) raises
    EncodingError."""
    _check_salt(key, hash, padding, salt)
    length = paddings.PSS.AUTO if salt == "auto" else _fixed_length(salt)
    data, scheme, algorithm = _scheme(message, hash, prehashed, padding, length)
    try:
        # pyca verifies with NoDigestInfo as it signs with it; its type hints name only signing.
        key.verify(signature, data, scheme, algorithm)  # type: ignore[arg-type]
    except InvalidSignature:
        return False
    return True


def _fixed_length(salt: Salt) -> Any:
    """pyca's salt length for the digest's or a number of bytes."""
    return paddings.PSS.DIGEST_LENGTH if salt == "digest" else salt


def _check_salt(
    key: rsa.RSAPrivateKey | rsa.RSAPublicKey, hash: str, padding: str, salt: Salt
) -> None:
    """EncodingError for a salt of a number of bytes that PSS cannot have with this key and hash:
    from 0 to emLen - hLen - 2, where emLen is the modulus' bits less one, in bytes (RFC 8017
    9.1.1). `_scheme` checks the rest (PKCS#1 v1.5 and hash none take no salt)."""
    if padding != "pss" or not isinstance(salt, int) or hash == digests.NO_HASH:
        return
    longest = (key.key_size + 6) // 8 - digests.algorithm(hash).digest_size - 2
    if not 0 <= salt <= longest:
        raise EncodingError(
            f"a PSS salt of rsa-{key.key_size} with {hash} is 0 to {longest} bytes, not {salt}"
        )
