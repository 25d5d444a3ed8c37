"""Transit's key lifecycle (`keys/:name`, `config`, `rotate`, `trim`, `export`, `delete`) on
the service's keys, through `app.ops.keys`.

Transit's settings and the service's policies are the same ones under other names:
`deletion_allowed` is the absence of `deletion_protection` (a key made through Transit is
protected until its configuration allows deletion, as Transit's are), `allow_plaintext_backup`
the key's `allow_backup`, `auto_rotate_period` its `auto_rotate_seconds`. A Transit delete is
the service's: the key goes to pending deletion for the deletion window and a restore brings it
back, where Vault destroys it at once.
"""

import base64
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import StrictInt, ValidationError

from app.ops import keys
from app.ops.errors import Problem, forbidden, invalid_input
from app.ops.imported import IMPORTED, IMPORTED_ROTATES
from app.ops.keyring import Keyring
from app.ops.keys import KEY_NAME_PATTERN, KeyCreate, KeyPatch
from app.ops.keytypes import HMAC_KEY_BYTES, KEY_TYPES, derivable, is_derived, stored_key
from app.ops.transit import hmac_keys, mount_config
from app.ops.transit.mounts import transit_names
from app.ops.transit.types import DEFAULT_TYPE, family, native_type, transit_type
from app.ops.vault_fields import VaultBody, VaultBool, VaultInt, duration_seconds, vault_time
from app.settings import Settings
from app.store import KeyExistsError, KeyInfo, KeyNotFoundError, KeyStore, SecretMount
from app.store.patterns import Scope
from core.sign import ed25519

# What each family does in Transit's terms: encryption, decryption, signing (derivation is
# `keytypes.derivable`'s).
_SUPPORTS = {
    "aead": (True, True, False),
    "sign": (False, False, True),
    "hmac": (False, False, False),
    "hpke": (True, True, False),
}
_NAME = re.compile(KEY_NAME_PATTERN)
# What Transit names a signing key's versions when it is not the key's type: ECDSA's curve.
_VERSION_NAMES = {"ecdsa-p256": "P-256", "ecdsa-p384": "P-384", "ecdsa-p521": "P-521"}
# The most versions of a derived Ed25519 key whose public keys one read derives for a context.
MAX_DERIVED_VERSIONS = 100
# The smallest automatic rotation period Transit takes (other than 0, none).
MIN_AUTO_ROTATE_SECONDS = 3600
# A key's parameters that keep its last Transit backup's and restore's time and version, which
# its reads show, as Vault's.
BACKUP_INFO, RESTORE_INFO = "backup_info", "restore_info"


class TransitKeyCreate(VaultBody):
    """`POST keys/:name`: Transit's creation fields."""

    type: str = DEFAULT_TYPE
    exportable: VaultBool = False
    allow_plaintext_backup: VaultBool = False
    derived: VaultBool = False
    convergent_encryption: VaultBool = False
    auto_rotate_period: StrictInt | str = 0
    key_size: VaultInt = 0


class TransitKeyConfig(VaultBody):
    """`POST keys/:name/config`: what may change."""

    min_decryption_version: VaultInt | None = None
    min_encryption_version: VaultInt | None = None
    deletion_allowed: VaultBool | None = None
    exportable: VaultBool | None = None
    allow_plaintext_backup: VaultBool | None = None
    auto_rotate_period: StrictInt | str | None = None


def checked_name(native: str) -> str:
    """A native key name from a Transit one (400 if the service cannot name a key so)."""
    if not _NAME.fullmatch(native):
        raise invalid_input(
            f"key name {native[:64]!r}: letters, digits, '.', '_' and '-', at most 128 "
            "characters with the mount's prefix"
        )
    return native


def min_available_version(info: KeyInfo) -> int:
    """Transit's min_available_version: the oldest version kept, 0 while none was trimmed."""
    oldest = min((v.version for v in info.versions), default=1)
    return oldest if oldest > 1 else 0


def key_data(store: KeyStore, info: KeyInfo, name: str, context: bytes = b"") -> dict[str, Any]:
    """A key as Transit's `keys/:name` answers it (`name` the Transit name). A derived Ed25519
    key's versions show the public keys `context` derives, none without one."""
    kind = family(info.type)
    encrypts, decrypts, signs = _SUPPORTS.get(kind, (False, False, False))
    if info.type.startswith("rsa-"):  # Transit's RSA keys also encrypt (OAEP)
        encrypts = decrypts = True
    # Transit lists the versions still in use: from min_decryption_version.
    usable = [v for v in info.versions if v.version >= info.min_decryption_version]
    if kind == "sign":
        if is_derived(info.type, info.params):
            publics = _derived_publics(store, info.name, [v.version for v in usable], context)
        else:
            publics = store.keys.public_parts(info.name, info.min_decryption_version)
        versions: dict[str, Any] = {}
        for v in usable:
            versions[str(v.version)] = {
                "certificate_chain": "",
                "creation_time": vault_time(v.created_at),
                "name": _VERSION_NAMES.get(info.type, transit_type(info.type)),
                "public_key": public_key_text(info.type, publics.get(v.version) or b""),
            }
    else:
        versions = {str(v.version): int(v.created_at) for v in usable}
    data: dict[str, Any] = {
        "allow_plaintext_backup": bool(info.params.get("allow_backup")),
        "auto_rotate_period": int(info.auto_rotate_seconds or 0),
        "deletion_allowed": not info.deletion_protection,
        "derived": bool(info.params.get("derived")),
        "exportable": info.exportable,
        "imported_key": bool(info.params.get(IMPORTED)),
        "keys": versions,
        "latest_version": info.latest_version,
        "min_available_version": min_available_version(info),
        "min_decryption_version": info.min_decryption_version,
        "min_encryption_version": info.min_encryption_version,
        "name": name,
        "soft_deleted": False,
        "supports_decryption": decrypts,
        "supports_derivation": derivable(info.type),
        "supports_encryption": encrypts,
        "supports_signing": signs,
        "type": transit_type(info.type),
    }
    if data["imported_key"]:
        data["imported_key_allow_rotation"] = bool(info.params.get(IMPORTED_ROTATES))
    for recorded in (BACKUP_INFO, RESTORE_INFO):
        if recorded in info.params:
            data[recorded] = info.params[recorded]
    if kind == "hmac":  # Transit shows an hmac key's size, not its versions
        del data["keys"]
        latest = store.keys.material(info.name, info.latest_version)
        data["key_size"] = len(latest.secret)
    if data["derived"]:
        data["kdf"] = "hkdf_sha256"
        data["convergent_encryption"] = bool(info.params.get("convergent"))
        if data["convergent_encryption"]:  # as Vault shows a key of its current scheme
            data["convergent_encryption_version"] = -1
    return data


def _derived_publics(
    store: KeyStore, name: str, versions: Sequence[int], context: bytes
) -> dict[int, bytes | None]:
    """The public key `context` derives from each of a derived Ed25519 key's `versions`; none
    without a context. Each costs an unwrap and a derivation: at most MAX_DERIVED_VERSIONS
    (400 past them, before any)."""
    if not context:
        return {}
    if len(versions) > MAX_DERIVED_VERSIONS:
        raise invalid_input(
            f"context: the public keys of at most {MAX_DERIVED_VERSIONS} versions are derived "
            f"at once, and key {name!r} has {len(versions)} from its min_decryption_version"
        )
    publics: dict[int, bytes | None] = {}
    for version in versions:
        secret = store.keys.material(name, version).secret
        publics[version] = ed25519.derive(ed25519.SigningKey(secret), secret, context).public
    return publics


def public_key_text(native: str, public: bytes) -> str:
    """A version's public key as Transit shows it: base64 for Ed25519, PEM otherwise."""
    if native == "ed25519":
        return base64.b64encode(public).decode()
    pem = KEY_TYPES[native].public(public, "pem")
    return str(pem)


def create(
    store: KeyStore,
    name: str,
    body: TransitKeyCreate,
    settings: Settings,
    material: bytes | None = None,
    noted: dict[str, Any] | None = None,
) -> KeyInfo:
    """Make the key unless it exists (Transit's create is idempotent): the key. `material`: made
    elsewhere rather than drawn here, with the parameters `noted` that mark it so
    (`app.ops.transit.imports`); such a creation is not idempotent: KeyExistsError if the name
    is taken, even by a key made meanwhile."""
    # Vault's checks of the options come first, as in Vault: a bad one is a 400 for a key that
    # exists too.
    native = native_type(body.type)
    if body.convergent_encryption and not body.derived:
        raise invalid_input("convergent encryption requires derivation to be enabled")
    if body.type != "hmac" and body.key_size:
        raise invalid_input(f"key_size is not valid for algorithm {body.type}")
    period = rotation_period(body.auto_rotate_period)
    existing = existing_key(store, name)
    if existing is not None:
        if material is not None:
            raise KeyExistsError(name)
        return existing
    if body.type == "hmac" and body.key_size not in (0, HMAC_KEY_BYTES):
        raise invalid_input(f"key_size: this service's hmac keys have {HMAC_KEY_BYTES} bytes")
    request = KeyCreate(
        name=name,
        type=native,
        exportable=body.exportable,
        allow_backup=body.allow_plaintext_backup,
        deletion_protection=True,
        derived=body.derived,
        convergent=body.convergent_encryption,
    )
    patch = key_patch(auto_rotate_seconds=period) if period else None
    try:
        keys.create(store, request, settings, noted, material)
    except KeyExistsError:
        if material is not None:
            raise
        return store.keys.get(name)  # made meanwhile by another request: it stands
    if patch is not None:
        keys.change_policy(store, None, name, patch)
    return store.keys.get(name)


def existing_key(store: KeyStore, name: str) -> KeyInfo | None:
    """The key of that name, None if there is none; 400 if it is scheduled for deletion: the
    name is not free until the purge."""
    try:
        info = store.keys.get(name)
    except KeyNotFoundError:
        return None
    if info.state != "active":
        raise invalid_input(
            f"key {name[:128]!r} is scheduled for deletion: restore it "
            f"(POST /v1/keys/{name[:128]}/restore) or use another name until it is purged"
        )
    return info


def active(store: KeyStore, name: str) -> KeyInfo:
    """The key, unless it is scheduled for deletion: then it is gone for Transit, though it may
    still be restored (KeyNotFoundError, as for a key that never was)."""
    info = store.keys.get(name)
    if info.state != "active":
        raise KeyNotFoundError(name)
    return info


@contextmanager
def missing_as(words: str) -> Iterator[None]:
    """A key that does not exist as Vault answers a change to it: 400 with its `words`, where
    a read is a 404."""
    try:
        yield
    except KeyNotFoundError:
        raise invalid_input(words) from None


def exists(store: KeyStore, name: str) -> bool:
    try:
        store.keys.get(name)
    except KeyNotFoundError:
        return False
    return True


def upsert(
    store: KeyStore,
    mount: SecretMount,
    name: str,
    body: TransitKeyCreate,
    may_create: bool,
    settings: Settings,
) -> None:
    """Make a missing key for an encryption when the caller may (403 otherwise, as OpenBao
    answers a token without the create capability) and the mount's `config/keys` does not
    `disable_upsert` (400)."""
    if not exists(store, name):
        if not may_create:
            raise forbidden("creating a key on its first encryption takes the admin token")
        if mount_config.keys_config(store, mount)["disable_upsert"]:
            raise invalid_input("encryption key not found")
        create(store, name, body, settings)


# Transit's names of the native policies a configuration sets under other names.
_TRANSIT_FIELDS = {
    "auto_rotate_seconds": "auto_rotate_period",
    "deletion_protection": "deletion_allowed",
}


def key_patch(**fields: Any) -> KeyPatch:
    """The native policy change of Transit's fields; a value the native bounds refuse is Vault's
    400 naming the field by Transit's name (pydantic's message, which does not repeat it)."""
    try:
        return KeyPatch(**fields)
    except ValidationError as exc:
        error = exc.errors(include_url=False, include_input=False)[0]
        field = str(error["loc"][0]) if error["loc"] else "body"
        raise invalid_input(f"{_TRANSIT_FIELDS.get(field, field)}: {error['msg']}") from None


def rotation_period(value: int | str | None) -> int | None:
    """An automatic rotation period in seconds (0: none), as Transit bounds it."""
    if value is None:
        return None
    try:
        period = duration_seconds(value)
    except ValueError as exc:
        raise invalid_input(f"auto_rotate_period: {exc}") from None
    except OverflowError:
        raise invalid_input("auto_rotate_period: a duration is from 0 to ten years") from None
    if period and period < MIN_AUTO_ROTATE_SECONDS:
        raise invalid_input("auto rotate period must be 0 to disable or at least an hour")
    return period


# Vault's warning when a min_decryption_version of 0 is taken as 1.
FORCED_TO_ONE = "transit key numbering starts at 1; forcing minimum to 1"


def configure(store: KeyStore, keyring: Keyring, name: str, body: TransitKeyConfig) -> KeyInfo:
    """Apply a Transit configuration change, all of it or none. As in Vault, `exportable` and
    `allow_plaintext_backup` only switch on (false leaves them as they are), and a
    `min_decryption_version` of 0 is 1 (`FORCED_TO_ONE`)."""
    period = rotation_period(body.auto_rotate_period)
    patch = key_patch(
        min_decryption_version=1
        if body.min_decryption_version == 0
        else body.min_decryption_version,
        min_encryption_version=body.min_encryption_version,
        deletion_protection=None if body.deletion_allowed is None else not body.deletion_allowed,
        exportable=True if body.exportable else None,
        auto_rotate_seconds=period,
    )
    with store.transaction() as held:
        if body.allow_plaintext_backup:
            held.keys.set_params(name, {"allow_backup": True})
        held.keys.set_policy(name, keys.policy_decision(patch))
    keyring.forget(name)
    return store.keys.get(name)


def rotate(store: KeyStore, keyring: Keyring, name: str) -> KeyInfo:
    keys.rotate(store, keyring, name)
    return store.keys.get(name)


def trim(store: KeyStore, keyring: Keyring, name: str, min_available: int) -> KeyInfo:
    """Destroy the versions below `min_available`, within Transit's bounds and with its refusals,
    in its order: never below what is available now, and only up to the key's
    min_encryption_version (which must be set) and min_decryption_version."""
    info = store.keys.get(name)
    if min_available < min_available_version(info):
        raise invalid_input("minimum available version cannot be decremented")
    if not info.min_encryption_version:
        raise invalid_input(
            "minimum available version cannot be set when minimum encryption version is not set"
        )
    for bound, what in (
        (info.min_encryption_version, "encryption"),
        (info.min_decryption_version, "decryption"),
    ):
        if min_available > bound:
            raise invalid_input(
                f"minimum available version cannot be greater than minimum {what} version"
            )
    if min_available == 0:
        raise invalid_input("minimum available version should be positive")
    keys.trim(store, keyring, name, min_available)
    return store.keys.get(name)


def delete(store: KeyStore, keyring: Keyring, name: str, settings: Settings) -> None:
    """Schedule the key's deletion (Transit's `deletion_allowed` is the key's consent)."""
    info = store.keys.get(name)
    if info.deletion_protection:
        raise invalid_input("deletion is not allowed for this key")
    keys.delete(store, keyring, name, None, settings)


_EXPORT_VERSION = re.compile(r"[+-]?[0-9]{1,18}")
EXPORT_TYPES = ("encryption-key", "signing-key", "hmac-key", "public-key")
_TRADITIONAL_PEM = frozenset(
    {"ecdsa-p256", "ecdsa-p384", "ecdsa-p521", "rsa-2048", "rsa-3072", "rsa-4096"}
)
_TRADITIONAL_PEM_FORMAT = (
    serialization.Encoding.PEM,
    serialization.PrivateFormat.TraditionalOpenSSL,
    serialization.NoEncryption(),
)


def export(
    store: KeyStore, name: str, export_type: str, version: str | None
) -> tuple[str, dict[str, str]]:
    """The key's Transit type and its versions' material of `export_type`, base64 (PEM for
    public keys other than Ed25519's)."""
    if export_type not in EXPORT_TYPES:
        raise invalid_input(f"invalid export type: {export_type}")
    info = store.keys.get(name)
    kind = family(info.type)
    if export_type == "encryption-key" and kind != "aead" and not info.type.startswith("rsa-"):
        raise invalid_input("encryption key not supported by this key type")
    if export_type == "signing-key" and kind != "sign":
        raise invalid_input("signing key not supported by this key type")
    if export_type == "public-key" and kind != "sign":
        raise invalid_input("public key not supported by this key type")
    if export_type != "public-key" and not info.exportable:
        raise Problem(
            400, "not-exportable", "Not exportable", "private key material is not exportable"
        )
    # As Vault, only the versions that may still decrypt: those below min_decryption_version
    # are retired.
    wanted = [v.version for v in info.versions if v.version >= info.min_decryption_version]
    if version is not None:
        number = info.latest_version if version == "latest" else _version_named(version)
        if number < info.min_decryption_version:
            raise invalid_input("version for export is below minimum decryption version")
        if number not in wanted:
            raise invalid_input("version does not exist or cannot be found")
        wanted = [number]
    exported = {}
    for number in wanted:
        material = store.keys.material(name, number)
        if export_type == "public-key":
            text = _as_transit_ends(info.type, public_key_text(info.type, material.public or b""))
        elif export_type == "hmac-key":
            text = base64.b64encode(hmac_keys.of(material)).decode()
        else:
            text = _private_text(info.type, material.secret, material.public)
        exported[str(number)] = text
    return transit_type(info.type), exported


def _version_named(text: str) -> int:
    """An export's version as Vault reads it: a number, with an optional `v` (strconv.Atoi)."""
    digits = text.removeprefix("v")
    if not _EXPORT_VERSION.fullmatch(digits):
        raise invalid_input("invalid key version")
    return int(digits)


def _as_transit_ends(native: str, pem: str) -> str:
    """An exported PEM ended as Transit ends it: with a newline for RSA, without for ECDSA."""
    return pem if native.startswith("rsa-") else pem.rstrip("\n")


def _private_text(native: str, secret: bytes, public: bytes | None) -> str:
    """A version's secret as Transit exports it: Ed25519 as its 64-byte private key (seed and
    public key), ECDSA and RSA keys as OpenSSL's traditional PEM (SEC1's `EC PRIVATE KEY`,
    PKCS#1's `RSA PRIVATE KEY`), raw keys in base64, others in their type's export form."""
    if native == "ed25519":
        return base64.b64encode(secret + (public or b"")).decode()
    if native in _TRADITIONAL_PEM:
        key = stored_key(native, secret)
        assert isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
        return _as_transit_ends(native, key.private_bytes(*_TRADITIONAL_PEM_FORMAT).decode())
    exported = KEY_TYPES[native].export(secret)
    if exported.startswith(b"-----BEGIN"):
        return exported.decode()
    return base64.b64encode(exported).decode()


def listed(
    store: KeyStore, mount: SecretMount, others: tuple[str, ...], readable: Scope | None
) -> list[str]:
    """The Transit names of a mount's active keys, in name order, among those the caller may
    read (`readable`, `Principal.reach`; None: any key). The store filters by the mount's prefix
    and by them, so a narrow token's listing reads its own keys, not every key: 0.42 s a
    listing among 50,000."""
    mount_keys = [f"{mount.key_prefix}*"] if mount.key_prefix else None
    rows = store.keys.list(patterns=mount_keys, scope=readable)
    return transit_names(mount, [k.name for k in rows if k.state == "active"], others)
