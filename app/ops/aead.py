"""AES-GCM and ChaCha20-Poly1305 with server-held keys: encrypt, decrypt, data keys, rewrap.

A payload is Vault Transit's: nonce (12 bytes) ‖ ciphertext ‖ tag (16), enveloped `cipherd:v<N>:`
unless asked not to (`core.aead`). A key created `derived` takes a `context` in every call and
encrypts under the key HKDF derives from it, as Transit's derived keys do; one created
`convergent` (derived too) takes its nonce from the plaintext, the associated data and the
context, so that equal inputs give equal payloads. A payload that does not open, for whatever
reason, is the same 400.
"""

import os
from typing import Protocol

from app.ops.envelope import Sealed
from app.ops.errors import invalid_input
from app.ops.sealing import SealingKey
from app.server.metrics import timed
from app.store import KeyMaterial
from core import aead

TYPES = frozenset(aead.KEY_BYTES)


class Params(Protocol):
    """What an encryption binds beside its key: the associated data, and for a derived key the
    context."""

    @property
    def associated_data(self) -> bytes: ...
    @property
    def context(self) -> bytes | None: ...


def _key(material: KeyMaterial, params: Params) -> aead.Derived:
    """The cipher of `material` for `params`: the version's own, or the one its context derives
    (422 for a context a key does not take, or none where it needs one)."""
    derived = material.params.get("derived")
    if not derived:
        if params.context is not None:
            raise invalid_input(
                f"context: key {material.name!r} is not derived: it takes no context"
            )
        return aead.Derived(material.prepared, None)
    if not params.context:
        raise invalid_input(
            f"context: key {material.name!r} is derived: every call gives its context "
            "(base64, not empty)"
        )
    return aead.derive(
        material.type, material.secret, params.context, bool(material.params.get("convergent"))
    )


class AeadKey(SealingKey[Params]):
    """An AES-GCM, ChaCha20-Poly1305 or XChaCha20-Poly1305 key of a request."""

    types = TYPES
    used_for = "AEAD"

    def seal(self, material: KeyMaterial, params: Params, plaintext: bytes) -> bytes:
        key, nonce_keys = _key(material, params)
        with timed("aead", "encrypt"):
            nonce = (
                None
                if nonce_keys is None
                else aead.convergent_nonce(
                    nonce_keys, plaintext, params.associated_data, aead.nonce_bytes(key)
                )
            )
            return aead.seal(key, plaintext, params.associated_data, nonce)

    def unseal(self, material: KeyMaterial, params: Params, payload: bytes) -> bytes:
        key = _key(material, params).key
        with timed("aead", "decrypt"):
            return aead.open_payload(key, payload, params.associated_data)

    def datakey(self, size: int, params: Params) -> tuple[bytes, Sealed]:
        """A fresh random data key of `size` bytes and its payload under the latest version,
        which `decrypt` opens with the same associated data and context."""
        key = os.urandom(size)
        return key, self.encrypt(key, params)
