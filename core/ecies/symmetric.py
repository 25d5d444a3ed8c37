"""The two AEADs of the ECIES payload: one-shot for small messages, in place for large ones.

The payload puts the tag *before* the ciphertext, while an AEAD gives `ct || tag`. For a large
message `seal_into` and `open_into` work on memoryviews of the payload and never build that
intermediate, so nothing is copied to reorder it. Setting that up (the cipher objects, the
output buffer, the views) costs more than AES-256-GCM of the message itself up to tens of KiB,
so messages up to `ONE_SHOT_BYTES` go through `seal` and `unseal`, one call each, and are
reordered with a copy (docs/performance/choices.md has the figures).

* AES-256-GCM (12- or 16-byte nonce) is OpenSSL's through `cryptography`: `AESGCM` one-shot,
  `Cipher(...).encryptor().update_into` in place.
* XChaCha20-Poly1305 is the IETF ChaCha20-Poly1305 construction (RFC 8439) under a subkey that
  HChaCha20 derives from the key and the first 16 nonce bytes, with nonce
  `00000000 || nonce[16:24]`: `ChaCha20Poly1305` one-shot, and in place assembled from
  OpenSSL's ChaCha20 and Poly1305. HChaCha20 is not exposed by OpenSSL, but it is the ChaCha20
  block function without the final addition of the input state, so it is recovered from one
  keystream block by subtracting the (known) input words. On large messages the in-place
  construction runs as fast as OpenSSL's fused ChaCha20-Poly1305, and about twice as fast as
  libsodium's XChaCha20-Poly1305 through PyNaCl, which also returns `ct || tag` and would need
  another copy (docs/performance/choices.md).
"""

import struct

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.poly1305 import Poly1305

from core.errors import DecryptionError

TAG_LENGTH = 16
ONE_SHOT_BYTES = 64 * 1024

_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # "expand 32-byte k"
_MASK32 = 0xFFFFFFFF
# RFC 8439, section 2.8: at most 2^32 - 1 blocks of 64 bytes after the Poly1305 key block.
_CHACHA_MAX_LENGTH = (2**32 - 1) * 64
_ZERO_BLOCK = bytes(64)


def hchacha20(key: bytes, nonce16: bytes) -> bytes:
    """HChaCha20(key, nonce16) -> 32-byte subkey (draft-irtf-cfrg-xchacha, section 2.2).

    ChaCha20's first block with `nonce16` as its last four state words is
    `rounds(state) + state`; HChaCha20 is words 0-3 and 12-15 of `rounds(state)`.
    """
    block = Cipher(algorithms.ChaCha20(key, nonce16), None).encryptor().update(_ZERO_BLOCK)
    words = struct.unpack("<16I", block)
    tail = struct.unpack("<4I", nonce16)
    head = [(w - s) & _MASK32 for w, s in zip(words[:4], _SIGMA, strict=True)]
    last = [(w - s) & _MASK32 for w, s in zip(words[12:], tail, strict=True)]
    return struct.pack("<8I", *head, *last)


def _one_shot(algorithm: str, key: bytes, nonce: bytes) -> tuple[AESGCM | ChaCha20Poly1305, bytes]:
    """The AEAD object and nonce of a one-shot call; XChaCha20-Poly1305 is ChaCha20-Poly1305
    under the HChaCha20 subkey with nonce `00000000 || nonce[16:24]`."""
    if algorithm == "aes-256-gcm":
        return AESGCM(key), nonce
    return ChaCha20Poly1305(hchacha20(key, nonce[:16])), bytes(4) + nonce[16:24]


def seal(algorithm: str, key: bytes, nonce: bytes, plaintext: memoryview) -> bytes:
    """`ciphertext || tag` of a message up to ONE_SHOT_BYTES."""
    aead, aead_nonce = _one_shot(algorithm, key, nonce)
    return aead.encrypt(aead_nonce, plaintext, None)


def unseal(algorithm: str, key: bytes, nonce: bytes, sealed: bytes) -> bytes:
    """The plaintext of `ciphertext || tag`, or DecryptionError."""
    aead, aead_nonce = _one_shot(algorithm, key, nonce)
    try:
        return aead.decrypt(aead_nonce, sealed, None)
    except InvalidTag:
        raise DecryptionError("decryption failed") from None


def _xchacha20_stream(key: bytes, nonce: bytes) -> tuple[CipherContext, Poly1305]:
    """ChaCha20 keystream positioned at block 1 and the Poly1305 keyed from block 0."""
    subkey = hchacha20(key, nonce[:16])
    stream = Cipher(algorithms.ChaCha20(subkey, bytes(8) + nonce[16:24]), None).encryptor()
    mac = Poly1305(stream.update(_ZERO_BLOCK)[:32])
    return stream, mac


def _poly1305_trailer(mac: Poly1305, length: int) -> None:
    """Padding and lengths after the ciphertext (no associated data)."""
    mac.update(bytes(-length % 16) + struct.pack("<QQ", 0, length))


def seal_into(
    algorithm: str, key: bytes, nonce: bytes, plaintext: memoryview, out: memoryview
) -> bytes:
    """Encrypt `plaintext` into `out` (same length) and return the 16-byte tag."""
    if algorithm == "aes-256-gcm":
        encryptor = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
        encryptor.update_into(plaintext, out)
        encryptor.finalize()
        return encryptor.tag
    if len(plaintext) > _CHACHA_MAX_LENGTH:
        raise ValueError("message too long for XChaCha20-Poly1305")
    stream, mac = _xchacha20_stream(key, nonce)
    stream.update_into(plaintext, out)
    mac.update(out)
    _poly1305_trailer(mac, len(out))
    return mac.finalize()


def open_into(
    algorithm: str,
    key: bytes,
    nonce: bytes,
    tag: memoryview,
    ciphertext: memoryview,
    out: memoryview,
) -> None:
    """Decrypt `ciphertext` into `out`, raising DecryptionError unless `tag` verifies.

    With XChaCha20-Poly1305 the tag is checked before any plaintext is produced. With
    AES-256-GCM `out` holds unauthenticated plaintext when the check fails; the caller drops it.
    """
    if algorithm == "aes-256-gcm":
        decryptor = Cipher(algorithms.AES(key), modes.GCM(nonce, bytes(tag))).decryptor()
        decryptor.update_into(ciphertext, out)
        try:
            decryptor.finalize()
        except InvalidTag:
            raise DecryptionError("decryption failed") from None
        return
    stream, mac = _xchacha20_stream(key, nonce)
    mac.update(ciphertext)
    _poly1305_trailer(mac, len(ciphertext))
    try:
        mac.verify(bytes(tag))
    except InvalidSignature:
        raise DecryptionError("decryption failed") from None
    stream.update_into(ciphertext, out)
