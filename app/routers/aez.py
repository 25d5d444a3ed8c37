"""AEZ v5 with server-held keys: encrypt and decrypt, JSON or raw, single or in batches.

The parameters are the node package `aez`'s: a nonce of any length (omitted: empty), a vector of
associated-data strings, and tau, the expansion in bytes. AEZ stays secure when a nonce repeats,
except that equal messages then give equal ciphertexts. A ciphertext that does not authenticate
is a 400 that says only that.
"""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from app.auth import Operation
from app.batch import check_batch_size, run_each
from app.body import OCTET_STREAM, binary_response, dual_body, is_raw, read_json, read_raw
from app.deps import KeyName, KeyringDep, SettingsDep, key_access
from app.errors import ERROR_RESPONSES, Problem, ProblemDetail, wrong_key_type
from app.keyring import Keyring
from app.keystore import KeyMaterial
from app.metrics import timed
from app.schemas import Base64Bytes
from core import aez

router = APIRouter(prefix="/v1/aez", tags=["aez"], responses=ERROR_RESPONSES)

VERSION_HEADER = "Cipherd-Key-Version"
VERSION_HEADER_DOC = {
    VERSION_HEADER: {"description": "the key version used", "schema": {"type": "integer"}}
}
Tau = Annotated[int, Field(ge=0, le=aez.MAX_TAU, description="expansion in bytes")]
# In JSON, tau must be a number: "16", 16.0 and true are refused rather than converted.
StrictTau = Annotated[
    int, Field(ge=0, le=aez.MAX_TAU, strict=True, description="expansion in bytes")
]


class AezParams(BaseModel):
    nonce: Base64Bytes = Field(b"", description="any length; omitted: empty")
    ad: list[Base64Bytes] | None = Field(
        None, description="associated data strings; [] and [''] differ", max_length=1024
    )
    tau: StrictTau = 16


class AezQuery(BaseModel):
    """The parameters of a raw (application/octet-stream) request."""

    nonce: Base64Bytes = Field(b"", description="base64 (percent-encode it in the URL)")
    ad: list[Base64Bytes] | None = Field(None, description="repeat for each string, in order")
    tau: Tau = 16
    key_version: int | None = Field(None, ge=1, description="decrypt only; default: latest")


class AezEncryptRequest(AezParams):
    plaintext: Base64Bytes


class AezDecryptRequest(AezParams):
    ciphertext: Base64Bytes
    key_version: int | None = Field(None, ge=1, description="default: the latest version")


class AezCiphertext(BaseModel):
    ciphertext: Base64Bytes
    key_version: int


class AezPlaintext(BaseModel):
    plaintext: Base64Bytes
    key_version: int


class AezEncryptBatch(BaseModel):
    items: list[AezEncryptRequest] = Field(min_length=1)


class AezDecryptBatch(BaseModel):
    items: list[AezDecryptRequest] = Field(min_length=1)


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


def authentication_failed() -> Problem:
    return Problem(400, "authentication-failed", "Authentication failed", "authentication failed")


def _aez_material(keyring: Keyring, name: str, version: int | None) -> KeyMaterial:
    material = keyring.material(name, version)
    if material.type != "aez":
        raise wrong_key_type(name, material.type, "AEZ")
    return material


def _encrypt(
    keyring: Keyring, name: str, params: AezParams | AezQuery, plaintext: bytes
) -> tuple[bytes, int]:
    material = _aez_material(keyring, name, None)
    with timed("aez", "encrypt"):
        ciphertext = aez.encrypt(material.secret, params.nonce, params.ad, params.tau, plaintext)
    return ciphertext, material.version


def _decrypt(
    keyring: Keyring,
    name: str,
    params: AezParams | AezQuery,
    ciphertext: bytes,
    version: int | None,
) -> tuple[bytes, int]:
    material = _aez_material(keyring, name, version)
    with timed("aez", "decrypt"):
        plaintext = aez.decrypt(material.secret, params.nonce, params.ad, params.tau, ciphertext)
    if plaintext is None:
        raise authentication_failed()
    return plaintext, material.version


def _raw_response(payload: bytes, version: int) -> Response:
    return Response(payload, media_type=OCTET_STREAM, headers={VERSION_HEADER: str(version)})


@router.post(
    "/{name}/encrypt",
    response_model=AezCiphertext,
    summary="Encrypt with a server-held AEZ key",
    openapi_extra=dual_body(AezEncryptRequest, "the plaintext; parameters in the query"),
    responses=binary_response("the ciphertext, for a raw request", VERSION_HEADER_DOC),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt(
    request: Request, name: KeyName, keyring: KeyringDep, query: Annotated[AezQuery, Query()]
) -> AezCiphertext | Response:
    if is_raw(request):
        data = await read_raw(request)
        ciphertext, version = await run_in_threadpool(_encrypt, keyring, name, query, data)
        return _raw_response(ciphertext, version)
    body = await read_json(request, AezEncryptRequest)
    ciphertext, version = await run_in_threadpool(_encrypt, keyring, name, body, body.plaintext)
    return AezCiphertext(ciphertext=ciphertext, key_version=version)


@router.post(
    "/{name}/decrypt",
    response_model=AezPlaintext,
    summary="Decrypt with a server-held AEZ key",
    openapi_extra=dual_body(AezDecryptRequest, "the ciphertext; parameters in the query"),
    responses=binary_response("the plaintext, for a raw request", VERSION_HEADER_DOC),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt(
    request: Request, name: KeyName, keyring: KeyringDep, query: Annotated[AezQuery, Query()]
) -> AezPlaintext | Response:
    if is_raw(request):
        data = await read_raw(request)
        plaintext, version = await run_in_threadpool(
            _decrypt, keyring, name, query, data, query.key_version
        )
        return _raw_response(plaintext, version)
    body = await read_json(request, AezDecryptRequest)
    plaintext, version = await run_in_threadpool(
        _decrypt, keyring, name, body, body.ciphertext, body.key_version
    )
    return AezPlaintext(plaintext=plaintext, key_version=version)


def _encrypt_batch(
    keyring: Keyring, name: str, items: list[AezEncryptRequest]
) -> AezEncryptBatchResponse:
    _aez_material(keyring, name, None)  # unknown key or wrong type fails the whole batch

    def one(item: AezEncryptRequest) -> AezEncryptResult:
        ciphertext, version = _encrypt(keyring, name, item, item.plaintext)
        return AezEncryptResult(ciphertext=ciphertext, key_version=version)

    return AezEncryptBatchResponse(results=run_each(items, one, AezEncryptResult))


def _decrypt_batch(
    keyring: Keyring, name: str, items: list[AezDecryptRequest]
) -> AezDecryptBatchResponse:
    _aez_material(keyring, name, None)

    def one(item: AezDecryptRequest) -> AezDecryptResult:
        plaintext, version = _decrypt(keyring, name, item, item.ciphertext, item.key_version)
        return AezDecryptResult(plaintext=plaintext, key_version=version)

    return AezDecryptBatchResponse(results=run_each(items, one, AezDecryptResult))


@router.post(
    "/{name}/encrypt/batch",
    response_model=AezEncryptBatchResponse,
    response_model_exclude_none=True,
    summary="Encrypt many plaintexts with a server-held AEZ key",
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt_batch(
    body: AezEncryptBatch, name: KeyName, keyring: KeyringDep, settings: SettingsDep
) -> AezEncryptBatchResponse:
    check_batch_size(len(body.items), settings.max_batch_items)
    return await run_in_threadpool(_encrypt_batch, keyring, name, body.items)


@router.post(
    "/{name}/decrypt/batch",
    response_model=AezDecryptBatchResponse,
    response_model_exclude_none=True,
    summary="Decrypt many ciphertexts with a server-held AEZ key",
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt_batch(
    body: AezDecryptBatch, name: KeyName, keyring: KeyringDep, settings: SettingsDep
) -> AezDecryptBatchResponse:
    check_batch_size(len(body.items), settings.max_batch_items)
    return await run_in_threadpool(_decrypt_batch, keyring, name, body.items)
