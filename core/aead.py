"""AEAD: AES-GCM with a 128- or 256-bit key and ChaCha20-Poly1305 (RFC 8439), with a 96-bit nonce,
as OpenSSL computes them through pyca/cryptography; XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha),
with a 192-bit nonce, as libsodium computes it through PyNaCl (pyca has no XChaCha).

A payload is the nonce (12 bytes, 24 for XChaCha) ‖ the ciphertext ‖ the tag (16 bytes): the
layout of Vault Transit's `aes128-gcm96`, `aes256-gcm96`, `chacha20-poly1305` and
`xchacha20-poly1305` keys. The nonce is random unless the encryption is convergent.

Derived keys are Transit's (`derived` with its default KDF, `hkdf_sha256`): the key for a
context is HKDF-SHA256 (RFC 5869) of the master key, with no salt and the context as info, as
long as the cipher's key. A convergent encryption reads the same HKDF output further: its next
32 bytes key the HMAC-SHA256 of the plaintext whose first 12 bytes are the nonce (Transit's
convergent version 3), so that a plaintext under one context always gives the same payload. With
associated data the nonce is keyed by the 32 bytes after those, over the data's length (8 bytes,
big-endian), the data and the plaintext: an equal plaintext with other associated data then gets
another nonce rather than the same nonce with another tag, which would give away GCM's
authentication key. Without associated data the payload is Transit's, byte for byte.

Every failure to open a payload (short, wrong key, nonce, data or tag) is one `DecryptionError`.
"""

import hashlib
import hmac
import os
from typing import Literal, NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from nacl import bindings
from nacl.exceptions import CryptoError

from core.errors import DecryptionError, InvalidKeyError

Algorithm = Literal["aes128-gcm", "aes256-gcm", "chacha20-poly1305", "xchacha20-poly1305"]

KEY_BYTES: dict[str, int] = {
    "aes128-gcm": 16,
    "aes256-gcm": 32,
    "chacha20-poly1305": 32,
    "xchacha20-poly1305": 32,
}
NONCE_BYTES = 12
XNONCE_BYTES = 24
TAG_BYTES = 16
# Each of the two HMAC-SHA256 keys of a convergent nonce.
NONCE_KEY_BYTES = 32


class XChaCha20Poly1305:
    """XChaCha20-Poly1305 under pyca's AEAD interface (`encrypt` and `decrypt` with the nonce
    first, InvalidTag for a payload that does not open)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def encrypt(
        self, nonce: bytes | memoryview, data: bytes | memoryview, associated_data: bytes | None
    ) -> bytes:
        return bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
            bytes(data), associated_data or None, bytes(nonce), self._key
        )

    def decrypt(
        self, nonce: bytes | memoryview, data: bytes | memoryview, associated_data: bytes | None
    ) -> bytes:
        try:
            return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
                bytes(data), associated_data or None, bytes(nonce), self._key
            )
        except CryptoError:
            raise InvalidTag() from None


Cipher = AESGCM | ChaCha20Poly1305 | XChaCha20Poly1305


def cipher(algorithm: str, key: bytes) -> Cipher:
    """The cipher of `algorithm` under `key` (InvalidKeyError for a key of another length)."""
    wanted = KEY_BYTES[algorithm]
    if len(key) != wanted:
        raise InvalidKeyError(f"{algorithm} takes a key of {wanted} bytes, not {len(key)}")
    if algorithm == "xchacha20-poly1305":
        return XChaCha20Poly1305(key)
    return ChaCha20Poly1305(key) if algorithm == "chacha20-poly1305" else AESGCM(key)


def nonce_bytes(key: Cipher) -> int:
    """The length of `key`'s nonces: 24 bytes for XChaCha20-Poly1305, 12 for the others."""
    return XNONCE_BYTES if isinstance(key, XChaCha20Poly1305) else NONCE_BYTES


def seal(
    key: Cipher, plaintext: bytes, associated_data: bytes = b"", nonce: bytes | None = None
) -> bytes:
    """nonce ‖ ciphertext ‖ tag, under a fresh random nonce unless one is given."""
    if nonce is None:
        nonce = os.urandom(nonce_bytes(key))
    return nonce + key.encrypt(nonce, plaintext, associated_data)


def open_payload(key: Cipher, payload: bytes, associated_data: bytes = b"") -> bytes:
    """The plaintext of nonce ‖ ciphertext ‖ tag (DecryptionError if it does not open)."""
    size = nonce_bytes(key)
    if len(payload) < size + TAG_BYTES:
        raise DecryptionError("payload shorter than a nonce and a tag")
    view = memoryview(payload)
    try:
        return key.decrypt(view[:size], view[size:], associated_data)
    except InvalidTag:
        raise DecryptionError("authentication failed") from None


class NonceKeys(NamedTuple):
    """The HMAC-SHA256 keys of a convergent encryption's nonce: without associated data (as
    Transit's) and with it."""

    plain: bytes
    with_data: bytes


class Derived(NamedTuple):
    """The cipher of one context, and for a convergent encryption its nonce keys."""

    key: Cipher
    nonce_keys: NonceKeys | None


def derive(algorithm: str, master: bytes, context: bytes, convergent: bool) -> Derived:
    """The key of `context` under `master`: HKDF-SHA256, no salt, info `context`."""
    if not context:
        raise InvalidKeyError("a derived key needs a non-empty context")
    size = KEY_BYTES[algorithm]
    length = size + (2 * NONCE_KEY_BYTES if convergent else 0)
    okm = HKDF(hashes.SHA256(), length, None, context).derive(master)
    nonce_keys = (
        NonceKeys(okm[size : size + NONCE_KEY_BYTES], okm[size + NONCE_KEY_BYTES :])
        if convergent
        else None
    )
    return Derived(cipher(algorithm, okm[:size]), nonce_keys)


def convergent_nonce(
    keys: NonceKeys, plaintext: bytes, associated_data: bytes = b"", size: int = NONCE_BYTES
) -> bytes:
    """The `size`-byte nonce of a convergent encryption: a function of the plaintext and the
    associated data, under keys of the context."""
    if not associated_data:
        digest = hmac.digest(keys.plain, plaintext, hashlib.sha256)
    else:
        mac = hmac.new(keys.with_data, len(associated_data).to_bytes(8, "big"), hashlib.sha256)
        mac.update(associated_data)
        mac.update(plaintext)
        digest = mac.digest()
    return digest[:size]
