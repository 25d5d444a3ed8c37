"""Transit's key import (BYOK): `wrapping_key` gives the store's RSA-4096 import key, to which
material made elsewhere is wrapped (`core.keywrap`, RSA-OAEP over AES key wrap with padding, as
`bao transit import` wraps it); `keys/:name/import` makes a new key of it and
`keys/:name/import_version` a new version of an imported key.

The material is Vault's: the raw key of an AEAD or HMAC type, the PKCS#8 DER of an asymmetric
one. An imported key is marked so in its parameters (`imported.IMPORTED`); unless imported with
`allow_rotation`, the service never rotates it (`imported.refuse_rotation`). Only private keys are
imported: Vault's import of a bare public key has no counterpart here.
"""

from functools import partial

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from pydantic import StrictInt

from app.ops.imported import IMPORTED, IMPORTED_ROTATES, taken
from app.ops.keyring import Keyring
from app.ops.keytypes import KEY_TYPES
from app.ops.transit import keys as transit_keys
from app.ops.transit.crypto import decoded, user_error
from app.ops.transit.keys import TransitKeyCreate
from app.ops.transit.types import DEFAULT_TYPE, native_type
from app.ops.vault_fields import VaultBody, VaultBool, VaultInt
from app.settings import Settings
from app.store import KeyExistsError, KeyNotFoundError, KeyStore
from core import keywrap
from core.errors import DecryptionError
from core.sign import rsa as rsa_keys

IMPORT_KEY_BITS = 4096
# The Transit types Vault imports (its `import` path's list).
IMPORTED_TYPES = frozenset(
    {
        "aes128-gcm96",
        "aes256-gcm96",
        "chacha20-poly1305",
        "xchacha20-poly1305",
        "ecdsa-p256",
        "ecdsa-p384",
        "ecdsa-p521",
        "ed25519",
        "rsa-2048",
        "rsa-3072",
        "rsa-4096",
        "hmac",
    }
)


class TransitKeyImport(VaultBody):
    """`POST keys/:name/import`: the wrapped material and the key's creation fields."""

    ciphertext: str | None = None
    public_key: str | None = None
    hash_function: str = "SHA256"
    type: str = DEFAULT_TYPE
    allow_rotation: VaultBool = False
    derived: VaultBool = False
    exportable: VaultBool = False
    allow_plaintext_backup: VaultBool = False
    auto_rotate_period: StrictInt | str = 0
    convergent_encryption: VaultBool = False


class TransitVersionImport(VaultBody):
    """`POST keys/:name/import_version`: the wrapped material of the key's next version."""

    ciphertext: str | None = None
    public_key: str | None = None
    hash_function: str = "SHA256"
    version: VaultInt | None = None


_IMPORT_KEY_TYPE = f"rsa-{IMPORT_KEY_BITS}"
_import_pair = partial(rsa_keys.generate, IMPORT_KEY_BITS)


def wrapping_key_pem(store: KeyStore) -> str:
    """The import key's public part, as Transit's `wrapping_key` answers it (PEM)."""
    return str(KEY_TYPES[_IMPORT_KEY_TYPE].public(store.import_key.public(_import_pair), "pem"))


def _material(
    store: KeyStore, ciphertext: str | None, public_key: str | None, hash_function: str
) -> bytes:
    """The material a request's `ciphertext` wraps (400 for anything else)."""
    if public_key is not None and ciphertext is not None:
        raise user_error("only one of the following fields, ciphertext and public_key, can be set")
    if ciphertext is None:
        raise user_error(
            "ciphertext: the wrapped private key (an import of a bare public key is not served)"
        )
    hash_name = hash_function.upper()
    if hash_name not in keywrap.HASHES:
        raise user_error(f"unknown hash function: {hash_function}")
    wrapped = decoded(ciphertext, "ciphertext")
    private = rsa_keys.signing_key(store.import_key.pair(_import_pair)[0])
    try:
        return keywrap.unwrap(private, wrapped, hash_name)
    except DecryptionError as exc:
        raise user_error(f"ciphertext: {exc}") from None


def _native_material(native: str, material: bytes) -> bytes:
    """Vault's form of a key's material as the service takes it: an Ed25519 key's PKCS#8 as
    its 32-byte seed; the others as they are (raw, or PKCS#8 for ECDSA and RSA)."""
    if native != "ed25519":
        return material
    try:
        key = serialization.load_der_private_key(material, password=None)
    except ValueError:
        raise user_error("error parsing asymmetric key: not an Ed25519 key in PKCS#8") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise user_error("error parsing asymmetric key: not an Ed25519 key")
    return key.private_bytes_raw()


def _existing() -> Exception:
    return user_error(
        "the import path cannot be used with an existing key; use import-version to rotate an "
        "existing imported key"
    )


def import_key(
    store: KeyStore, keyring: Keyring, settings: Settings, name: str, body: TransitKeyImport
) -> int:
    """A new key of the material the body wraps: its version, 1."""
    if "convergent_encryption" in body.model_fields_set:  # even false, as Vault refuses it
        raise user_error("import cannot be used on keys with convergent encryption enabled")
    if transit_keys.rotation_period(body.auto_rotate_period) and not body.allow_rotation:
        raise user_error("allow_rotation must be set to true if auto-rotation is enabled")
    if body.type.lower() not in IMPORTED_TYPES:
        raise user_error(f"unknown key type: {body.type}")
    transit_type = body.type.lower()
    native = native_type(transit_type)
    if transit_keys.existing_key(store, name) is not None:
        raise _existing()
    wrapped = _material(store, body.ciphertext, body.public_key, body.hash_function)
    material = _native_material(native, wrapped)
    creation = TransitKeyCreate(
        type=transit_type,
        exportable=body.exportable,
        allow_plaintext_backup=body.allow_plaintext_backup,
        derived=body.derived,
        auto_rotate_period=body.auto_rotate_period,
    )
    noted = {IMPORTED: True, **({IMPORTED_ROTATES: True} if body.allow_rotation else {})}
    try:
        return transit_keys.create(store, name, creation, settings, material, noted).latest_version
    except KeyExistsError:  # made meanwhile
        raise _existing() from None


def import_version(
    store: KeyStore, keyring: Keyring, settings: Settings, name: str, body: TransitVersionImport
) -> int:
    """The material the body wraps as the next version of the imported key `name`: its
    number."""
    try:
        current = transit_keys.active(store, name)
    except KeyNotFoundError:
        raise user_error(
            f"no key found with name {name}; to import a new key, use the import/ endpoint"
        ) from None
    if not current.params.get(IMPORTED):
        raise user_error("the import_version endpoint can only be used with an imported key")
    if current.params.get("convergent"):
        raise user_error("import_version cannot be used on keys with convergent encryption enabled")
    if body.version is not None:
        raise user_error(
            "version: only a version imported as a bare public key takes its private key later, "
            "and bare public keys are not imported here"
        )
    wrapped = _material(store, body.ciphertext, body.public_key, body.hash_function)
    material = _native_material(current.type, wrapped)
    secret, public = taken(current.type, material, current.params)
    info = store.keys.rotate(name, secret, public, current.created_at)
    keyring.forget(name)
    return info.latest_version
