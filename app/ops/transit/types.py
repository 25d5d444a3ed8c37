"""Transit's key types and the service's: `aes256-gcm96` is `aes256-gcm`, and so on. A native
type Transit has no name for (ECIES, AEZ, secp256k1, HPKE, ...) goes by its own name; FE keys
have no Transit verb and are not Transit's."""

from app.ops.errors import invalid_input
from app.ops.keytypes import KEY_TYPES

DEFAULT_TYPE = "aes256-gcm96"

# Transit's name -> the service's, for the types both have.
_NATIVE = {
    "aes128-gcm96": "aes128-gcm",
    "aes256-gcm96": "aes256-gcm",
    "chacha20-poly1305": "chacha20-poly1305",
    "xchacha20-poly1305": "xchacha20-poly1305",
    "ed25519": "ed25519",
    "ecdsa-p256": "ecdsa-p256",
    "ecdsa-p384": "ecdsa-p384",
    "ecdsa-p521": "ecdsa-p521",
    "rsa-2048": "rsa-2048",
    "rsa-3072": "rsa-3072",
    "rsa-4096": "rsa-4096",
    "hmac": "hmac",
}
_TRANSIT = {native: transit for transit, native in _NATIVE.items()}
# Native families with no Transit verb.
_NOT_TRANSIT = frozenset({"fe"})


def native_type(transit: str) -> str:
    """The service's type for a Transit type (400 for one it does not have)."""
    native = _NATIVE.get(transit, transit)
    if native not in KEY_TYPES or KEY_TYPES[native].family in _NOT_TRANSIT:
        offered = sorted({transit_type(t) for t in KEY_TYPES if is_transit(t)})
        raise invalid_input(f"unknown key type {transit}; one of {', '.join(offered)}")
    return native


def transit_type(native: str) -> str:
    return _TRANSIT.get(native, native)


def vault_has(native: str) -> bool:
    """Whether Vault's Transit has the type too: only such keys come from its backups."""
    return native in _TRANSIT


def is_transit(native: str) -> bool:
    return native in KEY_TYPES and KEY_TYPES[native].family not in _NOT_TRANSIT


def family(native: str) -> str:
    return KEY_TYPES[native].family
