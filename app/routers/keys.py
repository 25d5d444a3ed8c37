"""Key lifecycle: create, list, read, rotate, delete, public part, export."""

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field, StrictBool, StrictInt

from app.auth import Operation, Principal
from app.body import json_body, read_json
from app.deps import (
    KEY_NAME_PATTERN,
    Admin,
    KeyName,
    KeyringDep,
    SettingsDep,
    key_access,
    service_access,
)
from app.errors import Problem, invalid_input
from app.keystore import KeyInfo, KeyStore
from app.keytypes import KEY_TYPES
from app.routing import operation_id
from app.schemas import Base64Bytes, RequestBody, timestamp
from app.settings import Settings
from core.fe.group import DEFAULT_CURVE

router = APIRouter(prefix="/v1/keys", tags=["keys"], generate_unique_id_function=operation_id)
MAX_PAGE = 1000

KeyTypeName = Annotated[
    str, Field(json_schema_extra={"enum": sorted(KEY_TYPES)}, description="the key's type")
]


class KeyCreate(RequestBody):
    name: str = Field(pattern=KEY_NAME_PATTERN, examples=["orders"])
    type: KeyTypeName
    # Strict: JSON true is not the dimension 1, nor "yes" a yes.
    dimension: StrictInt | None = Field(
        None, ge=1, description="vector length, for FE key types only"
    )
    curve: Literal["bls12-381", "bn254"] | None = Field(
        None,
        description="pairing curve, for FE key types only: bls12-381 (the default, about "
        "120-128-bit security) or bn254 (faster, about 100-bit security)",
    )
    exportable: StrictBool = Field(False, description="whether the admin may export the secret")


class KeyVersionOut(BaseModel):
    version: int
    created_at: datetime


class KeyOut(BaseModel):
    name: str
    type: str
    dimension: int | None = None
    curve: str | None = Field(None, description="FE key types: the pairing curve")
    exportable: bool
    created_at: datetime
    updated_at: datetime
    latest_version: int
    versions: list[KeyVersionOut] | None = Field(
        None, description="every version (present when reading one key)"
    )


class KeyList(BaseModel):
    keys: list[KeyOut]
    next: str | None = Field(
        None,
        description="with `limit`: pass as `after` for the next page; null on the last page. "
        "Pages hold only keys the token may read: `limit` of them, fewer on the last page",
    )


class PublicKeyOut(BaseModel):
    name: str
    type: str
    version: int
    public_key: Base64Bytes = Field(
        description="ECIES: the public key (SEC1 uncompressed for secp256k1, 32 bytes for "
        "x25519 and ed25519); QFE: the scheme's public key; tao: its decryption base"
    )


class KeyExport(BaseModel):
    name: str
    type: str
    version: int
    secret: Base64Bytes


def key_out(info: KeyInfo, with_versions: bool) -> KeyOut:
    return KeyOut(
        name=info.name,
        type=info.type,
        dimension=info.params.get("dimension"),
        # FE keys made before the choice of curve are BLS12-381 keys.
        curve=info.params.get("curve", DEFAULT_CURVE) if "dimension" in info.params else None,
        exportable=info.exportable,
        created_at=timestamp(info.created_at),
        updated_at=timestamp(info.updated_at),
        latest_version=info.latest_version,
        versions=[
            KeyVersionOut(version=v.version, created_at=timestamp(v.created_at))
            for v in info.versions
        ]
        if with_versions
        else None,
    )


def creation_params(body: KeyCreate, settings: Settings) -> dict[str, Any]:
    key_type = KEY_TYPES.get(body.type)
    if key_type is None:
        raise invalid_input(f"type: unknown key type {body.type!r}; one of {sorted(KEY_TYPES)}")
    if key_type.family != "fe":
        if body.dimension is not None:
            raise invalid_input(f"dimension: only FE key types take a dimension, not {body.type}")
        if body.curve is not None:
            raise invalid_input(f"curve: only FE key types take a curve, not {body.type}")
        return {}
    if body.dimension is None:
        raise invalid_input(f"dimension: key type {body.type} needs a dimension")
    if body.dimension > settings.fe_max_dimension:
        raise invalid_input(
            f"dimension: {body.dimension} is over this service's maximum of "
            f"{settings.fe_max_dimension} (CIPHERD_FE_MAX_DIMENSION)"
        )
    return {"dimension": body.dimension, "curve": body.curve or DEFAULT_CURVE}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyOut,
    summary="Create a named key (admin)",
    responses={409: {"description": "a key of that name exists already"}},
    openapi_extra=json_body(KeyCreate),
)
async def create_key(
    request: Request, keyring: KeyringDep, settings: SettingsDep, _: Admin
) -> KeyOut:
    body = await read_json(request, KeyCreate)  # after the token check
    info = await run_in_threadpool(create_stored_key, keyring.store, body, settings)
    return key_out(info, with_versions=True)


def create_stored_key(store: KeyStore, body: KeyCreate, settings: Settings) -> KeyInfo:
    """Check the request against the limits, draw the material, store the key: what
    `POST /v1/keys` and `cipherd keys create` both do."""
    params = creation_params(body, settings)
    secret, public = KEY_TYPES[body.type].generate(params)
    return store.create(body.name, body.type, params, body.exportable, secret, public)


@router.get("", response_model=KeyList, summary="List the keys the token may read, by name")
def list_keys(
    keyring: KeyringDep,
    principal: Annotated[Principal, service_access(Operation.READ)],
    limit: Annotated[
        int | None, Query(ge=1, le=MAX_PAGE, description="keys per page; default: all")
    ] = None,
    after: Annotated[
        str | None,
        Query(
            pattern=r"^[A-Za-z0-9._-]{0,128}$",
            description="start after this name (a page's `next`)",
        ),
    ] = None,
) -> KeyList:
    page, next_after = readable_page(keyring.store, principal, after, limit)
    return KeyList(keys=[key_out(info, with_versions=False) for info in page], next=next_after)


def readable_page(
    store: KeyStore, principal: Principal, after: str | None, limit: int | None
) -> tuple[list[KeyInfo], str | None]:
    """Up to `limit` keys after `after` that the token may read, and the `after` of the next
    page (None on the last).

    The store filters by the token's patterns before it cuts the page, so `next` is always a
    key of the page: cutting first would hand a narrow token the names of keys outside its
    scope, and filtering here would read every row past a sparse page. One key more than the
    page shows whether a next one exists. `allows` still decides each key.
    """
    patterns = None if principal.admin else principal.key_patterns
    rows = store.list(after, None if limit is None else limit + 1, patterns)
    page = [info for info in rows if principal.allows(Operation.READ, info.name)]
    if limit is not None and len(page) > limit:
        return page[:limit], page[limit - 1].name
    return page, None


@router.get(
    "/{name}",
    response_model=KeyOut,
    summary="A key's metadata and versions",
    dependencies=[key_access(Operation.READ)],
)
def get_key(name: KeyName, keyring: KeyringDep) -> KeyOut:
    return key_out(keyring.store.get(name), with_versions=True)


@router.post(
    "/{name}/rotate",
    response_model=KeyOut,
    summary="Add a new version; older versions still decrypt (admin)",
    responses={409: {"description": "the key was deleted or replaced during the rotation"}},
)
def rotate_key(name: KeyName, keyring: KeyringDep, _: Admin) -> KeyOut:
    info = rotate_stored_key(keyring.store, name)
    keyring.forget(name)
    return key_out(info, with_versions=True)


def rotate_stored_key(store: KeyStore, name: str) -> KeyInfo:
    """A new version of the key, drawn with the parameters it was created with."""
    current = store.get(name)
    secret, public = KEY_TYPES[current.type].generate(current.params)
    return store.rotate(name, secret, public, current.created_at)


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a key and every version of it, for good (admin)",
)
def delete_key(name: KeyName, keyring: KeyringDep, _: Admin) -> None:
    keyring.store.delete(name)
    keyring.forget(name)


Version = Annotated[int | None, Query(ge=1, description="key version; default: the latest")]


@router.get(
    "/{name}/public",
    response_model=PublicKeyOut,
    summary="A key's public part",
    responses={409: {"description": "the key's type has no public part"}},
    dependencies=[key_access(Operation.PUBLIC)],
)
def public_key(name: KeyName, keyring: KeyringDep, version: Version = None) -> PublicKeyOut:
    material = keyring.material(name, version)
    if material.public is None:
        raise Problem(
            409,
            "no-public-part",
            "No public part",
            f"key {name!r} of type {material.type} has no public part",
        )
    return PublicKeyOut(
        name=name, type=material.type, version=material.version, public_key=material.public
    )


@router.get(
    "/{name}/export",
    response_model=KeyExport,
    summary="The secret material of an exportable key (admin)",
)
def export_key(name: KeyName, keyring: KeyringDep, _: Admin, version: Version = None) -> KeyExport:
    material = keyring.store.material(name, version)
    if not material.exportable:
        raise Problem(
            403, "not-exportable", "Not exportable", f"key {name!r} was not created exportable"
        )
    return KeyExport(
        name=name, type=material.type, version=material.version, secret=material.secret
    )
