"""Key lifecycle routes: create, list, read, rotate, delete, public part, export (`app.ops.keys`),
backup and import (`app.ops.backup`)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.http.body import json_body, read_json
from app.http.deps import (
    Admin,
    AdminChange,
    KeyName,
    ServicesDep,
    audit_note,
    key_access,
    service_access,
)
from app.http.operation import operation_id
from app.http.schemas import Base64Bytes
from app.ops import backup, keys
from app.ops.auth import Operation, Principal
from app.ops.keys import KEY_NAME_PATTERN, KeyCreate, KeyOut, KeyTypeName
from app.ops.work import in_thread

router = APIRouter(prefix="/v1/keys", tags=["keys"], generate_unique_id_function=operation_id)
MAX_PAGE = 1000


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
        description="ECIES and signatures: the public key (SEC1 uncompressed for secp256k1 and "
        "ecdsa-secp256k1, 32 bytes for x25519 and ed25519); QFE: the scheme's public key; tao: "
        "its decryption base"
    )


class KeyExport(BaseModel):
    name: str
    type: str
    version: int
    secret: Base64Bytes


class KeyBackupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    wrapping_key: Base64Bytes = Field(
        description="the wrapping public key (GET /v1/sys/wrapping-key) of the instance that "
        "will import the backup: SEC1 secp256k1"
    )


class KeyBackup(BaseModel):
    backup: Base64Bytes = Field(
        description="every version and policy of the key, ECIES-encrypted to the wrapping key"
    )


class KeyImport(BaseModel):
    """A backup (with `name` to restore it under another name), or BYOK material (with `name`
    and `type`)."""

    model_config = ConfigDict(extra="forbid")

    backup: Base64Bytes | None = Field(None, description="from POST /v1/keys/{name}/backup")
    name: str | None = Field(None, pattern=KEY_NAME_PATTERN)
    type: KeyTypeName | None = None
    wrapped_material: Base64Bytes | None = Field(
        None,
        description="the secret (32 bytes for the ECIES types, ecdsa-secp256k1 and ed25519, 48 "
        "for aez, 64 for hmac) ECIES-encrypted to the wrapping key with eciespy's default "
        "configuration",
    )

    @model_validator(mode="after")
    def _one_form(self) -> "KeyImport":
        if self.backup is not None:
            if self.type is not None or self.wrapped_material is not None:
                raise ValueError("a backup takes only name besides it")
        elif self.name is None or self.type is None or self.wrapped_material is None:
            raise ValueError("give backup, or name, type and wrapped_material")
        return self


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyOut,
    summary="Create a named key (admin)",
    responses={409: {"description": "a key of that name exists already"}},
    openapi_extra=json_body(KeyCreate),
)
async def create_key(request: Request, services: ServicesDep, _: AdminChange) -> KeyOut:
    body = await read_json(request, KeyCreate)  # after the token check
    audit_note(request.scope).key = body.name
    return await in_thread(keys.create, services.store, body, services.settings)


@router.post(
    "/import",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyOut,
    summary="Import a backup, or key material made elsewhere (BYOK) as a new key or a new "
    "version (admin)",
    responses={
        200: {"model": KeyOut, "description": "the material became a new version of the key"},
        409: {"description": "the name is taken (backup), or by a key of another type (BYOK)"},
        422: {"description": "does not decrypt under this instance's wrapping key"},
    },
    openapi_extra=json_body(KeyImport),
)
async def import_key(
    request: Request, response: Response, services: ServicesDep, _: AdminChange
) -> KeyOut:
    body = await read_json(request, KeyImport)
    note = audit_note(request.scope)
    note.key = body.name
    if body.backup is not None:
        note.details["form"] = "backup"
        document = await in_thread(backup.open_backup, services.store, body.backup)
        note.key = body.name or document["name"]
        key = await in_thread(backup.restore, services.store, document, body.name)
    else:
        assert body.name is not None and body.type is not None
        assert body.wrapped_material is not None
        note.details["form"] = "byok"
        key, new = await in_thread(
            backup.import_material,
            services.store,
            services.keyring,
            body.name,
            body.type,
            body.wrapped_material,
        )
        if not new:
            response.status_code = status.HTTP_200_OK
    note.key, note.key_version = key.name, key.latest_version
    return key


@router.get("", response_model=KeyList, summary="List the keys the token may read, by name")
def list_keys(
    services: ServicesDep,
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
    page, next_after = keys.readable_page(services.store, principal, after, limit)
    return KeyList(keys=page, next=next_after)


@router.get(
    "/{name}",
    response_model=KeyOut,
    summary="A key's metadata and versions",
    dependencies=[key_access(Operation.READ)],
)
def get_key(name: KeyName, services: ServicesDep) -> KeyOut:
    return keys.read(services.store, name)


@router.post(
    "/{name}/rotate",
    response_model=KeyOut,
    summary="Add a new version; older versions still decrypt (admin)",
    responses={409: {"description": "the key was deleted or replaced during the rotation"}},
)
def rotate_key(request: Request, name: KeyName, services: ServicesDep, _: AdminChange) -> KeyOut:
    key = keys.rotate(services.store, services.keyring, name)
    audit_note(request.scope).key_version = key.latest_version
    return key


@router.delete(
    "/{name}",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=keys.DeletionScheduled,
    summary="Schedule the key's destruction; until then every use of it is refused (admin)",
    responses={
        409: {"description": "the key is pending deletion already, or has deletion_protection"}
    },
)
def delete_key(
    name: KeyName,
    services: ServicesDep,
    _: AdminChange,
    window_seconds: Annotated[
        int | None,
        Query(
            ge=0,
            le=keys.MAX_DELETION_WINDOW_SECONDS,
            description="seconds until destruction; default CIPHERD_DELETION_WINDOW_SECONDS, "
            "at least CIPHERD_DELETION_MIN_WINDOW_SECONDS",
        ),
    ] = None,
) -> keys.DeletionScheduled:
    return keys.delete(services.store, services.keyring, name, window_seconds, services.settings)


@router.post(
    "/{name}/restore",
    response_model=KeyOut,
    summary="Cancel a scheduled deletion: the key is back with every version (admin)",
    responses={409: {"description": "the key is not pending deletion"}},
)
def restore_key(name: KeyName, services: ServicesDep, _: AdminChange) -> KeyOut:
    return keys.restore(services.store, name)


@router.patch(
    "/{name}",
    response_model=KeyOut,
    summary="Change the key's policies (admin)",
    openapi_extra=json_body(keys.KeyPatch),
)
async def patch_key(
    request: Request, name: KeyName, services: ServicesDep, _: AdminChange
) -> KeyOut:
    body = await read_json(request, keys.KeyPatch)  # after the token check
    audit_note(request.scope).details.update(body.model_dump(exclude_none=True, mode="json"))
    return await in_thread(keys.change_policy, services.store, services.keyring, name, body)


@router.post(
    "/{name}/trim",
    response_model=KeyOut,
    summary="Destroy the versions below min_decryption_version, for good (admin)",
)
def trim_key(request: Request, name: KeyName, services: ServicesDep, _: AdminChange) -> KeyOut:
    key, destroyed = keys.trim(services.store, services.keyring, name)
    audit_note(request.scope).details["destroyed_versions"] = destroyed
    return key


Version = Annotated[int | None, Query(ge=1, description="key version; default: the latest")]


@router.get(
    "/{name}/public",
    response_model=PublicKeyOut,
    summary="A key's public part",
    responses={409: {"description": "the key's type has no public part"}},
    dependencies=[key_access(Operation.PUBLIC)],
)
def public_key(name: KeyName, services: ServicesDep, version: Version = None) -> PublicKeyOut:
    material = keys.public_part(services.keyring, name, version)
    assert material.public is not None
    return PublicKeyOut(
        name=name, type=material.type, version=material.version, public_key=material.public
    )


@router.get(
    "/{name}/export",
    response_model=KeyExport,
    summary="The secret material of an exportable key (admin)",
)
def export_key(
    name: KeyName, services: ServicesDep, _: Admin, version: Version = None
) -> KeyExport:
    material = keys.export(services.store, name, version)
    return KeyExport(
        name=name, type=material.type, version=material.version, secret=material.secret
    )


@router.post(
    "/{name}/backup",
    response_model=KeyBackup,
    summary="Every version and policy of a key created with allow_backup, encrypted to "
    "another instance's wrapping key (admin)",
    responses={403: {"description": "the key was not created with allow_backup"}},
    openapi_extra=json_body(KeyBackupRequest),
)
async def backup_key(
    request: Request, name: KeyName, services: ServicesDep, _: AdminChange
) -> KeyBackup:
    body = await read_json(request, KeyBackupRequest)
    blob = await in_thread(backup.backup, services.store, name, body.wrapping_key)
    return KeyBackup(backup=blob)
