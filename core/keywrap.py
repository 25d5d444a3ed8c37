"""RSA-AES key wrapping (PKCS#11's CKM_RSA_AES_KEY_WRAP): key material wrapped with AES key wrap
with padding (RFC 5649) under a fresh AES-256 key, itself encrypted with RSAES-OAEP (RFC 8017)
to an RSA public key, the two concatenated. It is how Vault Transit's `import` takes material
made elsewhere, with its OAEP hash (and MGF1's) one of SHA-1 and SHA-2.

Every failure to unwrap (the OAEP padding, the length of the key it carries, the wrap's check
value) is one `DecryptionError`, raised the same way whatever failed: which one failed would be
an oracle on the padding (Manger's attack).
"""

import os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.keywrap import (
    InvalidUnwrap,
    aes_key_unwrap_with_padding,
    aes_key_wrap_with_padding,
)

from core.errors import DecryptionError

# The OAEP hashes a wrap may name, by Vault's names for them.
HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "SHA1": hashes.SHA1,
    "SHA224": hashes.SHA224,
    "SHA256": hashes.SHA256,
    "SHA384": hashes.SHA384,
    "SHA512": hashes.SHA512,
}
AES_KEY_BYTES = 32


def _oaep(hash_name: str) -> padding.OAEP:
    algorithm = HASHES[hash_name]()
    return padding.OAEP(mgf=padding.MGF1(algorithm), algorithm=algorithm, label=None)


def wrap(public: rsa.RSAPublicKey, material: bytes, hash_name: str = "SHA256") -> bytes:
    """`material` wrapped for the holder of `public`'s private key."""
    aes_key = os.urandom(AES_KEY_BYTES)
    return public.encrypt(aes_key, _oaep(hash_name)) + aes_key_wrap_with_padding(aes_key, material)


def unwrap(private: rsa.RSAPrivateKey, wrapped: bytes, hash_name: str = "SHA256") -> bytes:
    """The material `wrapped` carries (DecryptionError if it does not unwrap; KeyError for a
    hash not in HASHES)."""
    oaep = _oaep(hash_name)
    size = private.key_size // 8
    if len(wrapped) <= size:
        raise DecryptionError("the wrapped key is too short")
    try:
        aes_key = private.decrypt(wrapped[:size], oaep)
        if len(aes_key) == AES_KEY_BYTES:  # else as a bad padding: no oracle of which failed
            return aes_key_unwrap_with_padding(aes_key, wrapped[size:])
    except (ValueError, InvalidUnwrap):
        pass
    raise DecryptionError("the key does not unwrap")
