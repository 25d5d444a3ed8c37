"""ECIES with server-held keys, to a given public key, and in batches.

Payloads are exactly eciespy's and eciesjs's, so a client can encrypt locally to the key's public
part and have the service decrypt. Encryption answers with the key version it used; decryption
takes the version (default: the latest), since the payload format has no room for it.
"""

from functools import cache, partial
from typing import Annotated, Literal

from fastapi import Request, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

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
from app.deps import KeyName, key_access, service_access
from app.errors import ProblemDetail, failed_with, invalid_input, wrong_key_type
from app.keyring import Keyring
from app.keystore import KeyMaterial
from app.metrics import timed
from app.routing import family_router
from app.schemas import Base64Bytes, KeyVersion, RequestBody
from core import ecies
from core.errors import DecryptionError

router = family_router("ecies")


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


class EciesConfig(EciesOptions):
    """eciespy's Config, for encryption to a public key given in the request."""

    elliptic_curve: Literal["secp256k1", "x25519", "ed25519"] = "secp256k1"


def _query_number(value: object) -> object:
    """A query value is text: "12" must meet the Literal[12, 16, 24] that JSON gives as 12."""
    return int(value) if isinstance(value, str) and value.isdecimal() else value


class EciesQuery(EciesOptions):
    """The parameters of a raw (application/octet-stream) encryption."""

    symmetric_nonce_length: Annotated[Literal[12, 16, 24], BeforeValidator(_query_number)] = Field(
        16, description="12 or 16 for AES-256-GCM; XChaCha20-Poly1305 always uses 24"
    )


class EciesDecryptQuery(EciesQuery):
    """The parameters of a raw decryption."""

    key_version: int | None = Field(None, ge=1, description="default: the latest version")


class EciesEncryptRequest(RequestBody):
    plaintext: Base64Bytes
    config: EciesOptions = EciesOptions()


class EciesDecryptRequest(RequestBody):
    ciphertext: Base64Bytes
    key_version: KeyVersion = None
    config: EciesOptions = EciesOptions()


class EciesPublicEncryptRequest(RequestBody):
    public_key: Base64Bytes = Field(
        description="secp256k1: 33, 64 or 65 bytes; x25519 and ed25519: 32 bytes"
    )
    plaintext: Base64Bytes
    config: EciesConfig = EciesConfig()


class EciesCiphertext(BaseModel):
    ciphertext: Base64Bytes
    key_version: int


class EciesPlaintext(BaseModel):
    plaintext: Base64Bytes
    key_version: int


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


@cache  # a few dozen distinct (curve, options); building and checking a Config costs 1.4 µs
def _config(curve: str, options: EciesOptions) -> ecies.Config:
    nonce_length = (
        16 if options.symmetric_algorithm == "xchacha20" else (options.symmetric_nonce_length)
    )
    if options.symmetric_algorithm == "aes-256-gcm" and nonce_length == 24:
        raise invalid_input("config.symmetric_nonce_length: AES-256-GCM takes 12 or 16")
    return ecies.Config(
        elliptic_curve=curve,
        is_ephemeral_key_compressed=options.is_ephemeral_key_compressed,
        is_hkdf_key_compressed=options.is_hkdf_key_compressed,
        symmetric_algorithm=options.symmetric_algorithm,
        symmetric_nonce_length=nonce_length,
    )


def _ecies(material: KeyMaterial) -> KeyMaterial:
    if not material.type.startswith("ecies-"):
        raise wrong_key_type(material.name, material.type, "ECIES")
    return material


def _curve(material: KeyMaterial) -> str:
    return material.type.removeprefix("ecies-")


def _encrypt(material: KeyMaterial, plaintext: bytes, options: EciesOptions) -> bytes:
    config = _config(_curve(material), options)
    with timed("ecies", "encrypt"):
        return ecies.encrypt(material.public or b"", plaintext, config, receiver_sk=material.secret)


def _decrypt(material: KeyMaterial, ciphertext: bytes, options: EciesOptions) -> bytes:
    config = _config(_curve(material), options)
    with timed("ecies", "decrypt"):
        try:
            return ecies.decrypt(material.secret, ciphertext, config)
        except DecryptionError:
            raise failed_with(material, "decryption-failed", "Decryption failed") from None


@router.post(
    "/{name}/encrypt",
    response_model=EciesCiphertext,
    summary="Encrypt to a server-held ECIES key",
    openapi_extra=dual_body(
        EciesEncryptRequest, "the plaintext; parameters in the query", EciesQuery
    ),
    responses=binary_response("the payload, for a raw request"),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt(request: Request, name: KeyName) -> Response:
    keyring: Keyring = request.app.state.keyring
    if is_raw(request):
        query = read_query(request, EciesQuery)
        data = await read_raw(request)
        material = _ecies(await keyring.fetch(name))
        payload = await compute(len(data), _encrypt, material, data, query)
        return raw_response(payload, material.version)
    body = await read_json(request, EciesEncryptRequest, EciesQuery)
    material = _ecies(await keyring.fetch(name))
    payload = await compute(len(body.plaintext), _encrypt, material, body.plaintext, body.config)
    return json_response(EciesCiphertext(ciphertext=payload, key_version=material.version))


@router.post(
    "/{name}/decrypt",
    response_model=EciesPlaintext,
    summary="Decrypt with a server-held ECIES key",
    openapi_extra=dual_body(
        EciesDecryptRequest, "the payload; parameters in the query", EciesDecryptQuery
    ),
    responses=binary_response("the plaintext, for a raw request"),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt(request: Request, name: KeyName) -> Response:
    keyring: Keyring = request.app.state.keyring
    if is_raw(request):
        query = read_query(request, EciesDecryptQuery)
        data = await read_raw(request)
        material = _ecies(await keyring.fetch(name, query.key_version))
        plaintext = await compute(len(data), _decrypt, material, data, query)
        return raw_response(plaintext, material.version)
    body = await read_json(request, EciesDecryptRequest, EciesDecryptQuery)
    material = _ecies(await keyring.fetch(name, body.key_version))
    plaintext = await compute(
        len(body.ciphertext), _decrypt, material, body.ciphertext, body.config
    )
    return json_response(EciesPlaintext(plaintext=plaintext, key_version=material.version))


def _encrypt_batch(
    keyring: Keyring, name: str, batch: EciesEncryptBatch
) -> EciesEncryptBatchResponse:
    material = _ecies(keyring.material(name))  # unknown key or wrong type fails the whole batch

    def one(item: EciesEncryptRequest) -> EciesEncryptResult:
        ciphertext = _encrypt(material, item.plaintext, item.config)
        return EciesEncryptResult(ciphertext=ciphertext, key_version=material.version)

    return EciesEncryptBatchResponse(results=run_each(batch.items, one, EciesEncryptResult))


def _decrypt_batch(
    keyring: Keyring, name: str, batch: EciesDecryptBatch
) -> EciesDecryptBatchResponse:
    _ecies(keyring.material(name))

    def one(item: EciesDecryptRequest) -> EciesDecryptResult:
        material = _ecies(keyring.material(name, item.key_version))
        plaintext = _decrypt(material, item.ciphertext, item.config)
        return EciesDecryptResult(plaintext=plaintext, key_version=material.version)

    return EciesDecryptBatchResponse(results=run_each(batch.items, one, EciesDecryptResult))


@router.post(
    "/{name}/encrypt/batch",
    response_model=EciesEncryptBatchResponse,
    summary="Encrypt many plaintexts to a server-held ECIES key",
    openapi_extra=json_body(EciesEncryptBatch),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt_batch(request: Request, name: KeyName) -> Response:
    run = partial(_encrypt_batch, request.app.state.keyring, name)
    return await serve_batch(request, EciesEncryptBatch, run)


@router.post(
    "/{name}/decrypt/batch",
    response_model=EciesDecryptBatchResponse,
    summary="Decrypt many payloads with a server-held ECIES key",
    openapi_extra=json_body(EciesDecryptBatch),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt_batch(request: Request, name: KeyName) -> Response:
    run = partial(_decrypt_batch, request.app.state.keyring, name)
    return await serve_batch(request, EciesDecryptBatch, run)


def _encrypt_to(body: EciesPublicEncryptRequest) -> bytes:
    config = _config(body.config.elliptic_curve, body.config)
    with timed("ecies", "encrypt"):
        return ecies.encrypt(body.public_key, body.plaintext, config)


@router.post(
    "/encrypt",
    response_model=EciesPublicCiphertext,
    summary="Encrypt to a public key given in the request (no stored key)",
    openapi_extra=json_body(EciesPublicEncryptRequest),
    dependencies=[service_access(Operation.ENCRYPT)],
)
async def encrypt_to_public_key(request: Request) -> Response:
    body = await read_json(request, EciesPublicEncryptRequest)  # after the token check
    ciphertext = await compute(len(body.plaintext), _encrypt_to, body)
    return json_response(EciesPublicCiphertext(ciphertext=ciphertext))
