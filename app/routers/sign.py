"""Signature routes: sign and verify with a server-held ecdsa-secp256k1 or ed25519 key (single
or batch), and verify against a public key given in the request (`app.ops.sign`)."""

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field, StrictBool

from app.http.batch import Items, run_each
from app.http.body import json_body, json_response, read_json
from app.http.deps import ServicesDep, service_access
from app.http.operation import BatchForm, Family, KeyCall, operation_id
from app.http.problems import ERROR_RESPONSES, ProblemDetail
from app.http.schemas import Base64Bytes, PayloadVersion, RequestBody
from app.ops import sign as signatures
from app.ops.auth import Operation

signing = Family("sign")
verifying = Family("verify")
routers: tuple[APIRouter, ...] = (signing.router, verifying.router)


class SignOptions(RequestBody):
    hash: signatures.Hash | None = Field(
        None, description="ecdsa-secp256k1 only: the message's hash; default sha256"
    )
    prehashed: StrictBool | None = Field(
        None,
        description="ecdsa-secp256k1 only: the message is itself the 32-byte digest; default false",
    )
    format: signatures.Format | None = Field(
        None,
        description="ecdsa-secp256k1 only: DER (the default), compact r ‖ s (64 bytes) or "
        "recoverable r ‖ s ‖ v (65 bytes, v the recovery id 0 or 1)",
    )


class SignRequest(SignOptions):
    message: Base64Bytes
    envelope: StrictBool = Field(
        False,
        description="true: the signature in the envelope that names its key version "
        "(cipherd:v<N>:); false: the bare signature that other libraries verify",
    )


class VerifyRequest(SignOptions):
    message: Base64Bytes
    signature: Base64Bytes = Field(description="bare, or in the envelope that names its version")
    key_version: PayloadVersion = None


class PublicVerifyRequest(SignOptions):
    type: signatures.SigningType
    public_key: Base64Bytes = Field(
        description="ecdsa-secp256k1: SEC1, 33 or 65 bytes (or 64, X ‖ Y); ed25519: 32 bytes"
    )
    message: Base64Bytes
    signature: Base64Bytes


class Signature(BaseModel):
    signature: Base64Bytes
    key_version: int


class Verdict(BaseModel):
    valid: bool


class SignBatch(RequestBody):
    items: Items[SignRequest]


class VerifyBatch(RequestBody):
    items: Items[VerifyRequest]


class SignResult(BaseModel):
    signature: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class VerifyResult(BaseModel):
    valid: bool | None = None
    error: ProblemDetail | None = None


class SignBatchResponse(BaseModel):
    results: list[SignResult]


class VerifyBatchResponse(BaseModel):
    results: list[VerifyResult]


def _sign_batch(call: KeyCall, batch: SignBatch) -> SignBatchResponse:
    sign = call.services.signer.signer(call.name)

    def one(item: SignRequest) -> SignResult:
        signed = sign(item.message, item, item.envelope)
        return SignResult(signature=signed.data, key_version=signed.version)

    return SignBatchResponse(results=run_each(batch.items, one, SignResult))


def _verify_batch(call: KeyCall, batch: VerifyBatch) -> VerifyBatchResponse:
    verify = call.services.signer.verifier(call.name)

    def one(item: VerifyRequest) -> VerifyResult:
        return VerifyResult(valid=verify(item.message, item.signature, item, item.key_version))

    return VerifyBatchResponse(results=run_each(batch.items, one, VerifyResult))


@signing.operation(
    "/{name}",
    access=Operation.SIGN,
    summary="Sign with a server-held ecdsa-secp256k1 or ed25519 key",
    body=SignRequest,
    response=Signature,
    batch=BatchForm(
        "Sign many messages with a server-held key", SignBatch, SignBatchResponse, _sign_batch
    ),
    hot=True,
)
async def sign(call: KeyCall, body: SignRequest) -> Signature:
    signed = await call.services.signer.sign(call.name, body.message, body, body.envelope)
    return Signature(signature=signed.data, key_version=signed.version)


@verifying.operation(
    "/{name}",
    access=Operation.VERIFY,
    summary="Verify a signature with a server-held key (verify or public scope)",
    body=VerifyRequest,
    response=Verdict,
    batch=BatchForm(
        "Verify many signatures with a server-held key",
        VerifyBatch,
        VerifyBatchResponse,
        _verify_batch,
    ),
    hot=True,
)
async def verify(call: KeyCall, body: VerifyRequest) -> Verdict:
    valid = await call.services.signer.verify(
        call.name, body.message, body.signature, body, body.key_version
    )
    return Verdict(valid=valid)


@verifying.router.post(
    "",
    response_model=Verdict,
    summary="Verify a signature against a public key given in the request (no stored key)",
    openapi_extra=json_body(PublicVerifyRequest),
    responses=ERROR_RESPONSES,
    dependencies=[service_access(Operation.VERIFY)],
    generate_unique_id_function=operation_id,
)
async def verify_with_public_key(request: Request, services: ServicesDep) -> Response:
    body = await read_json(request, PublicVerifyRequest)  # after the token check
    valid = await signatures.verify_with(
        body.type, body.public_key, body.message, body.signature, body
    )
    return json_response(Verdict(valid=valid))
