"""Functional-encryption routes: keygen, encrypt, decrypt with a server-held master key, single
or in batches, and one functional key against many ciphertexts (`app.ops.fe`)."""

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field, StrictInt, model_validator

from app.http.batch import Items
from app.http.deps import KeyName, ServicesDep, key_access
from app.http.operation import Family, operation_id
from app.http.problems import ERROR_RESPONSES
from app.http.schemas import (
    Base64Bytes,
    CiphertextAnswer,
    KeyVersion,
    PageSize,
    RequestBody,
    SealedAnswer,
)
from app.ops.fe import FeKey
from app.ops.grants import Operation
from app.ops.keys import timestamp

family = Family(
    "fe",
    lambda call: call.services.fe.key(call.name, call.principal.id, call.audit, call.batch),
)
router: APIRouter = family.router

I64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
Version = Annotated[int | None, Query(ge=1, description="key version; default: the latest")]
# Fail-fast: a list stops at its first bad entry. Pydantic otherwise describes every one, and
# a 32 MiB matrix of 11 million bad entries took 14 s and 4.4 GiB to refuse.
Vector = Annotated[list[I64], Field(min_length=1, max_length=4096, fail_fast=True)]


class FeKeygenRequest(RequestBody):
    y: Vector | None = Field(None, description="inner-product schemes: the function vector")
    f: Annotated[list[Vector], Field(min_length=1, max_length=4096, fail_fast=True)] | None = Field(
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

    async def check_functional_key(self, key: FeKey) -> None:
        await key.check_functional_key(self.functional_key, self.bounds, self.key_version)

    def decryptions(self) -> list[FeDecryptRequest]:
        """One decryption per ciphertext, each with the functional key, bounds and version."""
        return [
            FeDecryptRequest.model_construct(
                functional_key=self.functional_key,
                ciphertext=ciphertext,
                bounds=self.bounds,
                key_version=self.key_version,
            )
            for ciphertext in self.ciphertexts
        ]


class FeFunctionalKey(SealedAnswer):
    data_field = "functional_key"
    functional_key: Base64Bytes
    key_version: int


class FeCiphertext(CiphertextAnswer):
    pass


class FeResult(BaseModel):
    result: int | None = Field(description="the value, or null when it is outside the bounds")


@family.operation(
    "/{name}/keygen",
    access=Operation.KEYGEN,
    summary="A functional key for y (inner product) or F (quadratic)",
    batch="Many functional keys",
)
async def keygen(key: FeKey, item: FeKeygenRequest) -> FeFunctionalKey:
    return FeFunctionalKey.of(await key.keygen(item.y, item.f, item.key_version))


@family.operation(
    "/{name}/encrypt",
    access=Operation.ENCRYPT,
    summary="A ciphertext of x (inner product) or of x and y (quadratic)",
    batch="Many ciphertexts",
)
async def encrypt(key: FeKey, item: FeEncryptRequest) -> FeCiphertext:
    return FeCiphertext.of(await key.encrypt(item.x, item.y, item.key_version))


@family.operation(
    "/{name}/decrypt",
    access=Operation.DECRYPT,
    summary="The inner product or quadratic form, or null outside the bounds",
    batch="Many (functional key, ciphertext, bounds) decryptions",
    keep_nulls=True,
    hot=True,
)
async def decrypt(key: FeKey, item: FeDecryptRequest) -> FeResult:
    result = await key.decrypt(item.functional_key, item.ciphertext, item.bounds, item.key_version)
    return FeResult(result=result)


family.batch_of(
    decrypt,
    "/{name}/decrypt/many",
    "decrypt_many",
    access=Operation.DECRYPT,
    summary="One functional key against many ciphertexts",
    body=FeDecryptManyRequest,
    items=FeDecryptManyRequest.decryptions,
    keep_nulls=True,
    shared=FeDecryptManyRequest.check_functional_key,
)


class FeReleasedFunction(BaseModel):
    function: list[int] | list[list[int]] = Field(description="y, or F row by row")
    principal: str = Field(description="the token's id, or admin")
    time: datetime
    key_version: int
    rank: int = Field(description="the rank of all functions released under the version, after")


class FeFunctions(BaseModel):
    functions: list[FeReleasedFunction]
    next: int | None = Field(
        None, description="pass as `after` for the next page; null on the last page"
    )
    key_version: int
    rank: int = Field(
        description="the rank over the rationals of the functions' span; past what the ledger "
        "tracks (65,536 entries: 4 functions of a quadratic key at n = 128) and with no "
        "max_rank, a lower bound"
    )
    max_rank: int | None = Field(description="the key's budget (fe_policy.max_rank), if any")


@router.get(
    "/{name}/functions",
    response_model=FeFunctions,
    summary="The functions released under an FE key version, oldest first, paged, and their rank",
    description="A page holds `limit` functions at most, and stops after the one that brings "
    "their stored text to 4 MiB (a quadratic key's matrix at n = 128 is some 350 KB): pass its "
    "`next` as `after` for the next. `rank` is that of every function of the version.",
    responses=ERROR_RESPONSES,
    dependencies=[key_access(Operation.READ)],
    generate_unique_id_function=operation_id,
)
def functions(
    name: KeyName,
    services: ServicesDep,
    key_version: Version = None,
    limit: PageSize = 100,
    # At most what SQLite's INTEGER holds: a larger one would reach the driver, and fail there.
    after: Annotated[
        int, Query(ge=0, le=2**63 - 1, description="a page's `next`; default: the start")
    ] = 0,
) -> FeFunctions:
    released = services.fe.functions(name, key_version, after, limit)
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
        next=released.next,
        key_version=released.version,
        rank=released.rank,
        max_rank=released.max_rank,
    )
