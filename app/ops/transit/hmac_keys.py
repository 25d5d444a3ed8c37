"""Each key version's HMAC key, for Transit's `hmac` and `verify` with any key type.

Transit gives every version of every key an HMAC key of its own beside its secret (an `hmac`
key's is its secret). Here a version's HMAC key is, for an `hmac` key, its secret; for a key
restored from a Vault or OpenBao backup, the version's HMAC key that the backup carried, kept in
the key's parameters sealed (AES-256-GCM) under a key derived from the version's own secret, so
that it is as secret as that secret and no other row holds anything of it; for any other key,
HKDF-SHA256 of the version's secret (`info` below), drawn again whenever it is needed.

A native backup carries the sealed ones as they are (`for_backup`), beside the secrets that open
them; its import takes them only once each opens under its version's secret (`carried`), so
that the key MACs there as it did here.
"""

import base64
import os
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.ops.transit.types import vault_has
from app.store import KeyInfo, KeyMaterial

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
    return _opened(material.secret, material.version, sealed)


def _opened(secret: bytes, version: int, sealed_key: str) -> bytes:
    """The HMAC key `sealed_key` seals under the version's secret (ValueError or InvalidTag
    when it does not)."""
    blob = base64.b64decode(sealed_key, validate=True)
    seal = AESGCM(_hkdf(secret, _SEAL_INFO))
    return seal.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], _aad(version))


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


def for_backup(key: KeyInfo) -> dict[str, str]:
    """The sealed HMAC keys of the key's versions, as its native backup carries them: not those
    of versions trimmed away, which the backup does not hold."""
    held = {str(version.version) for version in key.versions}
    return {number: text for number, text in key.params.get(PARAM, {}).items() if number in held}


def carried(
    key_type: str, sealed_keys: Mapping[str, str], secrets: Mapping[int, bytes]
) -> dict[str, str]:
    """A native backup's sealed HMAC keys as the parameters keep them, checked now since one that
    did not open would fail every HMAC of its version later: each of a version the backup holds
    (`secrets`: its versions' secrets) and opening under that version's secret, on a key of a
    type whose Transit backups bring HMAC keys (one Vault has, but `hmac`, whose HMAC key is its
    secret). ValueError saying what is wrong otherwise."""
    if key_type == "hmac" or not vault_has(key_type):
        raise ValueError(f"{key_type} keys keep no HMAC keys of their own")
    by_number = {str(version): secret for version, secret in secrets.items()}
    for number, sealed_key in sealed_keys.items():
        if number not in by_number:
            raise ValueError(
                "names a version the backup does not hold (each by its number in decimal)"
            )
        try:
            _opened(by_number[number], int(number), sealed_key)
        except (ValueError, InvalidTag):
            raise ValueError(
                f"version {number}'s is not base64 of an HMAC key sealed under its secret"
            ) from None
    return dict(sealed_keys)
