"""ECIES with server-held keys, and to a public key given in the request.

Bare payloads are exactly eciespy's and eciesjs's, so a client can encrypt locally to the key's
public part and have the service decrypt. Encryption answers with the key version it used and,
unless asked not to, a payload in the envelope that names it (`app.ops.envelope`).
"""

import os
from functools import lru_cache
from typing import Literal, NamedTuple, Protocol

from app.ops.envelope import Sealed
from app.ops.errors import invalid_input
from app.ops.sealing import SealingKey
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core import ecies

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


class Params(Protocol):
    """What an encryption takes beside its key: eciespy's options, as the JSON form's
    `config`."""

    @property
    def config(self) -> Options: ...


class Configured(NamedTuple):
    """Parameters that are options alone (a data key's)."""

    config: Options


class EciesKey(SealingKey[Params]):
    """An ECIES key of a request; its options are eciespy's, for the curve the key's type
    fixes."""

    types = frozenset({"ecies-secp256k1", "ecies-x25519", "ecies-ed25519"})
    used_for = "ECIES"

    def seal(self, material: KeyMaterial, params: Params, plaintext: bytes) -> bytes:
        settings = config(material.type.removeprefix("ecies-"), params.config)
        with timed("ecies", "encrypt"):
            return ecies.encrypt(
                material.public or b"", plaintext, settings, receiver_sk=material.secret
            )

    def unseal(self, material: KeyMaterial, params: Params, payload: bytes) -> bytes:
        settings = config(material.type.removeprefix("ecies-"), params.config)
        with timed("ecies", "decrypt"):
            return ecies.decrypt(material.secret, payload, settings)

    def datakey(self, size: int, params: Params) -> tuple[bytes, Sealed]:
        """A fresh random data key of `size` bytes and its payload under the latest version,
        which `decrypt` opens."""
        key = os.urandom(size)
        return key, self.encrypt(key, params)


def _encrypt_to(public_key: bytes, plaintext: bytes, curve: Curve, options: Options) -> bytes:
    with timed("ecies", "encrypt"):
        return ecies.encrypt(public_key, plaintext, config(curve, options))


async def encrypt_to(public_key: bytes, plaintext: bytes, curve: Curve, options: Options) -> bytes:
    """ECIES to a public key given by the caller: no stored key."""
    return await compute(len(plaintext), _encrypt_to, public_key, plaintext, curve, options)
