"""AEZ v5 with server-held keys: encrypt and decrypt, one payload or many.

The parameters are the node package `aez`'s: a nonce of any length (omitted: empty), a vector of
associated-data strings, and tau, the expansion in bytes. AEZ stays secure when a nonce repeats,
except that equal messages then give equal ciphertexts. A ciphertext that does not authenticate
is a 400 that says only that.
"""

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple, Protocol

from app.ops import envelope
from app.ops.envelope import Sealed, sealed, warm
from app.ops.errors import decryptable, encryptable, failed_with, invalid_input, wrong_key_type
from app.ops.keyring import Keyring
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core import aez

MAX_TAU = aez.MAX_TAU
DATAKEY_NONCE_BYTES = 16
DATAKEY_TAU = 16


class Params(Protocol):
    @property
    def nonce(self) -> bytes: ...
    @property
    def ad(self) -> Sequence[bytes] | None: ...
    @property
    def tau(self) -> int: ...


class Fresh(NamedTuple):
    """The parameters of a data key's encryption: a fresh random nonce, no AD, tau 16."""

    nonce: bytes
    ad: Sequence[bytes] | None
    tau: int


def _fresh() -> Fresh:
    return Fresh(os.urandom(DATAKEY_NONCE_BYTES), None, DATAKEY_TAU)


def _checked(material: KeyMaterial) -> KeyMaterial:
    if material.type != "aez":
        raise wrong_key_type(material.name, material.type, "AEZ")
    return material


def _encrypt(material: KeyMaterial, params: Params, plaintext: bytes) -> bytes:
    with timed("aez", "encrypt"):
        return aez.encrypt(material.secret, params.nonce, params.ad, params.tau, plaintext)


def _decrypt(material: KeyMaterial, params: Params, ciphertext: bytes) -> bytes:
    with timed("aez", "decrypt"):
        plaintext = aez.decrypt(material.secret, params.nonce, params.ad, params.tau, ciphertext)
    if plaintext is None:
        raise failed_with(material, "authentication-failed", "Authentication failed")
    return plaintext


class Aez:
    """AEZ with the keys of one keyring; `trial_versions` bounds how many versions a bare
    payload is tried against (`app.ops.envelope`)."""

    def __init__(self, keyring: Keyring, trial_versions: int) -> None:
        self.keyring = keyring
        self.trial_versions = trial_versions

    async def encrypt(
        self,
        name: str,
        params: Params,
        plaintext: bytes,
        envelope: bool = True,
        version: int | None = None,
    ) -> Sealed:
        """Encrypt under `version` (default: the latest)."""
        material = encryptable(_checked(await self.keyring.fetch(name, version)))
        ciphertext = await compute(len(plaintext), _encrypt, material, params, plaintext)
        return sealed(material.version, ciphertext, envelope)

    async def decrypt(
        self, name: str, params: Params, ciphertext: bytes, version: int | None
    ) -> Sealed:
        await warm(self.keyring, name, ciphertext, version, self._trials(params))
        return await compute(len(ciphertext), self._open, name, params, ciphertext, version)

    async def datakey(self, name: str, size: int) -> tuple[bytes, Fresh, Sealed]:
        """A fresh random data key of `size` bytes, the parameters of its encryption and its
        ciphertext under the latest version, which `decrypt` opens with those parameters."""
        key, params = os.urandom(size), _fresh()
        return key, params, await self.encrypt(name, params, key)

    def datakeys(self, name: str) -> Callable[[int], tuple[bytes, Fresh, Sealed]]:
        """`datakey` many times, the latest version read once."""
        encrypt = self.encryptor(name)

        def datakey(size: int) -> tuple[bytes, Fresh, Sealed]:
            key, params = os.urandom(size), _fresh()
            return key, params, encrypt(params, key, True, None)

        return datakey

    async def rewrap(
        self, name: str, params: Params, ciphertext: bytes, version: int | None, enveloped: bool
    ) -> Sealed:
        """The ciphertext's plaintext under the latest version with the same parameters,
        without it leaving the service; one that does not authenticate is refused as `decrypt`
        refuses it."""
        opened = await self.decrypt(name, params, ciphertext, version)
        return await self.encrypt(name, params, opened.data, enveloped)

    def rewrapper(self, name: str) -> Callable[[Params, bytes, int | None, bool], Sealed]:
        """`rewrap` of many ciphertexts, the latest version read once."""
        decrypt, encrypt = self.decryptor(name), self.encryptor(name)

        def rewrap(params: Params, ciphertext: bytes, version: int | None, env: bool) -> Sealed:
            return encrypt(params, decrypt(params, ciphertext, version).data, env, None)

        return rewrap

    def _trials(self, params: Params) -> int:
        return self.trial_versions if params.tau >= envelope.MIN_TRIAL_TAU else 1

    def _open(self, name: str, params: Params, ciphertext: bytes, version: int | None) -> Sealed:
        named, payload = envelope.parse(ciphertext)
        wanted = envelope.wanted_version(named, version)
        if wanted is not None:
            material = decryptable(_checked(self.keyring.material(name, wanted)))
            return Sealed(_decrypt(material, params, payload), material.version)
        latest = decryptable(_checked(self.keyring.material(name)))
        if params.tau < envelope.MIN_TRIAL_TAU and latest.version > 1:
            raise invalid_input(
                f"key_version: a bare AEZ payload with tau {params.tau} (below "
                f"{envelope.MIN_TRIAL_TAU}) is not tried against several versions: its tag "
                "cannot tell them apart; give its key_version"
            )
        return Sealed(
            *envelope.open_bare(
                latest,
                self.trial_versions,
                lambda v: _checked(self.keyring.material(name, v)),
                lambda material: _decrypt(material, params, payload),
            )
        )

    def encryptor(self, name: str) -> Callable[[Params, bytes, bool, int | None], Sealed]:
        """Encryption of many plaintexts, each under the version it names or the latest, read
        once: an unknown key or a key of another type fails here, before any item."""
        latest = _checked(self.keyring.material(name))

        def encrypt(
            params: Params, plaintext: bytes, envelope: bool, version: int | None
        ) -> Sealed:
            material = latest if version is None else self.keyring.material(name, version)
            material = encryptable(material)
            return sealed(material.version, _encrypt(material, params, plaintext), envelope)

        return encrypt

    def decryptor(self, name: str) -> Callable[[Params, bytes, int | None], Sealed]:
        """Decryption of many ciphertexts, each under the version it or its envelope names (or
        tried, when bare)."""
        _checked(self.keyring.material(name))
        return partial(self._open, name)
