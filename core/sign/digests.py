"""The hashes the NIST-curve ECDSA and RSA signatures take, and their prehashed form: the
caller hashed the message and gives the digest, which must be the hash's length. SHA-1, SHA-224
and SHA-3 are here for Vault's Transit, which signs with them; the service's own API offers
SHA-2 of 256 bits and more."""

from typing import Literal

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import utils

from core.errors import EncodingError

Hash = Literal["sha256", "sha384", "sha512"]
HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
    "sha512": hashes.SHA512,
    "sha1": hashes.SHA1,
    "sha224": hashes.SHA224,
    "sha3_224": hashes.SHA3_224,
    "sha3_256": hashes.SHA3_256,
    "sha3_384": hashes.SHA3_384,
    "sha3_512": hashes.SHA3_512,
}

# The message as the caller hashed it, with a hash not named (Vault Transit's
# `hash_algorithm=none`): ECDSA signs it as any digest of its length; RSA PKCS#1 v1.5 signs it
# with no DigestInfo (`core.sign.rsa`).
NO_HASH = "none"
# What pyca is told a digest of each length is: OpenSSL signs the bytes, the name only fixes it.
_BY_LENGTH = {
    kind.digest_size: kind
    for kind in (hashes.SHA1, hashes.SHA224, hashes.SHA256, hashes.SHA384, hashes.SHA512)
}


def algorithm(hash: str) -> hashes.HashAlgorithm:
    """pyca's object for `hash` (EncodingError for one not taken here)."""
    kind = HASHES.get(hash)
    if kind is None:
        raise EncodingError(f"hash must be one of {', '.join(HASHES)}, not {hash!r}")
    return kind()


def signed(
    message: bytes, hash: str, prehashed: bool
) -> tuple[bytes, hashes.HashAlgorithm | utils.Prehashed]:
    """What pyca signs or verifies: the message with its hash, or, prehashed, the digest itself
    (EncodingError if it is not the hash's length)."""
    if hash == NO_HASH:
        stand_in = _BY_LENGTH.get(len(message))
        if not prehashed or stand_in is None:
            raise EncodingError(
                "hash none signs a prehashed message of "
                f"{', '.join(map(str, sorted(_BY_LENGTH)))} bytes as it is"
            )
        return message, utils.Prehashed(stand_in())
    chosen = algorithm(hash)
    if not prehashed:
        return message, chosen
    if len(message) != chosen.digest_size:
        raise EncodingError(
            f"a prehashed message is a {chosen.digest_size}-byte {hash} digest, not "
            f"{len(message)} bytes"
        )
    return message, utils.Prehashed(chosen)
