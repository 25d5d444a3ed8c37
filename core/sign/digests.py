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
# `hash_algorithm=none`): ECDSA signs its bytes as the digest, whatever their length; RSA PKCS#1
# v1.5 signs them with no DigestInfo (`core.sign.rsa`).
NO_HASH = "none"


class _AsGiven(hashes.HashAlgorithm):
    """A digest of the caller's own length. OpenSSL's ECDSA reads a digest of any length as
    FIPS 186-5 says (its leftmost bits, as many as the group order has; Go's `hashToInt` too),
    and pyca checks no more than the length named here."""

    name = "none"
    block_size = None

    def __init__(self, length: int) -> None:
        self._length = length

    @property
    def digest_size(self) -> int:
        return self._length


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
    (EncodingError if it is not the hash's length; with hash none, any length)."""
    if hash == NO_HASH:
        if not prehashed or not message:
            raise EncodingError("hash none signs a prehashed message of one byte or more as it is")
        return message, utils.Prehashed(_AsGiven(len(message)))
    chosen = algorithm(hash)
    if not prehashed:
        return message, chosen
    if len(message) != chosen.digest_size:
        raise EncodingError(
            f"a prehashed message is a {chosen.digest_size}-byte {hash} digest, not "
            f"{len(message)} bytes"
        )
    return message, utils.Prehashed(chosen)
