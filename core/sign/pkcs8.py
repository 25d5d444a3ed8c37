"""Private keys in PKCS#8 (RFC 5208/5958) DER, unencrypted: how ECDSA, RSA and ML-DSA keys come
in from elsewhere and go out on export.

pyca/cryptography reads the key and checks it as OpenSSL does (an EC scalar in range and its
public point, if given, the scalar's; an RSA key's primes, exponents and CRT values
consistent; an ML-DSA seed and its expanded key, if both are given, one key). OpenSSL's
"traditional" forms (SEC1 ECPrivateKey, PKCS#1 RSAPrivateKey), which it reads as well, are
refused here: PKCS#8 names the algorithm, so a key of another kind cannot pass for one.
"""

from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from core.errors import InvalidKeyError

_SEQUENCE = 0x30
_INTEGER = 0x02


def _element(data: bytes, at: int) -> tuple[int, int, int]:
    """The DER element at `at`: (tag, where its content starts, where it ends); ValueError if
    the data ends before it does."""
    if at + 2 > len(data):
        raise ValueError("truncated")
    tag, size = data[at], data[at + 1]
    start = at + 2
    if size & 0x80:
        count = size & 0x7F
        if not 1 <= count <= 4 or start + count > len(data):
            raise ValueError("a bad length")
        size = int.from_bytes(data[start : start + count])
        start += count
    if start + size > len(data):
        raise ValueError("truncated")
    return tag, start, start + size


def _is_private_key_info(data: bytes) -> bool:
    """Whether `data` is shaped as PrivateKeyInfo: a SEQUENCE of the whole input that starts
    with the version (INTEGER) and the algorithm (a SEQUENCE), where SEC1 and PKCS#1 have an
    OCTET STRING or an INTEGER."""
    try:
        tag, start, end = _element(data, 0)
        if tag != _SEQUENCE or end != len(data):
            return False
        tag, _, after = _element(data, start)
        return tag == _INTEGER and _element(data, after)[0] == _SEQUENCE
    except ValueError:
        return False


def load(material: bytes, what: str) -> Any:
    """The private key `material` holds (InvalidKeyError, naming `what` is expected, for
    anything else: another encoding, an encrypted key, a key that fails OpenSSL's checks)."""
    if not _is_private_key_info(material):
        raise InvalidKeyError(f"{what}: not a PKCS#8 PrivateKeyInfo in DER")
    try:
        return serialization.load_der_private_key(material, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise InvalidKeyError(f"{what}: the PKCS#8 key does not load ({exc})") from None


def dump(key: Any) -> bytes:
    """`key` as unencrypted PKCS#8 DER."""
    encoded: bytes = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return encoded
