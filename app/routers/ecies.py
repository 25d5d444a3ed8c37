"""ECIES routes: with a server-held key (JSON or raw, single or batch), and to a public key.

Payloads are exactly eciespy's and eciesjs's (`app.ops.ecies`).
"""

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from app.http.operation import RawQuery
from app.http.schemas import (
    Base64Bytes,
    DatakeyAnswer,
    DatakeyRequest,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.http.sealing import SealingFamily
from app.ops import ecies
from app.ops.ecies import EciesKey
from app.ops.grants import Operation

BARE = "false: the bare bytes eciespy and eciesjs read"


class EciesOptions(RequestBody):
    """eciespy's Config without the curve, which the key's type fixes."""

    # Frozen, hence hashable: pydantic then uses the default `config` as it is rather than
    # deep-copying it for every request that leaves it out.
    model_config = ConfigDict(frozen=True)

    is_ephemeral_key_compressed: bool = False
    is_hkdf_key_compressed: bool = False
    symmetric_algorithm: Literal["aes-256-gcm", "xchacha20"] = "aes-256-gcm"
    symmetric_nonce_length: Literal[12, 16, 24] = Field(
        16, description="12 or 16 for AES-256-GCM; XChaCha20-Poly1305 always uses 24"
    )


# A data key is encrypted in eciespy's default form.
DEFAULT_FORM = ecies.Configured(EciesOptions())


class EciesConfig(EciesOptions):
    """eciespy's Config, for encryption to a public key given in the request."""

    elliptic_curve: ecies.Curve = "secp256k1"


def _query_number(value: object) -> object:
    """A query value is text: "12" must meet the Literal[12, 16, 24] that JSON gives as 12 (in
    ASCII digits: `int` also reads "１２")."""
    return int(value) if isinstance(value, str) and value.isascii() and value.isdecimal() else value


class EciesEncryptRequest(RequestBody):
    plaintext: Base64Bytes
    config: EciesOptions = EciesOptions()
    envelope: StrictBool = Field(
        True,
        description="the payload in the envelope that names its key version; " + BARE,
    )
    key_version: EncryptionVersion = None


class EciesDecryptRequest(RequestBody):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None
    config: EciesOptions = EciesOptions()


class EciesRewrapRequest(EciesDecryptRequest):
    envelope: StrictBool = Field(True, description=BARE)


class EciesDatakey(DatakeyAnswer):
    pass


class EciesOptionsQuery(RawQuery, EciesOptions):
    """The ECIES options of a raw (application/octet-stream) request."""

    symmetric_nonce_length: Annotated[Literal[12, 16, 24], BeforeValidator(_query_number)] = Field(
        16, description="12 or 16 for AES-256-GCM; XChaCha20-Poly1305 always uses 24"
    )

    def fields(self) -> dict[str, Any]:
        """The options as the JSON form's `config`, the other parameters as they are."""
        fields = dict(self.__dict__)
        options = {name: fields.pop(name) for name in EciesOptions.model_fields}
        fields["config"] = EciesOptions.model_construct(**options)
        return fields


class EciesPublicEncryptRequest(RequestBody):
    public_key: Base64Bytes = Field(
        description="secp256k1: 33, 64 or 65 bytes; x25519 and ed25519: 32 bytes"
    )
    plaintext: Base64Bytes
    config: EciesConfig = EciesConfig()


class EciesPublicCiphertext(BaseModel):
    ciphertext: Base64Bytes


family = SealingFamily(
    "ecies",
    lambda call: call.services.ecies.key(call.name),
    params=EciesOptionsQuery,
    bare=BARE,
    sealed="payload",
    to_key=True,
)
router: APIRouter = family.router


family.encrypt(EciesEncryptRequest, "Encrypt to a server-held ECIES key")
family.decrypt(EciesDecryptRequest, "Decrypt with a server-held ECIES key")


@family.datakey("A fresh data key and its payload under a server-held ECIES key")
def datakey(key: EciesKey, item: DatakeyRequest) -> EciesDatakey:
    return EciesDatakey.of(*key.datakey(item.bytes, DEFAULT_FORM), item)


family.rewrap(
    EciesRewrapRequest,
    "A payload of an older version under the latest, its plaintext kept in the service",
)


@family.keyless(
    "/encrypt",
    access=Operation.ENCRYPT,
    summary="Encrypt to a public key given in the request (no stored key)",
)
async def encrypt_to_public_key(item: EciesPublicEncryptRequest) -> EciesPublicCiphertext:
    ciphertext = await ecies.encrypt_to(
        item.public_key, item.plaintext, item.config.elliptic_curve, item.config
    )
    return EciesPublicCiphertext(ciphertext=ciphertext)
