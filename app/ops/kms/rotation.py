"""KMS's rotation actions on the service's keys: EnableKeyRotation and DisableKeyRotation are
the key's automatic rotation period (`auto_rotate_seconds`, `PATCH /v1/keys/{name}`),
GetKeyRotationStatus reads it, RotateKeyOnDemand is a rotation (`POST /v1/keys/{name}/rotate`),
and ListKeyRotations lists the key's versions after the first (its rotations, however made).
As in AWS, only symmetric encryption keys rotate through these actions; a rotated key keeps
decrypting what its earlier versions encrypted."""

import hashlib
from typing import Annotated, Any, Literal

from pydantic import Field

from app.ops import keys
from app.ops.grants import Operation
from app.ops.keys import KeyPatch
from app.ops.kms import specs
from app.ops.kms.actions import KeyIdField, KmsCall, KmsRequest, action
from app.ops.kms.errors import KmsError, pending_deletion, unsupported
from app.ops.kms.keys import MarkerField
from app.ops.versioned import disabled
from app.ops.work import in_thread
from app.store import AUTOMATIC, KeyInfo, KeyVersionInfo

DAY = 86400
DEFAULT_PERIOD_DAYS = 365


def _rotatable(call: KmsCall, info: KeyInfo, enabled: bool = True) -> None:
    """UnsupportedOperationException for a key that is not symmetric; for a change
    (`enabled`), KMSInvalidStateException pending deletion and DisabledException disabled."""
    described = specs.described(info)
    if described is None or described[0] != "SYMMETRIC_DEFAULT":
        raise unsupported(f"{call.arn(info.name)} key usage does not support rotation.")
    if not enabled:
        return
    if info.state == "pending-deletion":
        raise pending_deletion(call.arn(info.name))
    if disabled(info.params):
        raise KmsError("DisabledException", f"{call.arn(info.name)} is disabled.")


class EnableKeyRotationRequest(KmsRequest):
    KeyId: KeyIdField
    RotationPeriodInDays: Annotated[int, Field(ge=90, le=2560)] = DEFAULT_PERIOD_DAYS


async def _set_period(call: KmsCall, key_id: str, days: int) -> dict[str, Any]:
    name = await call.key(key_id, "keys_patch_key", Operation.ROTATE, change=True)
    services = call.services
    _rotatable(call, await in_thread(services.store.keys.get, name))
    call.note.details["auto_rotate_seconds"] = days * DAY
    patch = KeyPatch(auto_rotate_seconds=days * DAY)
    await in_thread(keys.change_policy, services.store, services.keyring, name, patch)
    return {}


@action("EnableKeyRotation")
async def enable_key_rotation(call: KmsCall, request: EnableKeyRotationRequest) -> dict[str, Any]:
    return await _set_period(call, request.KeyId, request.RotationPeriodInDays)


class KeyIdRequest(KmsRequest):
    KeyId: KeyIdField


@action("DisableKeyRotation")
async def disable_key_rotation(call: KmsCall, request: KeyIdRequest) -> dict[str, Any]:
    return await _set_period(call, request.KeyId, 0)


@action("GetKeyRotationStatus")
async def get_key_rotation_status(call: KmsCall, request: KeyIdRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_get_key", Operation.READ)
    info = await in_thread(call.services.store.keys.get, name)
    _rotatable(call, info, enabled=False)
    period = info.auto_rotate_seconds
    answer: dict[str, Any] = {"KeyRotationEnabled": bool(period), "KeyId": call.arn(name)}
    if period:
        latest = max(v.created_at for v in info.versions)
        # In whole days, as AWS counts them: at least one for a native period under a day.
        days = max(1, round(period / DAY))
        answer |= {"RotationPeriodInDays": days, "NextRotationDate": latest + period}
    return answer


@action("RotateKeyOnDemand")
async def rotate_key_on_demand(call: KmsCall, request: KeyIdRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_rotate_key", Operation.ROTATE, change=True)
    services = call.services
    _rotatable(call, await in_thread(services.store.keys.get, name))
    rotated = await in_thread(keys.rotate, services.store, services.keyring, name)
    call.note.key_version = rotated.latest_version
    return {"KeyId": name}


class ListKeyRotationsRequest(KmsRequest):
    KeyId: KeyIdField
    IncludeKeyMaterial: Literal["ALL_KEY_MATERIAL", "ROTATIONS_ONLY"] = "ROTATIONS_ONLY"
    Limit: Annotated[int, Field(ge=1, le=1000)] = 100
    Marker: MarkerField | None = None


def _material_entry(info: KeyInfo, version: KeyVersionInfo) -> dict[str, Any]:
    """One version as KMS lists a key material. Its id names the version of this key (a key
    deleted and made again under the same name has other ids); the latest, which encryptions
    use, is CURRENT. A version whose making is not recorded (restored from a backup, or
    made before versions recorded it) has no RotationType; the first has neither RotationType
    nor RotationDate, as in AWS."""
    identity = f"{info.name}\0{info.created_at!r}\0{version.version}".encode()
    entry: dict[str, Any] = {
        "KeyId": info.name,
        "KeyMaterialId": hashlib.sha256(identity).hexdigest(),
        "KeyMaterialState": "CURRENT" if version.version == info.latest_version else "NON_CURRENT",
    }
    if version.version > 1:
        entry["RotationDate"] = version.created_at
    if version.rotation is not None:
        entry["RotationType"] = "AUTOMATIC" if version.rotation == AUTOMATIC else "ON_DEMAND"
    return entry


@action("ListKeyRotations")
async def list_key_rotations(call: KmsCall, request: ListKeyRotationsRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_get_key", Operation.READ)
    info = await in_thread(call.services.store.keys.get, name)
    _rotatable(call, info, enabled=False)
    if request.Marker is not None and not request.Marker.isdecimal():
        raise KmsError("InvalidMarkerException", "The marker is not one this action gave.")
    after = int(request.Marker or 0)
    first = 1 if request.IncludeKeyMaterial == "ALL_KEY_MATERIAL" else 2
    listed = [v for v in info.versions if v.version >= first and v.version > after]
    page = listed[: request.Limit]
    answer: dict[str, Any] = {
        "Rotations": [_material_entry(info, version) for version in page],
        "Truncated": len(listed) > len(page),
    }
    if answer["Truncated"]:
        answer["NextMarker"] = str(page[-1].version)
    return answer
