"""RSAES-OAEP (RFC 8017) with SHA-256, MGF1 with SHA-256 and the empty label: what Vault Transit's
RSA keys and AWS KMS's RSAES_OAEP_SHA_256 encrypt, as OpenSSL computes it through
pyca/cryptography.

A plaintext has at most k - 66 bytes, k the modulus's length in bytes (190 for a 2048-bit key);
a ciphertext has exactly k. Every failure to decrypt (its length, its integer not below the
modulus, its padding) is one `DecryptionError`, raised the same way whatever failed, so that the
answer tells an attacker nothing of the padding (Manger's attack).
"""

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from core.errors import DecryptionError

HASH_BYTES = 32
_PADDING = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def max_plaintext(public: rsa.RSAPublicKey) -> int:
    """The longest plaintext a key encrypts."""
    return (public.key_size + 7) // 8 - 2 * HASH_BYTES - 2


def encrypt(public: rsa.RSAPublicKey, plaintext: bytes) -> bytes:
    """The OAEP ciphertext of `plaintext` (ValueError if it is longer than `max_plaintext`)."""
    if len(plaintext) > max_plaintext(public):
        raise ValueError(
            f"at most {max_plaintext(public)} bytes for a {public.key_size}-bit key "
            f"(RSAES-OAEP with SHA-256), not {len(plaintext)}"
        )
    # bytes(): a raw request's body is a bytearray, which OpenSSL's binding refuses here.
    return public.encrypt(bytes(plaintext), _PADDING)


def decrypt(private: rsa.RSAPrivateKey, ciphertext: bytes) -> bytes:
    """The plaintext of an OAEP ciphertext (DecryptionError if it does not decrypt)."""
    try:
        return private.decrypt(bytes(ciphertext), _PADDING)
    except ValueError:
        raise DecryptionError("decryption failed") from None
