"""AEZ v5 with server-held keys: encrypt and decrypt, JSON or raw, single or in batches.

The parameters are the node package `aez`'s: a nonce of any length (omitted: empty), a vector of
associated-data strings, and tau, the expansion in bytes. AEZ stays secure when a nonce repeats,
except that equal messages then give equal ciphertexts. A ciphertext that does not authenticate
is a 400 that says only that.
"""

from functools import partial
from typing import Annotated

from fastapi import Request, Response
from pydantic import BaseModel, Field

from app.auth import Operation
from app.batch import Items, run_each, serve_batch
from app.body import (
    binary_response,
    compute,
    dual_body,
    is_raw,
    json_body,
    json_response,
    raw_response,
    read_json,
    read_query,
    read_raw,
)
from app.deps import KeyName, key_access
from app.errors import ProblemDetail, failed_with, wrong_key_type
from app.keyring import Keyring
from app.keystore import KeyMaterial
from app.metrics import timed
from app.routing import family_router
from app.schemas import Base64Bytes, KeyVersion, RequestBody
from core import aez

router = family_router("aez")

Tau = Annotated[int, Field(ge=0, le=aez.MAX_TAU, description="expansion in bytes")]
# In JSON, tau must be a number: "16", 16.0 and true are refused rather than converted.
StrictTau = Annotated[
    int, Field(ge=0, le=aez.MAX_TAU, strict=True, description="expansion in bytes")
]


class AezParams(RequestBody):
    nonce: Base64Bytes = Field(b"", description="any length; omitted: empty")
    ad: list[Base64Bytes] | None = Field(
        None, description="associated data strings; [] and [''] differ", max_length=1024
    )
    tau: StrictTau = 16


class AezQuery(RequestBody):
    """The parameters of a raw (application/octet-stream) encryption."""

    nonce: Base64Bytes = Field(b"", description="base64 (percent-encode it in the URL)")
    ad: list[Base64Bytes] | None = Field(
        None, description="repeat for each string, in order", max_length=1024
    )
    tau: Tau = 16


class AezDecryptQuery(AezQuery):
    """The parameters of a raw decryption."""

    key_version: int | None = Field(None, ge=1, description="default: the latest version")


class AezEncryptRequest(AezParams):
    plaintext: Base64Bytes


class AezDecryptRequest(AezParams):
    ciphertext: Base64Bytes
    key_version: KeyVersion = None


class AezCiphertext(BaseModel):
    ciphertext: Base64Bytes
    key_version: int


class AezPlaintext(BaseModel):
    plaintext: Base64Bytes
    key_version: int


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


def _aez(material: KeyMaterial) -> KeyMaterial:
    if material.type != "aez":
        raise wrong_key_type(material.name, material.type, "AEZ")
    return material


def _encrypt(material: KeyMaterial, params: AezParams | AezQuery, plaintext: bytes) -> bytes:
    with timed("aez", "encrypt"):
        return aez.encrypt(material.secret, params.nonce, params.ad, params.tau, plaintext)


def _decrypt(material: KeyMaterial, params: AezParams | AezQuery, ciphertext: bytes) -> bytes:
    with timed("aez", "decrypt"):
        plaintext = aez.decrypt(material.secret, params.nonce, params.ad, params.tau, ciphertext)
    if plaintext is None:
        raise failed_with(material, "authentication-failed", "Authentication failed")
    return plaintext


@router.post(
    "/{name}/encrypt",
    response_model=AezCiphertext,
    summary="Encrypt with a server-held AEZ key",
    openapi_extra=dual_body(AezEncryptRequest, "the plaintext; parameters in the query", AezQuery),
    responses=binary_response("the ciphertext, for a raw request"),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt(request: Request, name: KeyName) -> Response:
    keyring: Keyring = request.app.state.keyring
    if is_raw(request):
        query = read_query(request, AezQuery)
        data = await read_raw(request)
        material = _aez(await keyring.fetch(name))
        ciphertext = await compute(len(data), _encrypt, material, query, data)
        return raw_response(ciphertext, material.version)
    body = await read_json(request, AezEncryptRequest, AezQuery)
    material = _aez(await keyring.fetch(name))
    ciphertext = await compute(len(body.plaintext), _encrypt, material, body, body.plaintext)
    return json_response(AezCiphertext(ciphertext=ciphertext, key_version=material.version))


@router.post(
    "/{name}/decrypt",
    response_model=AezPlaintext,
    summary="Decrypt with a server-held AEZ key",
    openapi_extra=dual_body(
        AezDecryptRequest, "the ciphertext; parameters in the query", AezDecryptQuery
    ),
    responses=binary_response("the plaintext, for a raw request"),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt(request: Request, name: KeyName) -> Response:
    keyring: Keyring = request.app.state.keyring
    if is_raw(request):
        query = read_query(request, AezDecryptQuery)
        data = await read_raw(request)
        material = _aez(await keyring.fetch(name, query.key_version))
        plaintext = await compute(len(data), _decrypt, material, query, data)
        return raw_response(plaintext, material.version)
    body = await read_json(request, AezDecryptRequest, AezDecryptQuery)
    material = _aez(await keyring.fetch(name, body.key_version))
    plaintext = await compute(len(body.ciphertext), _decrypt, material, body, body.ciphertext)
    return json_response(AezPlaintext(plaintext=plaintext, key_version=material.version))


def _encrypt_batch(keyring: Keyring, name: str, batch: AezEncryptBatch) -> AezEncryptBatchResponse:
    material = _aez(keyring.material(name))  # unknown key or wrong type fails the whole batch

    def one(item: AezEncryptRequest) -> AezEncryptResult:
        ciphertext = _encrypt(material, item, item.plaintext)
        return AezEncryptResult(ciphertext=ciphertext, key_version=material.version)

    return AezEncryptBatchResponse(results=run_each(batch.items, one, AezEncryptResult))


def _decrypt_batch(keyring: Keyring, name: str, batch: AezDecryptBatch) -> AezDecryptBatchResponse:
    _aez(keyring.material(name))

    def one(item: AezDecryptRequest) -> AezDecryptResult:
        material = _aez(keyring.material(name, item.key_version))
        plaintext = _decrypt(material, item, item.ciphertext)
        return AezDecryptResult(plaintext=plaintext, key_version=material.version)

    return AezDecryptBatchResponse(results=run_each(batch.items, one, AezDecryptResult))


@router.post(
    "/{name}/encrypt/batch",
    response_model=AezEncryptBatchResponse,
    summary="Encrypt many plaintexts with a server-held AEZ key",
    openapi_extra=json_body(AezEncryptBatch),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt_batch(request: Request, name: KeyName) -> Response:
    run = partial(_encrypt_batch, request.app.state.keyring, name)
    return await serve_batch(request, AezEncryptBatch, run)


@router.post(
    "/{name}/decrypt/batch",
    response_model=AezDecryptBatchResponse,
    summary="Decrypt many ciphertexts with a server-held AEZ key",
    openapi_extra=json_body(AezDecryptBatch),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt_batch(request: Request, name: KeyName) -> Response:
    run = partial(_decrypt_batch, request.app.state.keyring, name)
    return await serve_batch(request, AezDecryptBatch, run)
