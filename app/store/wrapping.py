"""Wrapping of stored secrets under the root key.

AES-256-GCM with a fresh 96-bit nonce per wrap. The associated data binds the key's name, version
and type, so a wrapped blob moved to another row (another key, version or type) fails to unwrap.
"""

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.store.errors import UnwrapError

NONCE_BYTES = 12


def associated_data(name: str, version: int, key_type: str) -> bytes:
    # Length-prefixed fields: no two identities share an encoding.
    parts = [b"cipherd-key-v1", name.encode(), str(version).encode(), key_type.encode()]
    return b"".join(len(part).to_bytes(4, "big") + part for part in parts)


class KeyWrapper:
    def __init__(self, root_key: bytes) -> None:
        self._aead = AESGCM(root_key)

    def wrap(self, secret: bytes, name: str, version: int, key_type: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, secret, associated_data(name, version, key_type))

    def unwrap(self, blob: bytes, name: str, version: int, key_type: str) -> bytes:
        try:
            return self._aead.decrypt(
                blob[:NONCE_BYTES], blob[NONCE_BYTES:], associated_data(name, version, key_type)
            )
        except (InvalidTag, ValueError) as exc:
            raise UnwrapError(
                f"stored secret of {name!r} version {version} does not authenticate"
            ) from exc
