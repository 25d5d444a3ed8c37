"""HMAC routes: an HMAC of a message, and its verification, with a server-held `hmac` key,
single or batch (`app.ops.mac`)."""

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.http.batch import Items, run_each
from app.http.operation import BatchForm, Family, KeyCall
from app.http.problems import ProblemDetail
from app.http.schemas import Base64Bytes, PayloadVersion, RequestBody
from app.ops.auth import Operation
from app.ops.mac import Algorithm

family = Family("hmac")
router: APIRouter = family.router


class HmacRequest(RequestBody):
    message: Base64Bytes
    algorithm: Algorithm = "sha256"


class HmacVerifyRequest(RequestBody):
    message: Base64Bytes
    hmac: Base64Bytes = Field(
        description="as POST /v1/hmac/{name} answered it (in the envelope that names its key "
        "version), or the bare MAC"
    )
    algorithm: Algorithm = "sha256"
    key_version: PayloadVersion = None


class Hmac(BaseModel):
    hmac: Base64Bytes = Field(description="cipherd:v<N>: followed by the MAC's bytes")
    key_version: int


class HmacVerdict(BaseModel):
    valid: bool


class HmacBatch(RequestBody):
    items: Items[HmacRequest]


class HmacVerifyBatch(RequestBody):
    items: Items[HmacVerifyRequest]


class HmacResult(BaseModel):
    hmac: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class HmacVerifyResult(BaseModel):
    valid: bool | None = None
    error: ProblemDetail | None = None


class HmacBatchResponse(BaseModel):
    results: list[HmacResult]


class HmacVerifyBatchResponse(BaseModel):
    results: list[HmacVerifyResult]


def _hmac_batch(call: KeyCall, batch: HmacBatch) -> HmacBatchResponse:
    mac = call.services.mac.hasher(call.name)

    def one(item: HmacRequest) -> HmacResult:
        sealed = mac(item.message, item.algorithm)
        return HmacResult(hmac=sealed.data, key_version=sealed.version)

    return HmacBatchResponse(results=run_each(batch.items, one, HmacResult))


def _verify_batch(call: KeyCall, batch: HmacVerifyBatch) -> HmacVerifyBatchResponse:
    verify = call.services.mac.verifier(call.name)

    def one(item: HmacVerifyRequest) -> HmacVerifyResult:
        valid = verify(item.message, item.hmac, item.algorithm, item.key_version)
        return HmacVerifyResult(valid=valid)

    return HmacVerifyBatchResponse(results=run_each(batch.items, one, HmacVerifyResult))


@family.operation(
    "/{name}",
    access=Operation.HMAC,
    summary="HMAC of a message with a server-held hmac key",
    body=HmacRequest,
    response=Hmac,
    batch=BatchForm(
        "HMACs of many messages with a server-held hmac key",
        HmacBatch,
        HmacBatchResponse,
        _hmac_batch,
    ),
    hot=True,
)
async def hmac(call: KeyCall, body: HmacRequest) -> Hmac:
    sealed = await call.services.mac.hmac(call.name, body.message, body.algorithm)
    return Hmac(hmac=sealed.data, key_version=sealed.version)


@family.operation(
    "/{name}/verify",
    access=Operation.HMAC,
    summary="Verify an HMAC with a server-held hmac key (constant time)",
    body=HmacVerifyRequest,
    response=HmacVerdict,
    batch=BatchForm(
        "Verify many HMACs with a server-held hmac key",
        HmacVerifyBatch,
        HmacVerifyBatchResponse,
        _verify_batch,
    ),
    hot=True,
)
async def verify(call: KeyCall, body: HmacVerifyRequest) -> HmacVerdict:
    valid = await call.services.mac.verify(
        call.name, body.message, body.hmac, body.algorithm, body.key_version
    )
    return HmacVerdict(valid=valid)
