"""HMAC routes: an HMAC of a message, and its verification, with a server-held `hmac` key,
single or batch (`app.ops.mac`)."""

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.http.operation import Family
from app.http.schemas import Base64Bytes, PayloadVersion, RequestBody, SealedAnswer
from app.ops.grants import Operation
from app.ops.mac import Algorithm, MacKey

family = Family("hmac", lambda call: call.services.mac.key(call.name))
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


class Hmac(SealedAnswer):
    data_field = "hmac"
    hmac: Base64Bytes = Field(description="cipherd:v<N>: followed by the MAC's bytes")
    key_version: int


class HmacVerdict(BaseModel):
    valid: bool


@family.operation(
    "/{name}",
    access=Operation.HMAC,
    summary="HMAC of a message with a server-held hmac key",
    batch="HMACs of many messages with a server-held hmac key",
    hot=True,
)
def hmac(key: MacKey, item: HmacRequest) -> Hmac:
    return Hmac.of(key.hmac(item.message, item.algorithm))


@family.operation(
    "/{name}/verify",
    access=Operation.HMAC,
    summary="Verify an HMAC with a server-held hmac key (constant time)",
    batch="Verify many HMACs with a server-held hmac key",
    payload="hmac",
    hot=True,
)
def verify(key: MacKey, item: HmacVerifyRequest) -> HmacVerdict:
    return HmacVerdict(valid=key.verify(item.message, item.hmac, item.algorithm, item.key_version))
