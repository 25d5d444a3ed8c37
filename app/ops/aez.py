"""AEZ v5 with server-held keys: encrypt, decrypt, data keys, rewrap.

The parameters are the node package `aez`'s: a nonce of any length (omitted: empty), a vector of
associated-data strings, and tau, the expansion in bytes. AEZ stays secure when a nonce repeats,
except that equal messages then give equal ciphertexts. A ciphertext that does not authenticate
is a 400 that says only that.
"""

import os
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from app.ops import envelope
from app.ops.envelope import Sealed
from app.ops.errors import failed_with, invalid_input
from app.ops.sealing import SealingKey
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


class AezKey(SealingKey[Params]):
    """An AEZ key of a request."""

    types = frozenset({"aez"})
    used_for = "AEZ"

    def seal(self, material: KeyMaterial, params: Params, plaintext: bytes) -> bytes:
        with timed("aez", "encrypt"):
            return aez.encrypt(material.secret, params.nonce, params.ad, params.tau, plaintext)

    def unseal(self, material: KeyMaterial, params: Params, payload: bytes) -> bytes:
        """The plaintext; a payload that does not authenticate is a 400 that says so."""
        with timed("aez", "decrypt"):
            plaintext = aez.decrypt(material.secret, params.nonce, params.ad, params.tau, payload)
        if plaintext is None:
            raise failed_with(material, "authentication-failed", "Authentication failed")
        return plaintext

    def decrypt(self, ciphertext: bytes, params: Params, version: int | None) -> Sealed:
        """A bare payload with a tag too short to tell versions apart (tau below
        MIN_TRIAL_TAU) is opened with the latest version only, and needs its key_version once
        there are several."""
        if (
            params.tau < envelope.MIN_TRIAL_TAU
            and self.latest.version > 1
            and envelope.wanted_version(envelope.parse(ciphertext)[0], version) is None
        ):
            raise invalid_input(
                f"key_version: a bare AEZ payload with tau {params.tau} (below "
                f"{envelope.MIN_TRIAL_TAU}) is not tried against several versions: its tag "
                "cannot tell them apart; give its key_version"
            )
        return super().decrypt(ciphertext, params, version)

    def datakey(self, size: int) -> tuple[bytes, Fresh, Sealed]:
        """A fresh random data key of `size` bytes, the parameters of its encryption and its
        ciphertext under the latest version, which `decrypt` opens with those parameters."""
        key, params = os.urandom(size), Fresh(os.urandom(DATAKEY_NONCE_BYTES), None, DATAKEY_TAU)
        return key, params, self.encrypt(key, params)
