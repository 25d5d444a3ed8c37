"""Each key version's HMAC key, for Transit's `hmac` and `verify` with any key type.

Transit gives every version of every key an HMAC key of its own beside its secret (an `hmac`
key's is its secret). Here a version's HMAC key is, for an `hmac` key, its secret; for a key
restored from a Vault or OpenBao backup, the version's HMAC key that the backup carried, kept in
the key's parameters sealed (AES-256-GCM) under a key derived from the version's own secret, so
that it is as secret as that secret and no other row holds anything of it; for any other key,
HKDF-SHA256 of the version's secret (`info` below), drawn again whenever it is needed.
"""

import base64
import os
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.store import KeyMaterial

PARAM = "transit_hmac_keys"
HMAC_KEY_BYTES = 32
_DERIVED_INFO = b"cipherd transit hmac key"
_SEAL_INFO = b"cipherd transit hmac key seal"
_NONCE_BYTES = 12


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(hashes.SHA256(), 32, None, info).derive(secret)


def _aad(version: int) -> bytes:
    return f"transit-hmac-key:v{version}".encode()


def of(material: KeyMaterial) -> bytes:
    """The version's HMAC key."""
    if material.type == "hmac":
        return material.secret
    sealed = material.params.get(PARAM, {}).get(str(material.version))
    if sealed is None:
        return _hkdf(material.secret, _DERIVED_INFO)
    blob = base64.b64decode(sealed)
    seal = AESGCM(_hkdf(material.secret, _SEAL_INFO))
    return seal.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], _aad(material.version))


def sealed(secret: bytes, version: int, hmac_key: bytes) -> str:
    """`hmac_key` sealed under the version's secret, as the key's parameters keep it."""
    nonce = os.urandom(_NONCE_BYTES)
    seal = AESGCM(_hkdf(secret, _SEAL_INFO))
    return base64.b64encode(nonce + seal.encrypt(nonce, hmac_key, _aad(version))).decode()


def params_for(versions: dict[int, tuple[bytes, bytes]]) -> dict[str, Any]:
    """The parameters that carry HMAC keys of versions (version -> (secret, HMAC key)) that
    differ from the ones this module would derive."""
    kept = {
        str(version): sealed(secret, version, hmac_key)
        for version, (secret, hmac_key) in versions.items()
        if hmac_key != _hkdf(secret, _DERIVED_INFO)
    }
    return {PARAM: kept} if kept else {}
