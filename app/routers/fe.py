"""Functional-encryption routes: keygen, encrypt, decrypt with a server-held master key, single
or in batches, and one functional key against many ciphertexts (`app.ops.fe`)."""

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field, StrictInt, model_validator

from app.http.batch import Items, run_each
from app.http.deps import KeyName, ServicesDep, key_access
from app.http.operation import BatchForm, Family, KeyCall, operation_id
from app.http.problems import ERROR_RESPONSES, ProblemDetail, problem_detail
from app.http.schemas import Base64Bytes, KeyVersion, RequestBody
from app.ops.auth import Operation
from app.ops.fe_policy import KeygenRequest
from app.ops.keys import timestamp
from app.ops.work import in_thread

family = Family("fe")
router: APIRouter = family.router

I64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
Version = Annotated[int | None, Query(ge=1, description="key version; default: the latest")]
Vector = Annotated[list[I64], Field(min_length=1, max_length=4096)]


class FeKeygenRequest(RequestBody):
    y: Vector | None = Field(None, description="inner-product schemes: the function vector")
    f: Annotated[list[Vector], Field(min_length=1, max_length=4096)] | None = Field(
        None, description="quadratic schemes: the n×n function matrix, row by row"
    )
    key_version: KeyVersion = None

    @model_validator(mode="after")
    def _one_function(self) -> "FeKeygenRequest":
        if (self.y is None) == (self.f is None):
            raise ValueError("give y (inner-product schemes) or f (quadratic schemes)")
        return self


class FeEncryptRequest(RequestBody):
    x: Vector
    y: Vector | None = Field(None, description="quadratic schemes only: the second vector")
    key_version: KeyVersion = None


class FeDecryptRequest(RequestBody):
    functional_key: Base64Bytes
    ciphertext: Base64Bytes
    bounds: Annotated[list[I64], Field(min_length=2, max_length=2)] = Field(
        description="[lo, hi]: the result is searched in this range, both ends included"
    )
    key_version: KeyVersion = Field(
        None,
        description="the version the functional key and ciphertext come from (default: latest)",
    )


class FeDecryptManyRequest(RequestBody):
    functional_key: Base64Bytes
    ciphertexts: Items[Base64Bytes]
    bounds: Annotated[list[I64], Field(min_length=2, max_length=2)]
    key_version: KeyVersion = Field(
        None,
        description="the version the functional key and ciphertext come from (default: latest)",
    )

    @property
    def items(self) -> list[bytes]:
        """The ciphertexts: what the batch limit counts."""
        return self.ciphertexts


class FeFunctionalKey(BaseModel):
    functional_key: Base64Bytes
    key_version: int


class FeCiphertext(BaseModel):
    ciphertext: Base64Bytes
    key_version: int


class FeResult(BaseModel):
    result: int | None = Field(description="the value, or null when it is outside the bounds")


class FeKeygenBatch(RequestBody):
    items: Items[FeKeygenRequest]


class FeEncryptBatch(RequestBody):
    items: Items[FeEncryptRequest]


class FeDecryptBatch(RequestBody):
    items: Items[FeDecryptRequest]


class FeKeygenResult(BaseModel):
    functional_key: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class FeEncryptResult(BaseModel):
    ciphertext: Base64Bytes | None = None
    key_version: int | None = None
    error: ProblemDetail | None = None


class FeDecryptResult(BaseModel):
    result: int | None = None
    error: ProblemDetail | None = None


class FeKeygenBatchResponse(BaseModel):
    results: list[FeKeygenResult]


class FeEncryptBatchResponse(BaseModel):
    results: list[FeEncryptResult]


class FeDecryptBatchResponse(BaseModel):
    results: list[FeDecryptResult]


def _wanted(call: KeyCall, item: FeKeygenRequest) -> KeygenRequest:
    return KeygenRequest(call.name, item.y, item.f, item.key_version)


def _keygen_batch(call: KeyCall, batch: FeKeygenBatch) -> FeKeygenBatchResponse:
    fe = call.services.fe
    fe.charge(call.name, makes=len(batch.items))
    outcomes = fe.keygen_many(call.principal.id, [_wanted(call, item) for item in batch.items])
    call.audit.details["functions"] = [fe.released(i.y, i.f) for i in batch.items]
    call.audit.change = True  # the ledger took these functions
    return FeKeygenBatchResponse(
        results=[
            FeKeygenResult(error=problem_detail(outcome))
            if isinstance(outcome, Exception)
            else FeKeygenResult(functional_key=outcome.data, key_version=outcome.version)
            for outcome in outcomes
        ]
    )


def _encrypt_one(call: KeyCall, item: FeEncryptRequest) -> FeEncryptResult:
    ciphertext = call.services.fe.encrypt(call.name, item.x, item.y, item.key_version)
    return FeEncryptResult(ciphertext=ciphertext.data, key_version=ciphertext.version)


def _encrypt_batch(call: KeyCall, batch: FeEncryptBatch) -> FeEncryptBatchResponse:
    call.services.fe.charge(call.name, makes=len(batch.items))
    return FeEncryptBatchResponse(
        results=run_each(batch.items, lambda item: _encrypt_one(call, item), FeEncryptResult)
    )


def _decrypt_batch(call: KeyCall, batch: FeDecryptBatch) -> FeDecryptBatchResponse:
    fe = call.services.fe
    fe.charge(call.name, decrypts=[item.bounds for item in batch.items])

    def one(item: FeDecryptRequest) -> FeDecryptResult:
        decrypt = fe.decryptor(call.name, item.functional_key, item.bounds, item.key_version)
        return FeDecryptResult(result=decrypt(item.ciphertext))

    return FeDecryptBatchResponse(results=run_each(batch.items, one, FeDecryptResult))


def _decrypt_many(call: KeyCall, body: FeDecryptManyRequest) -> FeDecryptBatchResponse:
    call.services.fe.charge(call.name, decrypts=[body.bounds] * len(body.items))
    decrypt = call.services.fe.decryptor(
        call.name, body.functional_key, body.bounds, body.key_version
    )
    return FeDecryptBatchResponse(
        results=run_each(
            body.items, lambda ct: FeDecryptResult(result=decrypt(ct)), FeDecryptResult
        )
    )


@family.operation(
    "/{name}/keygen",
    access=Operation.KEYGEN,
    summary="A functional key for y (inner product) or F (quadratic)",
    body=FeKeygenRequest,
    response=FeFunctionalKey,
    batch=BatchForm("Many functional keys", FeKeygenBatch, FeKeygenBatchResponse, _keygen_batch),
)
async def keygen(call: KeyCall, body: FeKeygenRequest) -> FeFunctionalKey:
    call.audit.details.update(call.services.fe.released(body.y, body.f))
    call.audit.change = True  # the ledger took this function
    key = await in_thread(call.services.fe.keygen, call.principal.id, _wanted(call, body))
    return FeFunctionalKey(functional_key=key.data, key_version=key.version)


@family.operation(
    "/{name}/encrypt",
    access=Operation.ENCRYPT,
    summary="A ciphertext of x (inner product) or of x and y (quadratic)",
    body=FeEncryptRequest,
    response=FeCiphertext,
    batch=BatchForm("Many ciphertexts", FeEncryptBatch, FeEncryptBatchResponse, _encrypt_batch),
)
async def encrypt(call: KeyCall, body: FeEncryptRequest) -> FeCiphertext:
    ciphertext = await in_thread(
        call.services.fe.encrypt, call.name, body.x, body.y, body.key_version
    )
    return FeCiphertext(ciphertext=ciphertext.data, key_version=ciphertext.version)


@family.operation(
    "/{name}/decrypt",
    access=Operation.DECRYPT,
    summary="The inner product or quadratic form, or null outside the bounds",
    body=FeDecryptRequest,
    response=FeResult,
    batch=BatchForm(
        "Many (functional key, ciphertext, bounds) decryptions",
        FeDecryptBatch,
        FeDecryptBatchResponse,
        _decrypt_batch,
        keep_nulls=True,
    ),
)
async def decrypt(call: KeyCall, body: FeDecryptRequest) -> FeResult:
    result = await call.services.fe.decrypt(
        call.name, body.functional_key, body.ciphertext, body.bounds, body.key_version
    )
    return FeResult(result=result)


family.batch(
    "/{name}/decrypt/many",
    "decrypt_many",
    Operation.DECRYPT,
    BatchForm(
        "One functional key against many ciphertexts",
        FeDecryptManyRequest,
        FeDecryptBatchResponse,
        _decrypt_many,
        keep_nulls=True,
    ),
)


class FeReleasedFunction(BaseModel):
    function: list[int] | list[list[int]] = Field(description="y, or F row by row")
    principal: str = Field(description="the token's id, or admin")
    time: datetime
    key_version: int
    rank: int = Field(description="the rank of all functions released under the version, after")


class FeFunctions(BaseModel):
    functions: list[FeReleasedFunction]
    key_version: int
    rank: int = Field(description="the rank over the rationals of the functions' span")
    max_rank: int | None = Field(description="the key's budget (fe_policy.max_rank), if any")


@router.get(
    "/{name}/functions",
    response_model=FeFunctions,
    summary="The functions released under an FE key version, and their rank",
    responses=ERROR_RESPONSES,
    dependencies=[key_access(Operation.READ)],
    generate_unique_id_function=operation_id,
)
def functions(name: KeyName, services: ServicesDep, key_version: Version = None) -> FeFunctions:
    released = services.fe.functions(name, key_version)
    return FeFunctions(
        functions=[
            FeReleasedFunction(
                function=record.function,
                principal=record.principal,
                time=timestamp(record.time),
                key_version=record.version,
                rank=record.rank,
            )
            for record in released.functions
        ],
        key_version=released.version,
        rank=released.rank,
        max_rank=released.max_rank,
    )
