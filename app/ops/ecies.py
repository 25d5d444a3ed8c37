"""ECIES with server-held keys, and to a public key given in the request.

Bare payloads are exactly eciespy's and eciesjs's, so a client can encrypt locally to the key's
public part and have the service decrypt. Encryption answers with the key version it used and,
unless asked not to, a payload in the envelope that names it (`app.ops.envelope`).
"""

import os
from functools import lru_cache
from typing import Literal, Protocol

from app.ops.envelope import Sealed, sealed
from app.ops.errors import failed_with, invalid_input
from app.ops.versioned import VersionedKey
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core import ecies
from core.errors import DecryptionError

Curve = Literal["secp256k1", "x25519", "ed25519"]


class Options(Protocol):
    """eciespy's Config without the curve, which the key's type fixes. Hashable: a few dozen
    distinct values map to cached `Config`s."""

    @property
    def is_ephemeral_key_compressed(self) -> bool: ...
    @property
    def is_hkdf_key_compressed(self) -> bool: ...
    @property
    def symmetric_algorithm(self) -> Literal["aes-256-gcm", "xchacha20"]: ...
    @property
    def symmetric_nonce_length(self) -> Literal[12, 16, 24]: ...
    def __hash__(self) -> int: ...


@lru_cache(maxsize=256)  # a Config costs more to build and check than to look up; few exist
def config(curve: str, options: Options) -> ecies.Config:
    """The library's Config for a key of `curve` and the caller's options (422 if AES-256-GCM
    is asked for with a 24-byte nonce)."""
    nonce_length = (
        16 if options.symmetric_algorithm == "xchacha20" else options.symmetric_nonce_length
    )
    if options.symmetric_algorithm == "aes-256-gcm" and nonce_length == 24:
        raise invalid_input("config.symmetric_nonce_length: AES-256-GCM takes 12 or 16")
    return ecies.Config(
        elliptic_curve=curve,
        is_ephemeral_key_compressed=options.is_ephemeral_key_compressed,
        is_hkdf_key_compressed=options.is_hkdf_key_compressed,
        symmetric_algorithm=options.symmetric_algorithm,
        symmetric_nonce_length=nonce_length,
    )


def _encrypt(material: KeyMaterial, plaintext: bytes, options: Options) -> bytes:
    settings = config(material.type.removeprefix("ecies-"), options)
    with timed("ecies", "encrypt"):
        return ecies.encrypt(
            material.public or b"", plaintext, settings, receiver_sk=material.secret
        )


def _decrypt(material: KeyMaterial, ciphertext: bytes, options: Options) -> bytes:
    settings = config(material.type.removeprefix("ecies-"), options)
    with timed("ecies", "decrypt"):
        try:
            return ecies.decrypt(material.secret, ciphertext, settings)
        except DecryptionError:
            raise failed_with(material, "decryption-failed", "Decryption failed") from None


class EciesKey(VersionedKey):
    """An ECIES key of a request; `options` are eciespy's, for the curve the key's type fixes."""

    types = frozenset({"ecies-secp256k1", "ecies-x25519", "ecies-ed25519"})
    used_for = "ECIES"

    def encrypt(
        self, plaintext: bytes, options: Options, envelope: bool = True, version: int | None = None
    ) -> Sealed:
        """Encrypt under `version` (default: the latest)."""
        material = self.encryption(version)
        return sealed(material.version, _encrypt(material, plaintext, options), envelope)

    def decrypt(self, ciphertext: bytes, version: int | None, options: Options) -> Sealed:
        return self.opened(
            ciphertext, version, lambda material, bare: _decrypt(material, bare, options)
        )

    def datakey(self, size: int, options: Options) -> tuple[bytes, Sealed]:
        """A fresh random data key of `size` bytes and its payload under the latest version,
        which `decrypt` opens."""
        key = os.urandom(size)
        return key, self.encrypt(key, options)

    def rewrap(
        self, ciphertext: bytes, version: int | None, options: Options, enveloped: bool
    ) -> Sealed:
        """The payload's plaintext under the latest version, without it leaving the service; a
        payload that does not open is refused as `decrypt` refuses it."""
        return self.encrypt(self.decrypt(ciphertext, version, options).data, options, enveloped)


def _encrypt_to(public_key: bytes, plaintext: bytes, curve: Curve, options: Options) -> bytes:
    with timed("ecies", "encrypt"):
        return ecies.encrypt(public_key, plaintext, config(curve, options))


async def encrypt_to(public_key: bytes, plaintext: bytes, curve: Curve, options: Options) -> bytes:
    """ECIES to a public key given by the caller: no stored key."""
    return await compute(len(plaintext), _encrypt_to, public_key, plaintext, curve, options)
