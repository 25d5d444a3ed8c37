"""AEZ routes: encrypt, decrypt, data keys and rewrap with a server-held key, JSON or raw,
single or in batches.

The parameters are the node package `aez`'s (`app.ops.aez`).
"""

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, Field, StrictBool

from app.http.operation import RawQuery
from app.http.schemas import (
    Base64Bytes,
    DatakeyRequest,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.http.sealing import SealingFamily
from app.ops.aez import MAX_TAU, AezKey

Tau = Annotated[int, Field(ge=0, le=MAX_TAU, description="expansion in bytes")]
# In JSON, tau must be a number: "16", 16.0 and true are refused rather than converted.
StrictTau = Annotated[int, Field(ge=0, le=MAX_TAU, strict=True, description="expansion in bytes")]
BARE = "false: the bare bytes the npm package aez reads"


class AezParams(RequestBody):
    nonce: Base64Bytes = Field(b"", description="any length; omitted: empty")
    ad: list[Base64Bytes] | None = Field(
        None,
        description="associated data strings; [] and [''] differ",
        max_length=1024,
        fail_fast=True,  # its first bad string only: each described would cost seconds
    )
    tau: StrictTau = 16


class AezEncryptRequest(AezParams):
    plaintext: Base64Bytes
    envelope: StrictBool = Field(
        True,
        description="the ciphertext in the envelope that names its key version; " + BARE,
    )
    key_version: EncryptionVersion = None


class AezDecryptRequest(AezParams):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None


class AezRewrapRequest(AezDecryptRequest):
    envelope: StrictBool = Field(True, description=BARE)


class AezDatakey(BaseModel):
    ciphertext: Base64Bytes = Field(description="the data key, encrypted as by encrypt")
    plaintext: Base64Bytes | None = Field(None, description="the data key; null if not asked")
    nonce: Base64Bytes = Field(description="the fresh nonce of the encryption; decrypt takes it")
    tau: int = Field(description="the expansion of the encryption; decrypt takes it")
    key_version: int


class AezParamsQuery(RawQuery):
    """The AEZ parameters of a raw (application/octet-stream) request."""

    nonce: Base64Bytes = Field(b"", description="base64 (percent-encode it in the URL)")
    ad: list[Base64Bytes] | None = Field(
        None, description="repeat for each string, in order", max_length=1024
    )
    tau: Tau = 16


family = SealingFamily(
    "aez",
    lambda call: call.services.aez.key(call.name),
    params=AezParamsQuery,
    bare=BARE,
    sealed="ciphertext",
)
router: APIRouter = family.router


family.encrypt(AezEncryptRequest, "Encrypt with a server-held AEZ key")
family.decrypt(AezDecryptRequest, "Decrypt with a server-held AEZ key")


@family.datakey("A fresh data key and its ciphertext under a server-held AEZ key")
def datakey(key: AezKey, item: DatakeyRequest) -> AezDatakey:
    data_key, params, sealed = key.datakey(item.bytes)
    return AezDatakey(
        ciphertext=sealed.data,
        plaintext=data_key if item.plaintext else None,
        nonce=params.nonce,
        tau=params.tau,
        key_version=sealed.version,
    )


family.rewrap(
    AezRewrapRequest,
    "A ciphertext of an older version under the latest (same nonce, AD and tau), its "
    "plaintext kept in the service",
)
