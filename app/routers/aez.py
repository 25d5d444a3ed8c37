"""AEZ routes: encrypt and decrypt with a server-held key, JSON or raw, single or in batches.

The parameters are the node package `aez`'s (`app.ops.aez`).
"""

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, Field, StrictBool

from app.http.batch import Items, run_each
from app.http.operation import BatchForm, Family, KeyCall, RawForm, RawQuery
from app.http.problems import ProblemDetail
from app.http.schemas import (
    RAW_ENCRYPTION_VERSION,
    Base64Bytes,
    DatakeyRequest,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.ops.aez import MAX_TAU
from app.ops.auth import Operation

family = Family("aez")
router: APIRouter = family.router

Tau = Annotated[int, Field(ge=0, le=MAX_TAU, description="expansion in bytes")]
# In JSON, tau must be a number: "16", 16.0 and true are refused rather than converted.
StrictTau = Annotated[int, Field(ge=0, le=MAX_TAU, strict=True, description="expansion in bytes")]


class AezParams(RequestBody):
    nonce: Base64Bytes = Field(b"", description="any length; omitted: empty")
    ad: list[Base64Bytes] | None = Field(
        None, description="associated data strings; [] and [''] differ", max_length=1024
    )
    tau: StrictTau = 16


class AezEncryptRequest(AezParams):
    plaintext: Base64Bytes
    envelope: StrictBool = Field(
        True,
        description="the ciphertext in the envelope that names its key version; false: the "
        "bare bytes the npm package aez reads",
    )
    key_version: EncryptionVersion = None


class AezDecryptRequest(AezParams):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None


class AezRewrapRequest(AezDecryptRequest):
    envelope: StrictBool = Field(
        True, description="false: the bare bytes the npm package aez reads"
    )


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


class AezQuery(AezParamsQuery):
    """The parameters of a raw encryption."""

    envelope: bool = Field(True, description="false: the bare bytes the npm package aez reads")
    key_version: int | None = Field(None, ge=1, description=RAW_ENCRYPTION_VERSION)

    def request(self, data: bytes) -> BaseModel:
        return AezEncryptRequest.model_construct(
            nonce=self.nonce,
            ad=self.ad,
            tau=self.tau,
            plaintext=data,
            envelope=self.envelope,
            key_version=self.key_version,
        )


class AezDecryptQuery(AezParamsQuery):
    """The parameters of a raw decryption."""

    key_version: int | None = Field(
        None, ge=1, description="default: the envelope's, or tried from the latest down"
    )

    def request(self, data: bytes) -> BaseModel:
        return AezDecryptRequest.model_construct(
            nonce=self.nonce,
            ad=self.ad,
            tau=self.tau,
            ciphertext=data,
            key_version=self.key_version,
        )


class AezCiphertext(BaseModel):
    ciphertext: Base64Bytes
    key_version: int

    def raw(self) -> tuple[bytes, int]:
        return self.ciphertext, self.key_version


class AezPlaintext(BaseModel):
    plaintext: Base64Bytes
    key_version: int

    def raw(self) -> tuple[bytes, int]:
        return self.plaintext, self.key_version


class AezEncryptBatch(RequestBody):
    items: Items[AezEncryptRequest]


class AezDecryptBatch(RequestBody):
    items: Items[AezDecryptRequest]


class AezEncryptResult(BaseModel):
    ciphertext: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class AezDecryptResult(BaseModel):
    plaintext: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class AezEncryptBatchResponse(BaseModel):
    results: list[AezEncryptResult]


class AezDecryptBatchResponse(BaseModel):
    results: list[AezDecryptResult]


class AezDatakeyBatch(RequestBody):
    items: Items[DatakeyRequest]


class AezRewrapBatch(RequestBody):
    items: Items[AezRewrapRequest]


class AezDatakeyResult(BaseModel):
    ciphertext: Base64Bytes | None = None
    plaintext: Base64Bytes | None = None
    nonce: Base64Bytes | None = None
    tau: int | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class AezDatakeyBatchResponse(BaseModel):
    results: list[AezDatakeyResult]


def _encrypt_batch(call: KeyCall, batch: AezEncryptBatch) -> AezEncryptBatchResponse:
    encrypt = call.services.aez.encryptor(call.name)

    def one(item: AezEncryptRequest) -> AezEncryptResult:
        sealed = encrypt(item, item.plaintext, item.envelope, item.key_version)
        return AezEncryptResult(ciphertext=sealed.data, key_version=sealed.version)

    return AezEncryptBatchResponse(results=run_each(batch.items, one, AezEncryptResult))


def _decrypt_batch(call: KeyCall, batch: AezDecryptBatch) -> AezDecryptBatchResponse:
    decrypt = call.services.aez.decryptor(call.name)

    def one(item: AezDecryptRequest) -> AezDecryptResult:
        opened = decrypt(item, item.ciphertext, item.key_version)
        return AezDecryptResult(plaintext=opened.data, key_version=opened.version)

    return AezDecryptBatchResponse(results=run_each(batch.items, one, AezDecryptResult))


def _datakey_batch(call: KeyCall, batch: AezDatakeyBatch) -> AezDatakeyBatchResponse:
    datakey = call.services.aez.datakeys(call.name)

    def one(item: DatakeyRequest) -> AezDatakeyResult:
        key, params, sealed = datakey(item.bytes)
        return AezDatakeyResult(
            ciphertext=sealed.data,
            plaintext=key if item.plaintext else None,
            nonce=params.nonce,
            tau=params.tau,
            key_version=sealed.version,
        )

    return AezDatakeyBatchResponse(results=run_each(batch.items, one, AezDatakeyResult))


def _rewrap_batch(call: KeyCall, batch: AezRewrapBatch) -> AezEncryptBatchResponse:
    rewrap = call.services.aez.rewrapper(call.name)

    def one(item: AezRewrapRequest) -> AezEncryptResult:
        sealed = rewrap(item, item.ciphertext, item.key_version, item.envelope)
        return AezEncryptResult(ciphertext=sealed.data, key_version=sealed.version)

    return AezEncryptBatchResponse(results=run_each(batch.items, one, AezEncryptResult))


@family.operation(
    "/{name}/encrypt",
    access=Operation.ENCRYPT,
    summary="Encrypt with a server-held AEZ key",
    body=AezEncryptRequest,
    response=AezCiphertext,
    raw=RawForm(
        AezQuery, "the plaintext; parameters in the query", "the ciphertext, for a raw request"
    ),
    batch=BatchForm(
        "Encrypt many plaintexts with a server-held AEZ key",
        AezEncryptBatch,
        AezEncryptBatchResponse,
        _encrypt_batch,
    ),
    hot=True,
)
async def encrypt(call: KeyCall, body: AezEncryptRequest) -> AezCiphertext:
    sealed = await call.services.aez.encrypt(
        call.name, body, body.plaintext, body.envelope, body.key_version
    )
    return AezCiphertext(ciphertext=sealed.data, key_version=sealed.version)


@family.operation(
    "/{name}/decrypt",
    access=Operation.DECRYPT,
    summary="Decrypt with a server-held AEZ key",
    body=AezDecryptRequest,
    response=AezPlaintext,
    raw=RawForm(
        AezDecryptQuery,
        "the ciphertext; parameters in the query",
        "the plaintext, for a raw request",
    ),
    batch=BatchForm(
        "Decrypt many ciphertexts with a server-held AEZ key",
        AezDecryptBatch,
        AezDecryptBatchResponse,
        _decrypt_batch,
    ),
    hot=True,
)
async def decrypt(call: KeyCall, body: AezDecryptRequest) -> AezPlaintext:
    opened = await call.services.aez.decrypt(call.name, body, body.ciphertext, body.key_version)
    return AezPlaintext(plaintext=opened.data, key_version=opened.version)


@family.operation(
    "/{name}/datakey",
    access=Operation.ENCRYPT,
    summary="A fresh data key and its ciphertext under a server-held AEZ key",
    body=DatakeyRequest,
    response=AezDatakey,
    batch=BatchForm(
        "Many data keys under a server-held AEZ key",
        AezDatakeyBatch,
        AezDatakeyBatchResponse,
        _datakey_batch,
    ),
    hot=True,
)
async def datakey(call: KeyCall, body: DatakeyRequest) -> AezDatakey:
    key, params, sealed = await call.services.aez.datakey(call.name, body.bytes)
    return AezDatakey(
        ciphertext=sealed.data,
        plaintext=key if body.plaintext else None,
        nonce=params.nonce,
        tau=params.tau,
        key_version=sealed.version,
    )


@family.operation(
    "/{name}/rewrap",
    access=(Operation.DECRYPT, Operation.ENCRYPT),
    summary="A ciphertext of an older version under the latest (same nonce, AD and tau), its "
    "plaintext kept in the service",
    body=AezRewrapRequest,
    response=AezCiphertext,
    batch=BatchForm(
        "Rewrap many ciphertexts under a server-held AEZ key's latest version",
        AezRewrapBatch,
        AezEncryptBatchResponse,
        _rewrap_batch,
    ),
)
async def rewrap(call: KeyCall, body: AezRewrapRequest) -> AezCiphertext:
    sealed = await call.services.aez.rewrap(
        call.name, body, body.ciphertext, body.key_version, body.envelope
    )
    return AezCiphertext(ciphertext=sealed.data, key_version=sealed.version)
