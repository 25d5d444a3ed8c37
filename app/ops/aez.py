"""AEZ v5 with server-held keys: encrypt and decrypt, one payload or many.

The parameters are the node package `aez`'s: a nonce of any length (omitted: empty), a vector of
associated-data strings, and tau, the expansion in bytes. AEZ stays secure when a nonce repeats,
except that equal messages then give equal ciphertexts. A ciphertext that does not authenticate
is a 400 that says only that.
"""

from collections.abc import Callable, Sequence
from typing import Protocol

from app.ops.ecies import Sealed
from app.ops.errors import decryptable, failed_with, wrong_key_type
from app.ops.keyring import Keyring
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core import aez

MAX_TAU = aez.MAX_TAU


class Params(Protocol):
    @property
    def nonce(self) -> bytes: ...
    @property
    def ad(self) -> Sequence[bytes] | None: ...
    @property
    def tau(self) -> int: ...


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
    """AEZ with the keys of one keyring."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    async def encrypt(self, name: str, params: Params, plaintext: bytes) -> Sealed:
        material = _checked(await self.keyring.fetch(name))
        ciphertext = await compute(len(plaintext), _encrypt, material, params, plaintext)
        return Sealed(ciphertext, material.version)

    async def decrypt(
        self, name: str, params: Params, ciphertext: bytes, version: int | None
    ) -> Sealed:
        material = decryptable(_checked(await self.keyring.fetch(name, version)))
        plaintext = await compute(len(ciphertext), _decrypt, material, params, ciphertext)
        return Sealed(plaintext, material.version)

    def encryptor(self, name: str) -> Callable[[Params, bytes], Sealed]:
        """Encryption of many plaintexts under the latest version, read once: an unknown key or
        a key of another type fails here, before any item."""
        material = _checked(self.keyring.material(name))

        def encrypt(params: Params, plaintext: bytes) -> Sealed:
            return Sealed(_encrypt(material, params, plaintext), material.version)

        return encrypt

    def decryptor(self, name: str) -> Callable[[Params, bytes, int | None], Sealed]:
        """Decryption of many ciphertexts, each under the version it names."""
        _checked(self.keyring.material(name))

        def decrypt(params: Params, ciphertext: bytes, version: int | None) -> Sealed:
            material = decryptable(_checked(self.keyring.material(name, version)))
            return Sealed(_decrypt(material, params, ciphertext), material.version)

        return decrypt
