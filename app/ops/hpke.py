"""HPKE (RFC 9180) with server-held keys, and to a public key given in the request.

The suite is the key type's KEM (DHKEM(X25519, HKDF-SHA256), or the post-quantum
MLKEM768-X25519) with HKDF-SHA256 and AES-256-GCM, base mode, single shot: a bare payload is
enc ‖ ciphertext, what any RFC 9180 implementation of the suite opens with the key's private
part, and opens here when made by one with its public part (`core.hpke`). A payload that does
not open, for whatever reason, is the same 400.
"""

from typing import Literal, Protocol

from app.ops.errors import invalid_input
from app.ops.sealing import SealingKey
from app.ops.work import compute
from app.server.metrics import timed
from app.store import KeyMaterial
from core import hpke
from core.errors import InvalidKeyError

TYPES = frozenset(f"hpke-{kem}" for kem in hpke.SECRET_BYTES)
KeyType = Literal["hpke-x25519", "hpke-mlkem768-x25519"]
PublicFormat = Literal["raw", "der"]


class Params(Protocol):
    """What an encryption binds beside its key: RFC 9180's info and associated data."""

    @property
    def info(self) -> bytes: ...
    @property
    def aad(self) -> bytes: ...


def _kem(key_type: str) -> str:
    return key_type.removeprefix("hpke-")


class HpkeKey(SealingKey[Params]):
    """An HPKE key of a request: its keyring entry holds the private key, of which the public
    part is computed (never read from storage)."""

    types = TYPES
    used_for = "HPKE"

    def seal(self, material: KeyMaterial, params: Params, plaintext: bytes) -> bytes:
        with timed("hpke", "encrypt"):
            public = material.prepared.public_key()
            return hpke.seal(_kem(material.type), public, plaintext, params.info, params.aad)

    def unseal(self, material: KeyMaterial, params: Params, payload: bytes) -> bytes:
        with timed("hpke", "decrypt"):
            kem = _kem(material.type)
            return hpke.open_payload(kem, material.prepared, payload, params.info, params.aad)


def _public_key(key_type: KeyType, encoded: bytes, form: PublicFormat) -> hpke.PublicKey:
    kem = _kem(key_type)
    try:
        if form == "raw":
            return hpke.public_key(kem, encoded)
        if kem != "x25519":
            raise invalid_input(
                f"format: an {key_type} public key has no DER encoding (SPKI) yet; give it raw"
            )
        return hpke.x25519_from_der(encoded)
    except InvalidKeyError as exc:
        raise invalid_input(f"public_key: {exc}") from None


def _encrypt_to(
    key_type: KeyType, encoded: bytes, form: PublicFormat, plaintext: bytes, params: Params
) -> bytes:
    public = _public_key(key_type, encoded, form)
    with timed("hpke", "encrypt"):
        return hpke.seal(_kem(key_type), public, plaintext, params.info, params.aad)


async def encrypt_to(
    key_type: KeyType, encoded: bytes, form: PublicFormat, plaintext: bytes, params: Params
) -> bytes:
    """HPKE to a public key given by the caller (raw, or DER SubjectPublicKeyInfo): no stored
    key."""
    return await compute(len(plaintext), _encrypt_to, key_type, encoded, form, plaintext, params)
