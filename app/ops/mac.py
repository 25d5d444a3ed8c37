"""HMAC with server-held `hmac` keys: SHA-256 by default, SHA-384 or SHA-512 on request.

An HMAC is answered in the envelope that names its key version (`cipherd:v<N>:` and the MAC's
bytes), as Transit answers `vault:v<N>:`, so that its verification finds the version by itself;
a bare MAC is checked against the versions a bare payload would be tried against. The
comparison is constant time (`hmac.compare_digest`).
"""

import hashlib
import hmac
from collections.abc import Callable
from functools import partial
from typing import Literal

from app.ops import envelope
from app.ops.envelope import Sealed, warm
from app.ops.errors import wrong_key_type
from app.ops.keyring import Keyring
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial

Algorithm = Literal["sha256", "sha384", "sha512"]
ALGORITHMS: tuple[Algorithm, ...] = ("sha256", "sha384", "sha512")
# 64 bytes: as long as SHA-512's output, the longest the algorithms need (RFC 2104, section 3).
KEY_BYTES = 64


def _checked(material: KeyMaterial) -> KeyMaterial:
    if material.type != "hmac":
        raise wrong_key_type(material.name, material.type, "HMAC")
    return material


def _mac(secret: bytes, message: bytes, algorithm: Algorithm) -> bytes:
    with timed("hmac", "hmac"):
        return hmac.digest(secret, message, getattr(hashlib, algorithm))


def _matches(material: KeyMaterial, message: bytes, mac: bytes, algorithm: Algorithm) -> bool:
    return hmac.compare_digest(_mac(material.secret, message, algorithm), mac)


def _sealed(material: KeyMaterial, message: bytes, algorithm: Algorithm) -> Sealed:
    return Sealed(
        envelope.seal(material.version, _mac(material.secret, message, algorithm)),
        material.version,
    )


class Mac:
    """HMAC with the keys of one keyring; `trial_versions` bounds the versions a bare MAC is
    checked against."""

    def __init__(self, keyring: Keyring, trial_versions: int) -> None:
        self.keyring = keyring
        self.trial_versions = trial_versions

    async def hmac(self, name: str, message: bytes, algorithm: Algorithm) -> Sealed:
        material = _checked(await self.keyring.fetch(name))
        return await compute(len(message), _sealed, material, message, algorithm)

    async def verify(
        self, name: str, message: bytes, mac: bytes, algorithm: Algorithm, version: int | None
    ) -> bool:
        await warm(self.keyring, name, mac, version, self.trial_versions)
        return await compute(len(message), self._verify, name, message, mac, algorithm, version)

    def _verify(
        self, name: str, message: bytes, mac: bytes, algorithm: Algorithm, version: int | None
    ) -> bool:
        return envelope.verified(
            self.keyring,
            name,
            mac,
            version,
            self.trial_versions,
            _checked,
            lambda material, bare: _matches(material, message, bare, algorithm),
        )

    def hasher(self, name: str) -> Callable[[bytes, Algorithm], Sealed]:
        """HMACs of many messages under the latest version, read once."""
        return partial(_sealed, _checked(self.keyring.material(name)))

    def verifier(self, name: str) -> Callable[[bytes, bytes, Algorithm, int | None], bool]:
        """Verification of many HMACs, each under its version (or tried, when bare)."""
        _checked(self.keyring.material(name))
        return partial(self._verify, name)
