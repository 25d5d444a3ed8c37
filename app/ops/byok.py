"""BYOK: key material made elsewhere (an HSM's, another KMS's, a file's), ECIES-encrypted to the
instance's wrapping key (`app.ops.backup`), taken in as a new key or as the next version of one
once its type's checks of material from elsewhere (`KeyType.take`) pass."""

from app.ops.backup import unwrap
from app.ops.errors import invalid_input, key_type_conflict
from app.ops.keyring import Keyring
from app.ops.keys import KeyOut, derivation_params, key_out
from app.ops.keytypes import KEY_TYPES
from app.store import KeyExistsError, KeyNotFoundError, KeyStore
from core.errors import EncodingError, InvalidKeyError

# The types whose material BYOK brings in.
BYOK_TYPES = tuple(name for name, key_type in KEY_TYPES.items() if key_type.byok)


def import_material(
    store: KeyStore,
    keyring: Keyring | None,
    name: str,
    key_type: str,
    wrapped: bytes,
    derivation: tuple[bool, bool] = (False, False),
) -> tuple[KeyOut, bool]:
    """BYOK: material ECIES-encrypted to the wrapping key, as a new key or as the next version
    of the key `name` of the same type; the key, and whether it is new. `derivation`: an AEAD
    key's (derived, convergent), as at creation; a next version's must be its key's."""
    if key_type not in BYOK_TYPES:
        raise invalid_input(
            f"type: material can be imported for {', '.join(BYOK_TYPES)}, not {key_type}"
        )
    params = derivation_params(key_type, *derivation)
    try:
        material = unwrap(store, wrapped, "wrapped_material")
        secret, public = KEY_TYPES[key_type].take(material, {})
    except (InvalidKeyError, EncodingError, ValueError) as exc:
        raise invalid_input(f"wrapped_material: {exc}") from None
    try:
        current = store.keys.get(name)
    except KeyNotFoundError:
        try:
            info = store.keys.create(name, key_type, params, False, secret, public)
            return key_out(info, with_versions=True), True
        except KeyExistsError:  # made meanwhile by another import: this one is its next version
            current = store.keys.get(name)
    if current.type != key_type:
        raise key_type_conflict(f"key {name!r} has type {current.type}, not {key_type}")
    held = {option: True for option in ("derived", "convergent") if current.params.get(option)}
    if any(derivation) and params != held:
        raise key_type_conflict(
            f"key {name!r} is derived={bool(held.get('derived'))}, "
            f"convergent={bool(held.get('convergent'))}: a next version keeps its key's"
        )
    info = store.keys.rotate(name, secret, public, current.created_at)
    if keyring is not None:
        keyring.forget(name)
    return key_out(info, with_versions=True), False
