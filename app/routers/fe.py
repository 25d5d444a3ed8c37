"""Functional encryption with server-held master keys: keygen, encrypt, decrypt, in batches.

The authority's master key never leaves the service. Clients ask for functional keys (for a
vector y, or a matrix F for the quadratic schemes) and ciphertexts, which travel as the versioned
bytes of `core.fe` (base64 here), so they can also be decrypted without the service. Decryption
needs no secret: it checks every point it receives, then reuses cached discrete-log tables and
prepared keys. Limits on dimension and range are checked before any work.
"""

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field, StrictInt, model_validator

from app.auth import Operation
from app.batch import Items, run_each, serve_batch
from app.body import json_body, json_response, read_json
from app.deps import KeyName, key_access
from app.errors import ProblemDetail, invalid_input, wrong_key_type
from app.fe_cache import Cold, FeCaches
from app.fe_schemes import FE_SCHEMES, FeScheme
from app.keyring import Keyring
from app.keystore import KeyMaterial
from app.metrics import timed
from app.routing import family_router
from app.schemas import Base64Bytes, KeyVersion, RequestBody
from app.settings import Settings
from core.errors import KeyMismatchError
from core.fe import encoding, group

# A small decryption (a ciphertext of about 20 points at most: a few ms) whose key version,
# table and prepared key are all cached runs on the event loop: handing it to a worker thread
# costs about 0.9 ms here, a fifth of such a request. Anything that would query the store, build
# a table, prepare a key, search a per-pair range or wait for the RELIC lock goes to a thread.
INLINE_CIPHERTEXT_BYTES = 1024
router = family_router("fe")

I64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
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
    key_version: KeyVersion = Field(None, description="tao only: whose decryption base to use")


class FeDecryptManyRequest(RequestBody):
    functional_key: Base64Bytes
    ciphertexts: Items[Base64Bytes]
    bounds: Annotated[list[I64], Field(min_length=2, max_length=2)]
    key_version: KeyVersion = Field(None, description="tao only: whose decryption base to use")

    @property
    def items(self) -> list[bytes]:
        """The ciphertexts: what the batch limit counts (`app.batch.serve_batch`)."""
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


def _fe_scheme(name: str, material: KeyMaterial) -> FeScheme:
    scheme = FE_SCHEMES.get(material.type)
    if scheme is None:
        raise wrong_key_type(name, material.type, "functional encryption")
    return scheme


def _fe_material(keyring: Keyring, name: str, version: int | None) -> tuple[KeyMaterial, FeScheme]:
    material = keyring.material(name, version)
    return material, _fe_scheme(name, material)


def _keygen(keyring: Keyring, caches: FeCaches, name: str, item: FeKeygenRequest) -> FeKeygenResult:
    material, scheme = _fe_material(keyring, name, item.key_version)
    function = item.f if scheme.quadratic else item.y
    if function is None:
        wanted = "f (an n×n matrix)" if scheme.quadratic else "y (a vector)"
        raise invalid_input(f"key type {material.type} takes {wanted}")
    msk = caches.decoded(
        "master", scheme, name, material.version, material.secret, scheme.master_key
    )
    with timed("fe", f"{scheme.name}.keygen"):
        key = scheme.keygen(msk, function)
    return FeKeygenResult(functional_key=key, key_version=material.version)


def _encrypt(
    keyring: Keyring, caches: FeCaches, name: str, item: FeEncryptRequest
) -> FeEncryptResult:
    material, scheme = _fe_material(keyring, name, item.key_version)
    if scheme.quadratic:
        if item.y is None:
            raise invalid_input(f"key type {material.type} encrypts a pair: give x and y")
        assert material.public is not None
        key = caches.decoded(
            "public", scheme, name, material.version, material.public, scheme.public_key
        )
    else:
        if item.y is not None:
            raise invalid_input(f"key type {material.type} encrypts one vector: give only x")
        key = caches.decoded(
            "master", scheme, name, material.version, material.secret, scheme.master_key
        )
    with timed("fe", f"{scheme.name}.encrypt"):
        ciphertext = scheme.encrypt(key, item.x, item.y)
    return FeEncryptResult(ciphertext=ciphertext, key_version=material.version)


def _check_bounds(bounds: list[int], settings: Settings) -> tuple[int, int]:
    lo, hi = bounds
    if lo > hi:
        raise invalid_input(f"bounds: lo ({lo}) must not be above hi ({hi})")
    if hi - lo > settings.fe_max_range:
        raise invalid_input(
            f"bounds: the range spans {hi - lo}, over this service's maximum of "
            f"{settings.fe_max_range} (CIPHERD_FE_MAX_RANGE)"
        )
    return lo, hi


def _decryptor(
    keyring: Keyring,
    caches: FeCaches,
    settings: Settings,
    name: str,
    functional_key: bytes,
    bounds: list[int],
    version: int | None,
    warm_only: bool = False,
) -> Callable[[bytes], int | None]:
    """Decryption of ciphertexts under one functional key: decoded, tabled and prepared once.

    With `warm_only` it raises `Cold` rather than query the store, build a table, decode or
    prepare a key, or search a per-pair range: the caller is the event loop.
    """
    lo, hi = _check_bounds(bounds, settings)
    material = keyring.cached(name, version) if warm_only else keyring.material(name, version)
    if material is None:
        raise Cold
    scheme = _fe_scheme(name, material)
    if warm_only and scheme.base == "per-pair":
        raise Cold
    key = caches.functional_key(scheme, functional_key, warm_only)
    dimension = material.params["dimension"]
    if key.n != dimension:
        raise invalid_input(
            f"functional_key: dimension {key.n}, but key {name!r} has dimension {dimension}"
        )
    curve = group.curve(material.params.get("curve", group.DEFAULT_CURVE))
    if key.curve != curve.name:
        raise invalid_input(
            f"functional_key: made on {key.curve}, but key {name!r} is {curve.name}"
        )
    if scheme.base == "master" and not encoding.same_id(
        key.master_id, encoding.read_master_id(material.secret)
    ):
        # Its base is the version's: with another version's, the search would find nothing.
        raise KeyMismatchError(
            f"functional_key: not made under version {material.version} of key {name!r}; "
            "for one made under an earlier version, pass its key_version"
        )
    if scheme.base == "per-pair":

        def find(ct: Any) -> int | None:
            return scheme.module.decrypt(key, ct, lo, hi)
    else:
        if scheme.base == "master":
            public = material.public or b""
            table = caches.table(public, lambda: curve.gt_from_bytes(public), lo, hi, warm_only)
        else:
            table = caches.table(f"gT:{curve.name}".encode(), curve.gt_generator, lo, hi, warm_only)

        def find(ct: Any) -> int | None:
            return scheme.module.decrypt(table, key, ct)

    def decrypt(data: bytes) -> int | None:
        ciphertext = scheme.ciphertext(data)
        if ciphertext.curve != curve.name:
            raise invalid_input(
                f"ciphertext: made on {ciphertext.curve}, but key {name!r} is {curve.name}"
            )
        with timed("fe", f"{scheme.name}.decrypt"):
            return find(ciphertext)

    return decrypt


@router.post(
    "/{name}/keygen",
    response_model=FeFunctionalKey,
    summary="A functional key for y (inner product) or F (quadratic)",
    openapi_extra=json_body(FeKeygenRequest),
    dependencies=[key_access(Operation.KEYGEN)],
)
async def keygen(request: Request, name: KeyName) -> Response:
    body = await read_json(request, FeKeygenRequest)
    state = request.app.state
    result = await run_in_threadpool(_keygen, state.keyring, state.fe_caches, name, body)
    return json_response(result, exclude_none=True)


@router.post(
    "/{name}/encrypt",
    response_model=FeCiphertext,
    summary="A ciphertext of x (inner product) or of x and y (quadratic)",
    openapi_extra=json_body(FeEncryptRequest),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt(request: Request, name: KeyName) -> Response:
    body = await read_json(request, FeEncryptRequest)
    state = request.app.state
    result = await run_in_threadpool(_encrypt, state.keyring, state.fe_caches, name, body)
    return json_response(result, exclude_none=True)


@router.post(
    "/{name}/decrypt",
    response_model=FeResult,
    summary="The inner product or quadratic form, or null outside the bounds",
    openapi_extra=json_body(FeDecryptRequest),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt(request: Request, name: KeyName) -> Response:
    body = await read_json(request, FeDecryptRequest)
    keyring: Keyring = request.app.state.keyring
    settings: Settings = request.app.state.settings
    caches: FeCaches = request.app.state.fe_caches

    def run(warm_only: bool) -> Response:
        decryptor = _decryptor(
            keyring,
            caches,
            settings,
            name,
            body.functional_key,
            body.bounds,
            body.key_version,
            warm_only,
        )
        return json_response(FeResult(result=decryptor(body.ciphertext)))

    if len(body.ciphertext) <= INLINE_CIPHERTEXT_BYTES and group.LOCK.acquire(blocking=False):
        try:
            return run(warm_only=True)
        except Cold:
            pass
        finally:
            group.LOCK.release()
    return await run_in_threadpool(run, False)


@router.post(
    "/{name}/decrypt/many",
    response_model=FeDecryptBatchResponse,
    summary="One functional key against many ciphertexts",
    openapi_extra=json_body(FeDecryptManyRequest),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt_many(request: Request, name: KeyName) -> Response:
    state = request.app.state
    run = partial(_decrypt_many, state.keyring, state.fe_caches, state.settings, name)
    return await serve_batch(request, FeDecryptManyRequest, run, exclude_none=False)


def _decrypt_many(
    keyring: Keyring, caches: FeCaches, settings: Settings, name: str, body: FeDecryptManyRequest
) -> FeDecryptBatchResponse:
    decryptor = _decryptor(
        keyring, caches, settings, name, body.functional_key, body.bounds, body.key_version
    )
    return FeDecryptBatchResponse(
        results=run_each(
            body.items, lambda ct: FeDecryptResult(result=decryptor(ct)), FeDecryptResult
        )
    )


@router.post(
    "/{name}/keygen/batch",
    response_model=FeKeygenBatchResponse,
    summary="Many functional keys",
    openapi_extra=json_body(FeKeygenBatch),
    dependencies=[key_access(Operation.KEYGEN)],
)
async def keygen_batch(request: Request, name: KeyName) -> Response:
    state = request.app.state
    run = partial(_keygen_batch, state.keyring, state.fe_caches, name)
    return await serve_batch(request, FeKeygenBatch, run)


def _keygen_batch(
    keyring: Keyring, caches: FeCaches, name: str, batch: FeKeygenBatch
) -> FeKeygenBatchResponse:
    _fe_material(keyring, name, None)
    return FeKeygenBatchResponse(
        results=run_each(
            batch.items, lambda item: _keygen(keyring, caches, name, item), FeKeygenResult
        )
    )


@router.post(
    "/{name}/encrypt/batch",
    response_model=FeEncryptBatchResponse,
    summary="Many ciphertexts",
    openapi_extra=json_body(FeEncryptBatch),
    dependencies=[key_access(Operation.ENCRYPT)],
)
async def encrypt_batch(request: Request, name: KeyName) -> Response:
    state = request.app.state
    run = partial(_encrypt_batch, state.keyring, state.fe_caches, name)
    return await serve_batch(request, FeEncryptBatch, run)


def _encrypt_batch(
    keyring: Keyring, caches: FeCaches, name: str, batch: FeEncryptBatch
) -> FeEncryptBatchResponse:
    _fe_material(keyring, name, None)
    return FeEncryptBatchResponse(
        results=run_each(
            batch.items, lambda item: _encrypt(keyring, caches, name, item), FeEncryptResult
        )
    )


@router.post(
    "/{name}/decrypt/batch",
    response_model=FeDecryptBatchResponse,
    summary="Many (functional key, ciphertext, bounds) decryptions",
    openapi_extra=json_body(FeDecryptBatch),
    dependencies=[key_access(Operation.DECRYPT)],
)
async def decrypt_batch(request: Request, name: KeyName) -> Response:
    state = request.app.state
    run = partial(_decrypt_batch, state.keyring, state.fe_caches, state.settings, name)
    return await serve_batch(request, FeDecryptBatch, run, exclude_none=False)


def _decrypt_batch(
    keyring: Keyring, caches: FeCaches, settings: Settings, name: str, batch: FeDecryptBatch
) -> FeDecryptBatchResponse:
    _fe_material(keyring, name, None)

    def one(item: FeDecryptRequest) -> FeDecryptResult:
        decryptor = _decryptor(
            keyring,
            caches,
            settings,
            name,
            item.functional_key,
            item.bounds,
            item.key_version,
        )
        return FeDecryptResult(result=decryptor(item.ciphertext))

    return FeDecryptBatchResponse(results=run_each(batch.items, one, FeDecryptResult))
