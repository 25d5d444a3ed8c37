"""KMS's key actions on the service's keys, through `app.ops.keys`: CreateKey, DescribeKey,
ListKeys, EnableKey, DisableKey and UpdateKeyDescription.

A key CreateKey makes is named by a fresh UUID, its KeyId, and keeps its KMS description in its
parameters (`kms`: key spec, key usage, description; `tags`); a key made through the native API
is described from its type (`specs`). DisableKey is the native policy `enabled: false`
(`PATCH /v1/keys/{name}`): every use of a disabled key is refused, DisabledException here.
"""

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from app.ops import keys
from app.ops.grants import Operation
from app.ops.keys import KeyCreate, KeyPatch
from app.ops.kms import specs
from app.ops.kms.actions import GrantTokenList, KeyIdField, KmsCall, KmsRequest, action
from app.ops.kms.errors import pending_deletion, unsupported, validation
from app.ops.kms.tags import TagList, checked_tags
from app.ops.work import in_thread
from app.store import KeyStore

# ListKeys' page: AWS's default and bounds.
DEFAULT_PAGE = 100
MarkerField = Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[\u0020-\u00FF]*$")]


class CreateKeyRequest(KmsRequest):
    Policy: Annotated[str, Field(min_length=1, max_length=131072)] | None = None
    Description: Annotated[str, Field(max_length=8192)] = ""
    KeyUsage: str | None = None
    CustomerMasterKeySpec: str | None = None
    KeySpec: str | None = None
    Origin: str = "AWS_KMS"
    CustomKeyStoreId: str | None = None
    BypassPolicyLockoutSafetyCheck: bool = False
    Tags: TagList | None = None
    MultiRegion: bool = False
    XksKeyId: str | None = None


def _spec_and_usage(request: CreateKeyRequest) -> tuple[str, str]:
    """The key spec and usage asked for, once this service has them and they fit."""
    if request.Policy is not None:
        raise unsupported(
            "Key policies are not evaluated by this service: a token's scope (key names and "
            "operations) decides who may use a key. Create the key without Policy."
        )
    if request.Origin != "AWS_KMS" or request.CustomKeyStoreId or request.XksKeyId:
        raise unsupported("Only keys with Origin AWS_KMS, in no custom key store, are made here.")
    if request.MultiRegion:
        raise unsupported("Multi-Region keys are not supported by this service.")
    if request.KeySpec and request.CustomerMasterKeySpec:
        raise validation(
            "You cannot specify KeySpec and CustomerMasterKeySpec in the same request."
        )
    spec_name = request.KeySpec or request.CustomerMasterKeySpec or "SYMMETRIC_DEFAULT"
    spec = specs.SPECS.get(spec_name)
    if spec_name in specs.NOT_MADE or request.KeyUsage == "KEY_AGREEMENT":
        raise unsupported(
            f"KeySpec {spec_name} with KeyUsage {request.KeyUsage or 'its default'} is not "
            f"supported by this service: its specs are {', '.join(specs.SPECS)}"
        )
    if spec is None:
        raise validation(
            f"1 validation error detected: Value '{spec_name[:64]}' at 'keySpec' failed to "
            f"satisfy constraint: Member must satisfy enum value set: {sorted(specs.SPECS)}"
        )
    usage = request.KeyUsage or spec.usages[0]
    if usage not in spec.usages:
        raise validation(f"KeyUsage {usage[:64]} is not compatible with KeySpec {spec_name}")
    return spec_name, usage


@action("CreateKey")
async def create_key(call: KmsCall, request: CreateKeyRequest) -> dict[str, Any]:
    """A new key named by a fresh UUID, its KeyId."""
    spec, usage = _spec_and_usage(request)
    tags = checked_tags({}, request.Tags or [])
    name = str(uuid.uuid4())
    call.record("keys_create_key", name)
    call.allow(Operation.CREATE, name)
    await call.changing()
    noted: dict[str, Any] = {
        "kms": {"spec": spec, "usage": usage, "description": request.Description}
    }
    if tags:
        noted["tags"] = tags
    body = KeyCreate(name=name, type=specs.SPECS[spec].native)
    services = call.services
    await in_thread(keys.create, services.store, body, services.settings, noted)
    info = await in_thread(services.store.keys.get, name)
    return {"KeyMetadata": specs.metadata(info, call.arn(name), services.settings)}


class DescribeKeyRequest(KmsRequest):
    KeyId: KeyIdField
    GrantTokens: GrantTokenList = None


@action("DescribeKey")
async def describe_key(call: KmsCall, request: DescribeKeyRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_get_key", Operation.READ)
    info = await in_thread(call.services.store.keys.get, name)
    return {"KeyMetadata": specs.metadata(info, call.arn(name), call.services.settings)}


ResourceOwner = Literal["SELF", "OTHER_ACCOUNTS_VIA_RAM"]


class ListKeysRequest(KmsRequest):
    Limit: Annotated[int, Field(ge=1, le=1000)] = DEFAULT_PAGE
    Marker: MarkerField | None = None
    # Whose keys: the account's own (SELF), or others' shared through RAM, of which there are
    # none here.
    ResourceOwners: Annotated[list[ResourceOwner], Field(min_length=1, max_length=2)] | None = None


@action("ListKeys")
async def list_keys(call: KmsCall, request: ListKeysRequest) -> dict[str, Any]:
    """The keys the token may read, by name, a page at a time (the marker: the last name)."""
    call.record("keys_list_keys")
    call.allow(Operation.READ, None)
    if request.ResourceOwners is not None and "SELF" not in request.ResourceOwners:
        return {"Keys": [], "Truncated": False}
    page, next_after = await in_thread(
        keys.readable_page, call.services.store, call.principal, request.Marker, request.Limit
    )
    answer: dict[str, Any] = {
        "Keys": [{"KeyId": key.name, "KeyArn": call.arn(key.name)} for key in page],
        "Truncated": next_after is not None,
    }
    if next_after is not None:
        answer["NextMarker"] = next_after
    return answer


class KeyIdRequest(KmsRequest):
    KeyId: KeyIdField


async def _set_enabled(call: KmsCall, key_id: str, enabled: bool) -> dict[str, Any]:
    name = await call.key(key_id, "keys_patch_key", Operation.CONFIGURE, change=True)
    call.note.details["enabled"] = enabled
    services = call.services
    await in_thread(
        keys.change_policy, services.store, services.keyring, name, KeyPatch(enabled=enabled)
    )
    if not enabled:
        keys.answer_waits_for_caches(call.note, services.settings)
    return {}


@action("EnableKey")
async def enable_key(call: KmsCall, request: KeyIdRequest) -> dict[str, Any]:
    return await _set_enabled(call, request.KeyId, True)


@action("DisableKey")
async def disable_key(call: KmsCall, request: KeyIdRequest) -> dict[str, Any]:
    return await _set_enabled(call, request.KeyId, False)


class UpdateKeyDescriptionRequest(KmsRequest):
    KeyId: KeyIdField
    Description: Annotated[str, Field(max_length=8192)]


def _describe(store: KeyStore, name: str, arn: str, description: str) -> None:
    """Set a CreateKey key's description under its row lock (a key made outside KMS has none
    to change: UnsupportedOperationException)."""
    with store.transaction() as held:
        info = held.keys.locked(name)
        if info.state == "pending-deletion":
            raise pending_deletion(arn)
        made = info.params.get("kms")
        if made is None:
            raise unsupported(f"{arn} was not made by CreateKey: it has no KMS description")
        held.keys.set_params(name, {"kms": {**made, "description": description}})


@action("UpdateKeyDescription")
async def update_key_description(
    call: KmsCall, request: UpdateKeyDescriptionRequest
) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_patch_key", Operation.CONFIGURE, change=True)
    call.note.details["description"] = "changed"
    await in_thread(_describe, call.services.store, name, call.arn(name), request.Description)
    return {}
