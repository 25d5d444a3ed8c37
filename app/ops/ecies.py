"""ECIES with server-held keys, in batches, and to a public key given in the request.

Bare payloads are exactly eciespy's and eciesjs's, so a client can encrypt locally to the key's
public part and have the service decrypt. Encryption answers with the key version it used and,
unless asked not to, a payload in the envelope that names it (`app.ops.envelope`).
"""

import os
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Literal, Protocol

from app.ops import envelope
from app.ops.envelope import Sealed, sealed, warm
from app.ops.errors import decryptable, encryptable, failed_with, invalid_input, wrong_key_type
from app.ops.keyring import Keyring
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


def _checked(material: KeyMaterial) -> KeyMaterial:
    if not material.type.startswith("ecies-"):
        raise wrong_key_type(material.name, material.type, "ECIES")
    return material


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


class Ecies:
    """ECIES with the keys of one keyring; `trial_versions` bounds how many versions a bare
    payload is tried against (`app.ops.envelope`)."""

    def __init__(self, keyring: Keyring, trial_versions: int) -> None:
        self.keyring = keyring
        self.trial_versions = trial_versions

    async def encrypt(
        self,
        name: str,
        plaintext: bytes,
        options: Options,
        envelope: bool = True,
        version: int | None = None,
    ) -> Sealed:
        """Encrypt under `version` (default: the latest)."""
        material = encryptable(_checked(await self.keyring.fetch(name, version)))
        payload = await compute(len(plaintext), _encrypt, material, plaintext, options)
        return sealed(material.version, payload, envelope)

    async def decrypt(
        self, name: str, ciphertext: bytes, version: int | None, options: Options
    ) -> Sealed:
        await warm(self.keyring, name, ciphertext, version, self.trial_versions)
        return await compute(len(ciphertext), self._open, name, ciphertext, version, options)

    def _open(self, name: str, ciphertext: bytes, version: int | None, options: Options) -> Sealed:
        named, payload = envelope.parse(ciphertext)
        wanted = envelope.wanted_version(named, version)
        if wanted is not None:
            material = decryptable(_checked(self.keyring.material(name, wanted)))
            return Sealed(_decrypt(material, payload, options), material.version)
        return Sealed(
            *envelope.open_bare(
                decryptable(_checked(self.keyring.material(name))),
                self.trial_versions,
                lambda v: _checked(self.keyring.material(name, v)),
                lambda material: _decrypt(material, payload, options),
            )
        )

    async def datakey(self, name: str, size: int, options: Options) -> tuple[bytes, Sealed]:
        """A fresh random data key of `size` bytes and its payload under the latest version,
        which `decrypt` opens."""
        key = os.urandom(size)
        return key, await self.encrypt(name, key, options)

    async def rewrap(
        self, name: str, ciphertext: bytes, version: int | None, options: Options, enveloped: bool
    ) -> Sealed:
        """The payload's plaintext under the latest version, without it leaving the service; a
        payload that does not open is refused as `decrypt` refuses it."""
        opened = await self.decrypt(name, ciphertext, version, options)
        return await self.encrypt(name, opened.data, options, enveloped)

    def datakeys(self, name: str) -> Callable[[int, Options], tuple[bytes, Sealed]]:
        """`datakey` many times, the latest version read once."""
        encrypt = self.encryptor(name)

        def datakey(size: int, options: Options) -> tuple[bytes, Sealed]:
            key = os.urandom(size)
            return key, encrypt(key, options, True, None)

        return datakey

    def rewrapper(self, name: str) -> Callable[[bytes, int | None, Options, bool], Sealed]:
        """`rewrap` of many payloads, the latest version read once."""
        decrypt, encrypt = self.decryptor(name), self.encryptor(name)

        def rewrap(ciphertext: bytes, version: int | None, options: Options, env: bool) -> Sealed:
            return encrypt(decrypt(ciphertext, version, options).data, options, env, None)

        return rewrap

    def encryptor(self, name: str) -> Callable[[bytes, Options, bool, int | None], Sealed]:
        """Encryption of many plaintexts, each under the version it names or the latest, read
        once: an unknown key or a key of another type fails here, before any item."""
        latest = _checked(self.keyring.material(name))

        def encrypt(
            plaintext: bytes, options: Options, envelope: bool, version: int | None
        ) -> Sealed:
            material = latest if version is None else self.keyring.material(name, version)
            material = encryptable(material)
            return sealed(material.version, _encrypt(material, plaintext, options), envelope)

        return encrypt

    def decryptor(self, name: str) -> Callable[[bytes, int | None, Options], Sealed]:
        """Decryption of many payloads, each under the version it or its envelope names (or
        tried, when bare)."""
        _checked(self.keyring.material(name))
        return partial(self._open, name)


def _encrypt_to(public_key: bytes, plaintext: bytes, curve: Curve, options: Options) -> bytes:
    with timed("ecies", "encrypt"):
        return ecies.encrypt(public_key, plaintext, config(curve, options))


async def encrypt_to(public_key: bytes, plaintext: bytes, curve: Curve, options: Options) -> bytes:
    """ECIES to a public key given by the caller: no stored key."""
    return await compute(len(plaintext), _encrypt_to, public_key, plaintext, curve, options)
