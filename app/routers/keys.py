"""Key lifecycle routes: create, list, read, rotate, delete, public part, export (`app.ops.keys`),
backup and import (`app.ops.backup`, `app.ops.byok`)."""

import base64
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from app.http.body import json_body, read_json
from app.http.deps import (
    EVERY_OPERATION,
    Caller,
    KeyName,
    ServicesDep,
    admit_change,
    audit_note,
    key_access,
    key_change,
    service_access,
)
from app.http.operation import operation_id
from app.http.schemas import Base64Bytes, PageSize
from app.ops import backup, byok, jwt, keys
from app.ops.errors import forbidden
from app.ops.grants import AdminOperation, Operation, Principal
from app.ops.keys import KEY_NAME_PATTERN, KeyCreate, KeyOut, KeyTypeName
from app.ops.keytypes import PublicFormat
from app.ops.work import in_thread

router = APIRouter(prefix="/v1/keys", tags=["keys"], generate_unique_id_function=operation_id)


# The caller, allowed an operation on the path's key, about to change it.
Rotating = Annotated[Principal, key_change(Operation.ROTATE)]
Deleting = Annotated[Principal, key_change(Operation.DELETE)]
Configuring = Annotated[Principal, key_change(Operation.CONFIGURE)]
BackingUp = Annotated[Principal, key_change(EVERY_OPERATION, AdminOperation.BACKUP)]


class KeyList(BaseModel):
    keys: list[KeyOut]
    next: str | None = Field(
        None,
        description="pass as `after` for the next page; null on the last page. Pages hold "
        "only keys the token may read: `limit` of them, fewer on the last page",
    )


class PublicKeyOut(BaseModel):
    name: str
    type: str
    version: int
    format: PublicFormat
    public_key: Base64Bytes | str | dict[str, str] = Field(
        description="raw (base64): the public key (SEC1 uncompressed for secp256k1 and "
        "ecdsa-secp256k1, 32 bytes for x25519 and ed25519), QFE's the scheme's public key, "
        "tao's its decryption base; der (base64): the SubjectPublicKeyInfo; pem: the "
        "SubjectPublicKeyInfo in PEM, as text; jwk: the JSON Web Key, an object"
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
        "for aez, 32 to 512 for hmac, 16 for aes128-gcm, 32 for aes256-gcm and "
        "chacha20-poly1305, the 32-byte private key for hpke-x25519, the 64-byte ML-KEM seed "
        "and the 32-byte X25519 private key for hpke-mlkem768-x25519; PKCS#8 DER for "
        "ecdsa-p256, -p384, -p521, the RSA and the ML-DSA types, or an ML-DSA key's 32-byte "
        "seed) ECIES-encrypted to the wrapping key with eciespy's default configuration",
    )
    derived: StrictBool = Field(
        False,
        description="BYOK of an AEAD or ed25519 key: every call gives a context, the key used "
        "derived from it (as at creation); a next version's must match its key's",
    )
    convergent: StrictBool = Field(
        False, description="BYOK of an AEAD key, with derived: convergent encryption"
    )

    @model_validator(mode="after")
    def _one_form(self) -> "KeyImport":
        if self.backup is not None:
            if self.type is not None or self.wrapped_material is not None:
                raise ValueError("a backup takes only name besides it")
            if self.derived or self.convergent:
                raise ValueError("a backup keeps its key's derivation: no derived or convergent")
        elif self.name is None or self.type is None or self.wrapped_material is None:
            raise ValueError("give backup, or name, type and wrapped_material")
        return self


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyOut,
    summary="Create a named key (admin, or a token with create for its name)",
    responses={409: {"description": "a key of that name exists already"}},
    openapi_extra=json_body(KeyCreate),
)
async def create_key(request: Request, services: ServicesDep, principal: Caller) -> KeyOut:
    body = await read_json(request, KeyCreate)  # after the token check
    audit_note(request.scope).key = body.name
    await admit_change(request, principal, Operation.CREATE, body.name)
    return await in_thread(keys.create, services.store, body, services.settings)


@router.post(
    "/import",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyOut,
    summary="Import a backup, or key material made elsewhere (BYOK) as a new key or a new "
    "version (admin, or a token with create, and rotate for BYOK, for its name; a backup, "
    "instead, with the admin operation backup)",
    responses={
        200: {"model": KeyOut, "description": "the material became a new version of the key"},
        409: {"description": "the name is taken (backup), or by a key of another type (BYOK)"},
        422: {"description": "does not decrypt under this instance's wrapping key"},
    },
    openapi_extra=json_body(KeyImport),
)
async def import_key(
    request: Request, response: Response, services: ServicesDep, principal: Caller
) -> KeyOut:
    body = await read_json(request, KeyImport)
    note = audit_note(request.scope)
    note.key = body.name
    if body.backup is not None:
        note.details["form"] = "backup"
        # Before the backup is opened: a caller who could restore none makes no decryption
        # happen, nor learns the name inside.
        if not (
            principal.may(AdminOperation.BACKUP) or principal.allows(Operation.CREATE, body.name)
        ):
            raise forbidden("importing a backup needs the admin operation 'backup', or create")
        document, signer = await in_thread(
            backup.open_backup, services.store, services.settings, body.backup
        )
        note.key = body.name or document.key.name
        note.details["signer"] = base64.b64encode(signer).decode()
        await admit_change(request, principal, Operation.CREATE, note.key, AdminOperation.BACKUP)
        key = await in_thread(
            backup.restore, services.store, services.settings, document, body.name
        )
    else:
        assert body.name is not None and body.type is not None
        assert body.wrapped_material is not None
        note.details["form"] = "byok"
        await admit_change(request, principal, (Operation.CREATE, Operation.ROTATE), body.name)
        key, new = await in_thread(
            byok.import_material,
            services.store,
            services.keyring,
            body.name,
            body.type,
            body.wrapped_material,
            (body.derived, body.convergent),
        )
        if not new:
            response.status_code = status.HTTP_200_OK
    note.key, note.key_version = key.name, key.latest_version
    return key


@router.get("", response_model=KeyList, summary="List the keys the token may read, by name")
def list_keys(
    services: ServicesDep,
    principal: Annotated[Principal, service_access(Operation.READ)],
    limit: PageSize = 100,
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
    summary="Add a new version; older versions still decrypt (admin, or a token with rotate)",
    responses={409: {"description": "the key was deleted or replaced during the rotation"}},
)
def rotate_key(request: Request, name: KeyName, services: ServicesDep, _: Rotating) -> KeyOut:
    key = keys.rotate(services.store, services.keyring, name)
    audit_note(request.scope).key_version = key.latest_version
    return key


@router.delete(
    "/{name}",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=keys.DeletionScheduled,
    summary="Schedule the key's destruction; until then every use of it is refused (admin, or "
    "a token with delete)",
    responses={
        409: {"description": "the key is pending deletion already, or has deletion_protection"}
    },
)
def delete_key(
    request: Request,
    name: KeyName,
    services: ServicesDep,
    _: Deleting,
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
    scheduled = keys.delete(
        services.store, services.keyring, name, window_seconds, services.settings
    )
    keys.answer_waits_for_caches(audit_note(request.scope), services.settings)
    return scheduled


@router.post(
    "/{name}/restore",
    response_model=KeyOut,
    summary="Cancel a scheduled deletion: the key is back with every version (admin, or a "
    "token with delete)",
    responses={409: {"description": "the key is not pending deletion"}},
)
def restore_key(name: KeyName, services: ServicesDep, _: Deleting) -> KeyOut:
    return keys.restore(services.store, name)


@router.patch(
    "/{name}",
    response_model=KeyOut,
    summary="Change the key's policies (admin, or a token with configure)",
    openapi_extra=json_body(keys.KeyPatch),
)
async def patch_key(
    request: Request, name: KeyName, services: ServicesDep, _: Configuring
) -> KeyOut:
    body = await read_json(request, keys.KeyPatch)  # after the token check
    audit_note(request.scope).details.update(body.model_dump(exclude_none=True, mode="json"))
    if body.enabled is False:
        keys.answer_waits_for_caches(audit_note(request.scope), services.settings)
    shortest = services.settings.min_auto_rotate_seconds
    return await in_thread(
        keys.change_policy, services.store, services.keyring, name, body, shortest
    )


@router.post(
    "/{name}/trim",
    response_model=KeyOut,
    summary="Destroy the versions below min_decryption_version, for good (admin, or a token "
    "with delete)",
)
def trim_key(request: Request, name: KeyName, services: ServicesDep, _: Deleting) -> KeyOut:
    key, destroyed = keys.trim(services.store, services.keyring, name)
    audit_note(request.scope).details["destroyed_versions"] = destroyed
    return key


Version = Annotated[int | None, Query(ge=1, description="key version; default: the latest")]


@router.get(
    "/{name}/public",
    response_model=PublicKeyOut,
    summary="A key's public part",
    responses={409: {"description": "the key's type has no public part, or none in that format"}},
    dependencies=[key_access(Operation.PUBLIC)],
)
def public_key(
    name: KeyName,
    services: ServicesDep,
    version: Version = None,
    format: Annotated[
        PublicFormat | None,
        Query(
            description="raw, der (SubjectPublicKeyInfo), pem or jwk; default raw, or der "
            "for a type with no raw form (RSA)"
        ),
    ] = None,
) -> PublicKeyOut:
    material, form, encoded = keys.public_part(services.keyring, name, version, format)
    return PublicKeyOut(
        name=name, type=material.type, version=material.version, format=form, public_key=encoded
    )


class JsonWebKeySet(BaseModel):
    keys: list[dict[str, Any]] = Field(
        description="one JSON Web Key per live version, the newest first (at most 100): kid "
        "<name>:v<N>, use sig, and alg except for RSA keys"
    )


@router.get(
    "/{name}/jwks",
    response_model=JsonWebKeySet,
    summary="The JSON Web Key Set (RFC 7517) of a signing key's live versions",
    responses={409: {"description": "the key is not a signing key"}},
    dependencies=[key_access(Operation.PUBLIC)],
)
def jwks(name: KeyName, services: ServicesDep) -> JsonWebKeySet:
    return JsonWebKeySet(keys=jwt.jwks(services.keyring, name))


@router.get(
    "/{name}/export",
    response_model=KeyExport,
    summary="The secret material of an exportable key (admin, or a token with every operation)",
    dependencies=[key_access(EVERY_OPERATION)],
)
def export_key(name: KeyName, services: ServicesDep, version: Version = None) -> KeyExport:
    material = keys.export(services.store, name, version)
    return KeyExport(
        name=name, type=material.type, version=material.version, secret=material.secret
    )


@router.post(
    "/{name}/backup",
    response_model=KeyBackup,
    summary="Every version and policy of a key created with allow_backup, encrypted to "
    "another instance's wrapping key (admin operation backup, or a token with every operation)",
    responses={403: {"description": "the key was not created with allow_backup"}},
    openapi_extra=json_body(KeyBackupRequest),
)
async def backup_key(
    request: Request, name: KeyName, services: ServicesDep, _: BackingUp
) -> KeyBackup:
    body = await read_json(request, KeyBackupRequest)
    blob = await in_thread(backup.backup, services.store, name, body.wrapping_key)
    return KeyBackup(backup=blob)
