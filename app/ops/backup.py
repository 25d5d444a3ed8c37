"""Keys that leave one instance and arrive in another: the instance's wrapping key pair, backups
encrypted to another instance's wrapping key, and their import; and BYOK, key material made
elsewhere and encrypted to the wrapping key.

The wrapping key is ECIES on secp256k1, and every blob is an ECIES payload in eciespy's default
form (uncompressed ephemeral key, 16-byte nonce, AES-256-GCM), so eciespy, eciesjs or
`core.ecies` can make BYOK material. A backup holds every version of a key and every policy (its
parameters) as JSON: only keys created with `allow_backup` (which nothing clears) leave.
"""

import base64
import binascii
import json
import re
from typing import Any

from app.ops import mac
from app.ops.errors import Problem, invalid_input
from app.ops.keyring import Keyring
from app.ops.keys import AEZ_KEY_BYTES, KEY_NAME_PATTERN, KEY_TYPES, KeyOut, key_out
from app.store import KeyNotFoundError, KeyPolicies, KeyStore, RestoredVersion
from core import ecies
from core.errors import DecryptionError, InvalidKeyError

BACKUP_FORMAT = "cipherd-key-backup-v1"
WRAPPING_CURVE = "secp256k1"
# What BYOK brings in: the secret of each type, as the service would draw it.
BYOK_SECRET_BYTES = {
    "ecies-secp256k1": 32,
    "ecies-x25519": 32,
    "ecies-ed25519": 32,
    "aez": AEZ_KEY_BYTES,
    "ecdsa-secp256k1": 32,
    "ed25519": 32,
    "hmac": mac.KEY_BYTES,
}


def _keypair() -> tuple[bytes, bytes]:
    return ecies.generate_keypair(WRAPPING_CURVE)


def wrapping_public_key(store: KeyStore) -> bytes:
    """The instance's wrapping public key (SEC1, 65 bytes), made the first time it is asked."""
    return store.wrapping_key(_keypair)[1]


def _unwrap(store: KeyStore, blob: bytes, what: str) -> bytes:
    secret, _ = store.wrapping_key(_keypair)
    try:
        return ecies.decrypt(secret, blob)
    except DecryptionError:
        raise Problem(
            422,
            "unwrap-failed",
            "Does not decrypt",
            f"{what} does not decrypt under this instance's wrapping key "
            "(GET /v1/sys/wrapping-key)",
        ) from None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def backup(store: KeyStore, name: str, wrapping_key: bytes) -> bytes:
    """Every version and the parameters of `name`, ECIES-encrypted to `wrapping_key`."""
    info = store.get(name)
    if not info.params.get("allow_backup"):
        raise Problem(
            403,
            "backup-not-allowed",
            "Backup not allowed",
            f"key {name!r} was not created with allow_backup",
        )
    versions = []
    for version in info.versions:
        material = store.material(name, version.version)
        versions.append(
            {
                "version": version.version,
                "created_at": version.created_at,
                "secret": _b64(material.secret),
                "public": _b64(material.public),
            }
        )
    document = {
        "format": BACKUP_FORMAT,
        "name": info.name,
        "type": info.type,
        "params": info.params,
        "exportable": info.exportable,
        "policies": {
            "deletion_protection": info.deletion_protection,
            "min_decryption_version": info.min_decryption_version,
            "min_encryption_version": info.min_encryption_version,
            "auto_rotate_seconds": info.auto_rotate_seconds,
        },
        "versions": versions,
    }
    try:
        return ecies.encrypt(wrapping_key, json.dumps(document).encode())
    except InvalidKeyError as exc:
        raise invalid_input(f"wrapping_key: {exc}") from None


def open_backup(store: KeyStore, blob: bytes) -> dict[str, Any]:
    """The content of a backup made for this instance (422 for any other)."""
    return _backup_document(_unwrap(store, blob, "backup"))


def restore(store: KeyStore, document: dict[str, Any], name: str | None) -> KeyOut:
    """The key of an opened backup, under its own name or `name`."""
    target = name or document["name"]
    versions = [
        RestoredVersion(v["version"], v["created_at"], v["secret"], v["public"])
        for v in document["versions"]
    ]
    info = store.restore_backup(
        target,
        document["type"],
        document["params"],
        document["exportable"],
        versions,
        document["policies"],
    )
    return key_out(info, with_versions=True)


def _backup_document(plaintext: bytes) -> dict[str, Any]:
    """The backup's JSON, checked field by field (it authenticated, but may come from another
    version of this service)."""
    try:
        document: dict[str, Any] = json.loads(plaintext)
        if document.get("format") != BACKUP_FORMAT:
            raise ValueError("not a cipherd key backup of this format")
        if document["type"] not in KEY_TYPES:
            raise ValueError(f"unknown key type {document['type']!r}")
        if not re.fullmatch(KEY_NAME_PATTERN, document["name"]):
            raise ValueError("bad key name")
        if not isinstance(document["params"], dict) or not document["versions"]:
            raise ValueError("no parameters or no versions")
        for version in document["versions"]:
            if not (isinstance(version["version"], int) and version["version"] >= 1):
                raise ValueError("bad version number")
            version["created_at"] = float(version["created_at"])
            version["secret"] = base64.b64decode(version["secret"], validate=True)
            public = version["public"]
            version["public"] = None if public is None else base64.b64decode(public, validate=True)
        document["exportable"] = bool(document["exportable"])
        document["policies"] = KeyPolicies(**document["policies"])
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise invalid_input(f"backup: {exc}") from None
    return document


def import_material(
    store: KeyStore, keyring: Keyring | None, name: str, key_type: str, wrapped: bytes
) -> tuple[KeyOut, bool]:
    """BYOK: material ECIES-encrypted to the wrapping key, as a new key or as the next version
    of the key `name` of the same type; the key, and whether it is new."""
    wanted = BYOK_SECRET_BYTES.get(key_type)
    if wanted is None:
        raise invalid_input(
            f"type: material can be imported for {', '.join(BYOK_SECRET_BYTES)}, not {key_type}"
        )
    secret = _unwrap(store, wrapped, "wrapped_material")
    if len(secret) != wanted:
        raise invalid_input(
            f"wrapped_material: a {key_type} secret has {wanted} bytes, not {len(secret)}"
        )
    public = None
    public_of = KEY_TYPES[key_type].public_of
    if public_of is not None:
        try:
            public = public_of(secret)
        except InvalidKeyError as exc:
            raise invalid_input(f"wrapped_material: {exc}") from None
    try:
        current = store.get(name)
    except KeyNotFoundError:
        info = store.create(name, key_type, {}, False, secret, public)
        return key_out(info, with_versions=True), True
    if current.type != key_type:
        raise Problem(
            409,
            "wrong-key-type",
            "Wrong key type",
            f"key {name!r} has type {current.type}, not {key_type}",
        )
    info = store.rotate(name, secret, public, current.created_at)
    if keyring is not None:
        keyring.forget(name)
    return key_out(info, with_versions=True), False
