"""KMS's deletion actions on the service's keys: ScheduleKeyDeletion is the native scheduled
deletion (`DELETE /v1/keys/{name}`) with the pending window in days (7 to 30, AWS's bounds),
CancelKeyDeletion the native restore, after which the key is disabled, as AWS leaves it."""

from typing import Annotated, Any

from pydantic import Field

from app.ops import keys
from app.ops.grants import Operation
from app.ops.keys import KeyPatch
from app.ops.kms.actions import KeyIdField, KmsCall, KmsRequest, action
from app.ops.work import in_thread

DAY = 86400


class ScheduleKeyDeletionRequest(KmsRequest):
    KeyId: KeyIdField
    PendingWindowInDays: Annotated[int, Field(ge=7, le=30)] = 30


@action("ScheduleKeyDeletion")
async def schedule_key_deletion(
    call: KmsCall, request: ScheduleKeyDeletionRequest
) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_delete_key", Operation.DELETE, change=True)
    services = call.services
    window = request.PendingWindowInDays * DAY
    call.note.details["window_seconds"] = window
    scheduled = await in_thread(
        keys.delete, services.store, services.keyring, name, window, services.settings
    )
    keys.answer_waits_for_caches(call.note, services.settings)
    return {
        "KeyId": call.arn(name),
        "DeletionDate": scheduled.deletion_date.timestamp(),
        "KeyState": "PendingDeletion",
        "PendingWindowInDays": request.PendingWindowInDays,
    }


class CancelKeyDeletionRequest(KmsRequest):
    KeyId: KeyIdField


def _restore_disabled(call: KmsCall, name: str) -> None:
    services = call.services
    keys.restore(services.store, name)
    keys.change_policy(services.store, services.keyring, name, KeyPatch(enabled=False))


@action("CancelKeyDeletion")
async def cancel_key_deletion(call: KmsCall, request: CancelKeyDeletionRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_restore_key", Operation.DELETE, change=True)
    await in_thread(_restore_disabled, call, name)
    return {"KeyId": call.arn(name)}
