"""HMAC with server-held `hmac` keys: SHA-256 by default, SHA-384 or SHA-512 on request.

An HMAC is answered in the envelope that names its key version (`cipherd:v<N>:` and the MAC's
bytes), as Transit answers `vault:v<N>:`, so that its verification finds the version by itself;
a bare MAC is checked against the versions a bare payload would be tried against. The
comparison is constant time (`hmac.compare_digest`).
"""

import hmac
from typing import Literal

from app.ops import envelope
from app.ops.envelope import Sealed
from app.ops.versioned import VersionedKey
from app.server.metrics import timed

Algorithm = Literal["sha256", "sha384", "sha512"]


def digest(secret: bytes, message: bytes, algorithm: str) -> bytes:
    """The HMAC of `message` with the hashlib hash `algorithm` (Transit's verbs name more than
    the native three)."""
    with timed("hmac", "hmac"):
        return hmac.digest(secret, message, algorithm)


class MacKey(VersionedKey):
    """An HMAC key of a request."""

    types = frozenset({"hmac"})
    used_for = "HMAC"

    def hmac(self, message: bytes, algorithm: Algorithm) -> Sealed:
        """The MAC under the latest version, in the envelope that names it."""
        material = self.latest
        return Sealed(
            envelope.seal(material.version, digest(material.secret, message, algorithm)),
            material.version,
        )

    def verify(self, message: bytes, mac: bytes, algorithm: Algorithm, version: int | None) -> bool:
        return self.verified(
            mac,
            version,
            lambda material, bare: hmac.compare_digest(
                digest(material.secret, message, algorithm), bare
            ),
        )
