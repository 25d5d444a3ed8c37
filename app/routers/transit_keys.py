"""Transit's key paths (`keys`, `config`, `rotate`, `import`, `trim`, `export`, `backup`,
`restore`, `wrapping_key`, and the mount's `config/keys` and `cache-config`) at
`/v1/transit/...` and every other Transit mount, in Vault's shapes, on the service's keys: each
the native operation of `POST /v1/keys` and its siblings, with its scope and audit record."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Path, Query, Request, Response
from pydantic import BaseModel

from app.http.deps import audit_note
from app.http.transit import TransitCall, refuse_nested, transit_call
from app.http.vault import answer, keys_of, listing, no_content, read_body, vault_body, vault_router
from app.ops import keys as native_keys
from app.ops.grants import AdminOperation, Operation
from app.ops.transit import backup, crypto, imports, keys, mount_config
from app.ops.transit.imports import TransitKeyImport, TransitVersionImport
from app.ops.transit.keys import TransitKeyConfig, TransitKeyCreate, checked_name
from app.ops.transit.mount_config import TransitCacheConfig, TransitKeysConfig
from app.ops.transit.mounts import native_name
from app.ops.vault_fields import VaultBody, VaultBool, VaultInt
from app.ops.work import in_thread

router = vault_router("/v1/transit", "transit")

# A Transit key name: the mount's prefix and it make a native key name (checked then).
TransitName = Annotated[str, Path(description="the key's name in its mount", max_length=128)]


@router.post(
    "/keys/{name}",
    summary="Create a key (Transit); an existing key is left as it is",
    openapi_extra=vault_body(TransitKeyCreate),
)
async def create_key(request: Request, name: TransitName) -> Response:
    call = await transit_call(request, "keys_create_key", name=name, change=True)
    body = await read_body(request, TransitKeyCreate)
    store, settings = call.services.store, call.services.settings
    info = await in_thread(keys.create, store, call.name, body, settings)
    data = await in_thread(keys.key_data, store, info, name)
    return await answer(request, data)  # as Vault: an existing key, unchanged, without a word


@router.get("/keys/{name}", summary="A key's settings and versions (Transit)")
async def read_key(
    request: Request,
    name: TransitName,
    context: Annotated[
        str, Query(max_length=4096, description="a derived ed25519 key's: base64")
    ] = "",
) -> Response:
    call = await transit_call(request, "keys_get_key", Operation.READ, name)
    store = call.services.store
    derivation = crypto.decoded(context, "context")
    info = await in_thread(keys.active, store, call.name)
    return await answer(request, await in_thread(keys.key_data, store, info, name, derivation))


@listing(router, "/keys", "The keys of the mount (Transit)")
async def list_keys(request: Request) -> Response:
    call = await transit_call(request, "keys_list_keys", Operation.READ)
    mounts = call.services.mounts
    others = await in_thread(mounts.other_prefixes)
    principal = call.principal
    readable = principal.reach(Operation.READ)
    names = await in_thread(keys.listed, call.services.store, call.mount, others, readable)
    prefix = call.mount.key_prefix
    return await answer(
        request, keys_of([n for n in names if principal.allows(Operation.READ, prefix + n)])
    )


@router.delete(
    "/keys/{name}", summary="Delete a key (Transit): its deletion is scheduled", status_code=204
)
async def delete_key(request: Request, name: TransitName) -> Response:
    call = await transit_call(request, "keys_delete_key", name=name, change=True)
    services = call.services
    with keys.missing_as(f"error deleting policy {name[:128]}: could not delete key; not found"):
        await in_thread(keys.delete, services.store, services.keyring, call.name, services.settings)
    native_keys.answer_waits_for_caches(audit_note(request.scope), services.settings)
    return no_content()


async def _changed(
    request: Request,
    call: TransitCall,
    name: str,
    change: Callable[..., Any],
    *args: object,
    missing: str,
    warnings: list[str] | None = None,
) -> Response:
    """The key changed, `change(store, keyring, its native name, *args)`, then shown as Transit
    shows it, under its `name` in the mount; for a key that does not exist, Vault's 400 and its
    words, `missing`."""
    services = call.services
    with keys.missing_as(missing.format(name=name[:128])):
        info = await in_thread(change, services.store, services.keyring, call.name, *args)
    data = await in_thread(keys.key_data, services.store, info, name)
    return await answer(request, data, warnings=warnings)


@router.post(
    "/keys/{name}/config",
    summary="Change a key's settings (Transit)",
    openapi_extra=vault_body(TransitKeyConfig),
)
async def configure_key(request: Request, name: TransitName) -> Response:
    call = await transit_call(request, "keys_patch_key", name=name, change=True)
    body = await read_body(request, TransitKeyConfig)
    forced = [keys.FORCED_TO_ONE] if body.min_decryption_version == 0 else None
    return await _changed(
        request,
        call,
        name,
        keys.configure,
        body,
        missing="no existing key named {name} could be found",
        warnings=forced,
    )


@router.post("/keys/{name}/rotate", summary="Rotate a key (Transit)")
async def rotate_key(request: Request, name: TransitName) -> Response:
    call = await transit_call(request, "keys_rotate_key", name=name, change=True)
    return await _changed(request, call, name, keys.rotate, missing="key not found")


@router.get("/wrapping_key", summary="The RSA-4096 public key imported material is wrapped to")
async def read_wrapping_key(request: Request) -> Response:
    call = await transit_call(request, "transit_read_wrapping_key", ())  # any valid token
    pem = await in_thread(imports.wrapping_key_pem, call.services.store)
    return await answer(request, {"public_key": pem})


@router.post(
    "/keys/{name}/import",
    summary="Make a key of material made elsewhere, wrapped to the wrapping key (Transit)",
    status_code=204,
    openapi_extra=vault_body(TransitKeyImport),
)
async def import_key(request: Request, name: TransitName) -> Response:
    return await _imported(request, name, TransitKeyImport, imports.import_key)


@router.post(
    "/keys/{name}/import_version",
    summary="A new version of an imported key, of material made elsewhere (Transit)",
    status_code=204,
    openapi_extra=vault_body(TransitVersionImport),
)
async def import_key_version(request: Request, name: TransitName) -> Response:
    return await _imported(request, name, TransitVersionImport, imports.import_version)


async def _imported(
    request: Request, name: str, model: type[BaseModel], run: Callable[..., int]
) -> Response:
    """The version `run(store, keyring, settings, native name, body)` imports (both paths)."""
    call = await transit_call(request, "keys_import_key", name=name, change=True)
    body = await read_body(request, model)
    services = call.services
    version = await in_thread(
        run, services.store, services.keyring, services.settings, call.name, body
    )
    audit_note(request.scope).key_version = version
    return no_content()


class TransitTrimRequest(VaultBody):
    min_available_version: VaultInt


@router.post(
    "/keys/{name}/trim",
    summary="Destroy a key's versions below min_available_version (Transit)",
    openapi_extra=vault_body(TransitTrimRequest),
)
async def trim_key(request: Request, name: TransitName) -> Response:
    call = await transit_call(request, "keys_trim_key", name=name, change=True)
    body = await read_body(request, TransitTrimRequest)
    return await _changed(
        request, call, name, keys.trim, body.min_available_version, missing="invalid key name"
    )


async def _export(request: Request, key_type: str, name: str, version: str | None) -> Response:
    call = await transit_call(request, "keys_export_key", name=name)
    transit_type, exported = await in_thread(
        keys.export, call.services.store, call.name, key_type, version
    )
    return await answer(request, {"name": name, "type": transit_type, "keys": exported})


@router.get("/export/{key_type}/{name}", summary="Export a key's versions (Transit)")
async def export_key(request: Request, key_type: str, name: TransitName) -> Response:
    return await _export(request, key_type, name, None)


@router.get("/export/{key_type}/{name}/{version}", summary="Export one version (Transit)")
async def export_key_version(
    request: Request, key_type: str, name: TransitName, version: str
) -> Response:
    return await _export(request, key_type, name, version)


@router.get("/backup/{name}", summary="Back a key up in Transit's format")
async def backup_key(request: Request, name: TransitName) -> Response:
    # A change: the key keeps the backup's record, and key material leaves only if audited.
    call = await transit_call(request, "keys_backup_key", AdminOperation.BACKUP, name, change=True)
    made = await in_thread(backup.make, call.services.store, call.name, name)
    return await answer(request, {"backup": made})


class TransitRestoreRequest(VaultBody):
    backup: str
    force: VaultBool = False
    name: str | None = None


async def _restore(request: Request, name: str | None) -> Response:
    # The token first; the name may come from the body, or from the backup in it.
    call = await transit_call(request, "keys_import_key", AdminOperation.BACKUP, name, change=True)
    body = await read_body(request, TransitRestoreRequest)
    policy = await in_thread(backup.policy_of, body.backup)
    if name is None:
        call.name = checked_name(native_name(call.mount, body.name or backup.backup_name(policy)))
        audit_note(request.scope).key = call.name
        await refuse_nested(call.services.mounts, call.mount, call.name)
    await in_thread(backup.restore, call.services.store, call.name, policy, {})
    return no_content()


@router.post(
    "/restore",
    summary="Restore a key from a Transit backup, under the name it carries",
    status_code=204,
    openapi_extra=vault_body(TransitRestoreRequest),
)
async def restore_key(request: Request) -> Response:
    return await _restore(request, None)


@router.post(
    "/restore/{name}",
    summary="Restore a key from a Transit backup (OpenBao's or Vault's too)",
    status_code=204,
    openapi_extra=vault_body(TransitRestoreRequest),
)
async def restore_key_named(request: Request, name: TransitName) -> Response:
    return await _restore(request, name)


@router.get("/config/keys", summary="Whether an encryption may create a missing key (Transit)")
async def read_keys_config(request: Request) -> Response:
    return await _mount_settings(request, "transit_read_keys_config", mount_config.keys_config)


@router.post(
    "/config/keys",
    summary="Let encryptions create missing keys, or not (Transit's `disable_upsert`)",
    openapi_extra=vault_body(TransitKeysConfig),
)
async def write_keys_config(request: Request) -> Response:
    return await _set_mount_settings(
        request, "transit_configure_keys", TransitKeysConfig, mount_config.configure_keys
    )


@router.get("/cache-config", summary="The size of the mount's key cache (Transit): kept, not used")
async def read_cache_config(request: Request) -> Response:
    return await _mount_settings(request, "transit_read_cache_config", mount_config.cache_config)


@router.post(
    "/cache-config",
    summary="Set the size of the mount's key cache (Transit): kept and read back, not used",
    openapi_extra=vault_body(TransitCacheConfig),
)
async def write_cache_config(request: Request) -> Response:
    return await _set_mount_settings(
        request, "transit_configure_cache", TransitCacheConfig, mount_config.configure_cache
    )


async def _mount_settings(
    request: Request, operation: str, read: Callable[..., dict[str, Any]]
) -> Response:
    """Some of the mount's settings, `read(store, mount)`, for the admin token."""
    call = await transit_call(request, operation)
    return await answer(request, await in_thread(read, call.services.store, call.mount))


async def _set_mount_settings(
    request: Request,
    operation: str,
    model: type[BaseModel],
    write: Callable[..., dict[str, Any]],
) -> Response:
    """Some of the mount's settings written, `write(store, mount, body)`, and answered; the
    audit record holds what was written (no secret: sizes and switches)."""
    call = await transit_call(request, operation, change=True)
    body = await read_body(request, model)
    written = await in_thread(write, call.services.store, call.mount, body)
    audit_note(request.scope).details.update(written)
    return await answer(request, written)
