"""HPKE (RFC 9180), base mode, single shot: the KEM with HKDF-SHA256 and AES-256-GCM, as OpenSSL
and pyca/cryptography compute it.

Two KEMs: DHKEM(X25519, HKDF-SHA256) and MLKEM768-X25519 (draft-ietf-hpke-pq: ML-KEM-768 and
X25519 combined as X-Wing, KEM id 0x647a), the second post-quantum. A payload is the
encapsulated key `enc` ‖ the AEAD ciphertext, what RFC 9180's single-shot Seal gives: 32 + 16
bytes more than the plaintext for X25519, 1,120 + 16 for the hybrid.

Keys as the service stores and exchanges them: for x25519 the 32-byte private key and the
32-byte public key; for mlkem768-x25519 the ML-KEM-768 seed d ‖ z (64 bytes) followed by the
X25519 private key (32), and the ML-KEM-768 encapsulation key (1,184 bytes) followed by the X25519
public key (32): the pair pyca's `MLKEM768X25519PrivateKey(mlkem_key, x25519_key)` takes (the
draft's 32-byte seed expands to those 96 bytes with SHAKE256).

Associated data beside the info goes through pyca's `_encrypt_with_aad`/`_decrypt_with_aad`,
which its own tests of RFC 9180's vectors use: the public single-shot calls take none.
Every failure to open a payload is one `DecryptionError`.
"""

from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.bindings._rust import openssl as rust_openssl
from cryptography.hazmat.primitives import hpke, serialization
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519

from core.errors import DecryptionError, InvalidKeyError

Kem = Literal["x25519", "mlkem768-x25519"]

_KEMS = {"x25519": hpke.KEM.X25519, "mlkem768-x25519": hpke.KEM.MLKEM768_X25519}
X25519_BYTES = 32
MLKEM_SEED_BYTES = 64
MLKEM_PUBLIC_BYTES = 1184
SECRET_BYTES: dict[str, int] = {
    "x25519": X25519_BYTES,
    "mlkem768-x25519": MLKEM_SEED_BYTES + X25519_BYTES,
}
PUBLIC_BYTES: dict[str, int] = {
    "x25519": X25519_BYTES,
    "mlkem768-x25519": MLKEM_PUBLIC_BYTES + X25519_BYTES,
}
ENC_BYTES: dict[str, int] = {kem: _KEMS[kem].enc_length() for kem in _KEMS}
TAG_BYTES = 16

PrivateKey = x25519.X25519PrivateKey | hpke.MLKEM768X25519PrivateKey
PublicKey = x25519.X25519PublicKey | hpke.MLKEM768X25519PublicKey


def suite(kem: str, kdf: Any = hpke.KDF.HKDF_SHA256, aead: Any = hpke.AEAD.AES_256_GCM) -> Any:
    """The suite of `kem` (the service's: HKDF-SHA256 and AES-256-GCM; others for the published
    test vectors of the KEM)."""
    return hpke.Suite(_KEMS[kem], kdf, aead)


_SUITES = {kem: suite(kem) for kem in _KEMS}


def _parts(
    kem: str, secret: bytes
) -> tuple[mlkem.MLKEM768PrivateKey | None, x25519.X25519PrivateKey]:
    wanted = SECRET_BYTES[kem]
    if len(secret) != wanted:
        raise InvalidKeyError(f"an hpke-{kem} secret has {wanted} bytes, not {len(secret)}")
    if kem == "x25519":
        return None, x25519.X25519PrivateKey.from_private_bytes(secret)
    return (
        mlkem.MLKEM768PrivateKey.from_seed_bytes(secret[:MLKEM_SEED_BYTES]),
        x25519.X25519PrivateKey.from_private_bytes(secret[MLKEM_SEED_BYTES:]),
    )


def private_key(kem: str, secret: bytes) -> PrivateKey:
    """The private key of a stored secret (InvalidKeyError for one of another length)."""
    mlkem_key, x25519_key = _parts(kem, secret)
    return x25519_key if mlkem_key is None else hpke.MLKEM768X25519PrivateKey(mlkem_key, x25519_key)


def generate(kem: str) -> tuple[bytes, bytes]:
    """A fresh (secret, public key) pair."""
    secret = x25519.X25519PrivateKey.generate().private_bytes_raw()
    if kem != "x25519":
        secret = mlkem.MLKEM768PrivateKey.generate().private_bytes_raw() + secret
    return secret, public_bytes(kem, secret)


def public_bytes(kem: str, secret: bytes) -> bytes:
    """The raw public key of a secret (the hybrid's public key object has no encoding of its
    own: its parts have)."""
    mlkem_key, x25519_key = _parts(kem, secret)
    x25519_public = x25519_key.public_key().public_bytes_raw()
    if mlkem_key is None:
        return x25519_public
    return mlkem_key.public_key().public_bytes_raw() + x25519_public


def public_key(kem: str, raw: bytes) -> PublicKey:
    """The public key of its raw encoding (InvalidKeyError if it is not one)."""
    wanted = PUBLIC_BYTES[kem]
    if len(raw) != wanted:
        raise InvalidKeyError(f"an hpke-{kem} public key has {wanted} bytes, not {len(raw)}")
    try:
        if kem == "x25519":
            return x25519.X25519PublicKey.from_public_bytes(raw)
        return hpke.MLKEM768X25519PublicKey(
            mlkem.MLKEM768PublicKey.from_public_bytes(raw[:MLKEM_PUBLIC_BYTES]),
            x25519.X25519PublicKey.from_public_bytes(raw[MLKEM_PUBLIC_BYTES:]),
        )
    except ValueError as exc:  # an encapsulation key whose coefficients are not reduced
        raise InvalidKeyError(f"not an hpke-{kem} public key: {exc}") from None


def x25519_from_der(der: bytes) -> PublicKey:
    """An X25519 public key from its SubjectPublicKeyInfo (InvalidKeyError for anything else);
    the hybrid has no SPKI encoding yet."""
    try:
        key = serialization.load_der_public_key(der)
    except (ValueError, TypeError):
        raise InvalidKeyError("not a DER SubjectPublicKeyInfo") from None
    if not isinstance(key, x25519.X25519PublicKey):
        raise InvalidKeyError("the SubjectPublicKeyInfo is not of an X25519 key")
    return key


def x25519_der(public: bytes) -> bytes:
    """The SubjectPublicKeyInfo (DER) of a raw X25519 public key."""
    return x25519.X25519PublicKey.from_public_bytes(public).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def seal(
    kem: str,
    public: PublicKey,
    plaintext: bytes,
    info: bytes = b"",
    aad: bytes = b"",
    with_suite: Any = None,
) -> bytes:
    """enc ‖ ciphertext of the single-shot Seal to `public` (InvalidKeyError if its X25519
    part is a point of small order, whose shared secret is all zeros: RFC 9180, 7.1.4)."""
    chosen = with_suite or _SUITES[kem]
    try:
        if not aad:
            return bytes(chosen.encrypt(plaintext, public, info))
        return bytes(rust_openssl.hpke._encrypt_with_aad(chosen, plaintext, public, info, aad))
    except ValueError as exc:  # OpenSSL's "Error computing shared key", its only refusal here
        raise InvalidKeyError(f"not an hpke-{kem} public key to encrypt to: {exc}") from None


def open_payload(
    kem: str,
    private: PrivateKey,
    payload: bytes,
    info: bytes = b"",
    aad: bytes = b"",
    with_suite: Any = None,
) -> bytes:
    """The plaintext of enc ‖ ciphertext (DecryptionError if it does not open)."""
    chosen = with_suite or _SUITES[kem]
    if len(payload) < ENC_BYTES[kem] + TAG_BYTES:
        raise DecryptionError("payload shorter than an encapsulated key and a tag")
    try:
        if not aad:
            return bytes(chosen.decrypt(payload, private, info))
        return bytes(rust_openssl.hpke._decrypt_with_aad(chosen, payload, private, info, aad))
    except InvalidTag:
        raise DecryptionError("decryption failed") from None
