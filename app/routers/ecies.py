"""ECIES routes: with a server-held key (JSON or raw, single or batch), and to a public key.

Payloads are exactly eciespy's and eciesjs's (`app.ops.ecies`).
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from app.http.batch import Items, run_each
from app.http.body import json_body, json_response, read_json
from app.http.deps import ServicesDep, service_access
from app.http.operation import BatchForm, Family, KeyCall, RawForm, RawQuery, operation_id
from app.http.problems import ERROR_RESPONSES, ProblemDetail
from app.http.schemas import (
    RAW_ENCRYPTION_VERSION,
    Base64Bytes,
    DatakeyRequest,
    EncryptionVersion,
    PayloadVersion,
    RequestBody,
)
from app.ops import ecies
from app.ops.auth import Operation

family = Family("ecies")
router: APIRouter = family.router


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
DEFAULT_OPTIONS = EciesOptions()


class EciesConfig(EciesOptions):
    """eciespy's Config, for encryption to a public key given in the request."""

    elliptic_curve: ecies.Curve = "secp256k1"


def _query_number(value: object) -> object:
    """A query value is text: "12" must meet the Literal[12, 16, 24] that JSON gives as 12."""
    return int(value) if isinstance(value, str) and value.isdecimal() else value


class EciesEncryptRequest(RequestBody):
    plaintext: Base64Bytes
    config: EciesOptions = EciesOptions()
    envelope: StrictBool = Field(
        True,
        description="the payload in the envelope that names its key version; false: the bare "
        "bytes eciespy and eciesjs read",
    )
    key_version: EncryptionVersion = None


class EciesDecryptRequest(RequestBody):
    ciphertext: Base64Bytes
    key_version: PayloadVersion = None
    config: EciesOptions = EciesOptions()


class EciesRewrapRequest(EciesDecryptRequest):
    envelope: StrictBool = Field(True, description="false: the bare bytes eciespy and eciesjs read")


class EciesDatakey(BaseModel):
    ciphertext: Base64Bytes = Field(description="the data key, encrypted as by encrypt")
    plaintext: Base64Bytes | None = Field(None, description="the data key; null if not asked")
    key_version: int


class EciesOptionsQuery(RawQuery, EciesOptions):
    """The ECIES options of a raw (application/octet-stream) request."""

    symmetric_nonce_length: Annotated[Literal[12, 16, 24], BeforeValidator(_query_number)] = Field(
        16, description="12 or 16 for AES-256-GCM; XChaCha20-Poly1305 always uses 24"
    )

    def options(self) -> EciesOptions:
        return EciesOptions.model_construct(
            is_ephemeral_key_compressed=self.is_ephemeral_key_compressed,
            is_hkdf_key_compressed=self.is_hkdf_key_compressed,
            symmetric_algorithm=self.symmetric_algorithm,
            symmetric_nonce_length=self.symmetric_nonce_length,
        )


class EciesQuery(EciesOptionsQuery):
    """The parameters of a raw encryption."""

    envelope: bool = Field(True, description="false: the bare bytes eciespy and eciesjs read")
    key_version: int | None = Field(None, ge=1, description=RAW_ENCRYPTION_VERSION)

    def request(self, data: bytes) -> BaseModel:
        return EciesEncryptRequest.model_construct(
            plaintext=data,
            config=self.options(),
            envelope=self.envelope,
            key_version=self.key_version,
        )


class EciesDecryptQuery(EciesOptionsQuery):
    """The parameters of a raw decryption."""

    key_version: int | None = Field(
        None, ge=1, description="default: the envelope's, or tried from the latest down"
    )

    def request(self, data: bytes) -> BaseModel:
        return EciesDecryptRequest.model_construct(
            ciphertext=data, key_version=self.key_version, config=self.options()
        )


class EciesPublicEncryptRequest(RequestBody):
    public_key: Base64Bytes = Field(
        description="secp256k1: 33, 64 or 65 bytes; x25519 and ed25519: 32 bytes"
    )
    plaintext: Base64Bytes
    config: EciesConfig = EciesConfig()


class EciesCiphertext(BaseModel):
    ciphertext: Base64Bytes
    key_version: int

    def raw(self) -> tuple[bytes, int]:
        return self.ciphertext, self.key_version


class EciesPlaintext(BaseModel):
    plaintext: Base64Bytes
    key_version: int

    def raw(self) -> tuple[bytes, int]:
        return self.plaintext, self.key_version


class EciesPublicCiphertext(BaseModel):
    ciphertext: Base64Bytes


class EciesEncryptBatch(RequestBody):
    items: Items[EciesEncryptRequest]


class EciesDecryptBatch(RequestBody):
    items: Items[EciesDecryptRequest]


class EciesEncryptResult(BaseModel):
    ciphertext: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class EciesDecryptResult(BaseModel):
    plaintext: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class EciesEncryptBatchResponse(BaseModel):
    results: list[EciesEncryptResult]


class EciesDecryptBatchResponse(BaseModel):
    results: list[EciesDecryptResult]


class EciesDatakeyBatch(RequestBody):
    items: Items[DatakeyRequest]


class EciesRewrapBatch(RequestBody):
    items: Items[EciesRewrapRequest]


class EciesDatakeyResult(BaseModel):
    ciphertext: Base64Bytes | None = None
    plaintext: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class EciesDatakeyBatchResponse(BaseModel):
    results: list[EciesDatakeyResult]


def _encrypt_batch(call: KeyCall, batch: EciesEncryptBatch) -> EciesEncryptBatchResponse:
    encrypt = call.services.ecies.encryptor(call.name)

    def one(item: EciesEncryptRequest) -> EciesEncryptResult:
        sealed = encrypt(item.plaintext, item.config, item.envelope, item.key_version)
        return EciesEncryptResult(ciphertext=sealed.data, key_version=sealed.version)

    return EciesEncryptBatchResponse(results=run_each(batch.items, one, EciesEncryptResult))


def _decrypt_batch(call: KeyCall, batch: EciesDecryptBatch) -> EciesDecryptBatchResponse:
    decrypt = call.services.ecies.decryptor(call.name)

    def one(item: EciesDecryptRequest) -> EciesDecryptResult:
        opened = decrypt(item.ciphertext, item.key_version, item.config)
        return EciesDecryptResult(plaintext=opened.data, key_version=opened.version)

    return EciesDecryptBatchResponse(results=run_each(batch.items, one, EciesDecryptResult))


def _datakey_batch(call: KeyCall, batch: EciesDatakeyBatch) -> EciesDatakeyBatchResponse:
    datakey = call.services.ecies.datakeys(call.name)

    def one(item: DatakeyRequest) -> EciesDatakeyResult:
        key, sealed = datakey(item.bytes, DEFAULT_OPTIONS)
        return EciesDatakeyResult(
            ciphertext=sealed.data,
            plaintext=key if item.plaintext else None,
            key_version=sealed.version,
        )

    return EciesDatakeyBatchResponse(results=run_each(batch.items, one, EciesDatakeyResult))


def _rewrap_batch(call: KeyCall, batch: EciesRewrapBatch) -> EciesEncryptBatchResponse:
    rewrap = call.services.ecies.rewrapper(call.name)

    def one(item: EciesRewrapRequest) -> EciesEncryptResult:
        sealed = rewrap(item.ciphertext, item.key_version, item.config, item.envelope)
        return EciesEncryptResult(ciphertext=sealed.data, key_version=sealed.version)

    return EciesEncryptBatchResponse(results=run_each(batch.items, one, EciesEncryptResult))


@family.operation(
    "/{name}/encrypt",
    access=Operation.ENCRYPT,
    summary="Encrypt to a server-held ECIES key",
    body=EciesEncryptRequest,
    response=EciesCiphertext,
    raw=RawForm(
        EciesQuery, "the plaintext; parameters in the query", "the payload, for a raw request"
    ),
    batch=BatchForm(
        "Encrypt many plaintexts to a server-held ECIES key",
        EciesEncryptBatch,
        EciesEncryptBatchResponse,
        _encrypt_batch,
    ),
    hot=True,
)
async def encrypt(call: KeyCall, body: EciesEncryptRequest) -> EciesCiphertext:
    sealed = await call.services.ecies.encrypt(
        call.name, body.plaintext, body.config, body.envelope, body.key_version
    )
    return EciesCiphertext(ciphertext=sealed.data, key_version=sealed.version)


@family.operation(
    "/{name}/decrypt",
    access=Operation.DECRYPT,
    summary="Decrypt with a server-held ECIES key",
    body=EciesDecryptRequest,
    response=EciesPlaintext,
    raw=RawForm(
        EciesDecryptQuery,
        "the payload; parameters in the query",
        "the plaintext, for a raw request",
    ),
    batch=BatchForm(
        "Decrypt many payloads with a server-held ECIES key",
        EciesDecryptBatch,
        EciesDecryptBatchResponse,
        _decrypt_batch,
    ),
    hot=True,
)
async def decrypt(call: KeyCall, body: EciesDecryptRequest) -> EciesPlaintext:
    opened = await call.services.ecies.decrypt(
        call.name, body.ciphertext, body.key_version, body.config
    )
    return EciesPlaintext(plaintext=opened.data, key_version=opened.version)


@family.operation(
    "/{name}/datakey",
    access=Operation.ENCRYPT,
    summary="A fresh data key and its payload under a server-held ECIES key",
    body=DatakeyRequest,
    response=EciesDatakey,
    batch=BatchForm(
        "Many data keys under a server-held ECIES key",
        EciesDatakeyBatch,
        EciesDatakeyBatchResponse,
        _datakey_batch,
    ),
    hot=True,
)
async def datakey(call: KeyCall, body: DatakeyRequest) -> EciesDatakey:
    key, sealed = await call.services.ecies.datakey(call.name, body.bytes, DEFAULT_OPTIONS)
    return EciesDatakey(
        ciphertext=sealed.data,
        plaintext=key if body.plaintext else None,
        key_version=sealed.version,
    )


@family.operation(
    "/{name}/rewrap",
    access=(Operation.DECRYPT, Operation.ENCRYPT),
    summary="A payload of an older version under the latest, its plaintext kept in the service",
    body=EciesRewrapRequest,
    response=EciesCiphertext,
    batch=BatchForm(
        "Rewrap many payloads under a server-held ECIES key's latest version",
        EciesRewrapBatch,
        EciesEncryptBatchResponse,
        _rewrap_batch,
    ),
)
async def rewrap(call: KeyCall, body: EciesRewrapRequest) -> EciesCiphertext:
    sealed = await call.services.ecies.rewrap(
        call.name, body.ciphertext, body.key_version, body.config, body.envelope
    )
    return EciesCiphertext(ciphertext=sealed.data, key_version=sealed.version)


@router.post(
    "/encrypt",
    response_model=EciesPublicCiphertext,
    summary="Encrypt to a public key given in the request (no stored key)",
    openapi_extra=json_body(EciesPublicEncryptRequest),
    responses=ERROR_RESPONSES,
    dependencies=[service_access(Operation.ENCRYPT)],
    generate_unique_id_function=operation_id,
)
async def encrypt_to_public_key(request: Request, services: ServicesDep) -> Response:
    body = await read_json(request, EciesPublicEncryptRequest)  # after the token check
    ciphertext = await ecies.encrypt_to(
        body.public_key, body.plaintext, body.config.elliptic_curve, body.config
    )
    return json_response(EciesPublicCiphertext(ciphertext=ciphertext))
