"""KMS's GetKeyLastUsage, read from the audit trail: the newest successful cryptographic use of
a key through any of the service's APIs (native, Transit, KMS), named as KMS names its
operations. As with `GET /v1/audit`, this process's records are in the store first; another
process's join them within its audit mover's pass (AWS too says the answer is eventually
consistent).

The records of a key are read newest first, at most `WINDOW` of them per call: a key whose
newest `WINDOW` records hold no use (reads, say) is answered without one, and with tracking
starting at the oldest record read, which is what AWS's `TrackingStartDate` means: no use is
known after it."""

import json
from typing import Any

from app.ops.audit import FIRST_FAILURE
from app.ops.grants import Operation
from app.ops.kms.actions import KeyIdField, KmsCall, KmsRequest, action
from app.ops.work import in_thread
from app.store import AuditSummary, KeyInfo, KeyStore

WINDOW, PAGE = 10_000, 500
# A native operation's verb (`aez_encrypt_raw`: `encrypt`) as KMS names the use.
_USES = {
    "encrypt": "Encrypt",
    "decrypt": "Decrypt",
    "datakey": "GenerateDataKey",
    "rewrap": "ReEncrypt",
    "sign": "Sign",
    "verify": "Verify",
    "hmac": "GenerateMac",
}
# KMS's names of the uses it tracks: a record a KMS action made names the action itself.
_KMS_USES = frozenset(
    {
        *_USES.values(),
        "VerifyMac",
        "GenerateDataKeyWithoutPlaintext",
        "GenerateDataKeyPair",
        "GenerateDataKeyPairWithoutPlaintext",
    }
)


def use_of(operation: str) -> str | None:
    """The KMS name of the use a native operation makes of its key; None if it makes none."""
    family, _, rest = operation.partition("_")
    verb = rest.split("_")[0]
    if (family, verb) == ("hmac", "verify"):
        return "VerifyMac"
    return _USES.get(verb)


def last_use(store: KeyStore, info: KeyInfo) -> tuple[AuditSummary | None, float]:
    """The newest successful use of the key, if one is among its newest WINDOW records since it
    was made; and the time from which the answer holds (its creation, or the oldest record
    read when the window ran out)."""
    since, before, read = info.created_at, None, 0
    while read < WINDOW:
        asked = min(PAGE, WINDOW - read)
        page = store.audit.newest_of_key(info.name, since, before, asked)
        for record in page:
            if record.status < FIRST_FAILURE and use_of(record.operation) is not None:
                return record, since
        if len(page) < asked:  # every record since the key was made is read
            return None, since
        read += len(page)
        last = page[-1]
        before = (last.time, last.chain, last.seq)
    return None, before[0] if before is not None else since


def _kms_name(store: KeyStore, use: AuditSummary) -> str:
    """The use's KMS name: the action a KMS call's record names, or its native operation's."""
    row = store.audit.record(use.chain, use.seq)
    action_name = json.loads(row.details).get("action") if row is not None else None
    if action_name in _KMS_USES:
        return str(action_name)
    return use_of(use.operation) or ""


class GetKeyLastUsageRequest(KmsRequest):
    KeyId: KeyIdField


@action("GetKeyLastUsage")
async def get_key_last_usage(call: KmsCall, request: GetKeyLastUsageRequest) -> dict[str, Any]:
    name = await call.key(request.KeyId, "keys_get_key", Operation.READ)
    store = call.services.store
    info = await in_thread(store.keys.get, name)
    await in_thread(call.services.audit.flush)  # this process's records so far, as GET /v1/audit
    use, tracked_since = await in_thread(last_use, store, info)
    usage: dict[str, Any] = {}
    if use is not None:
        usage = {
            "Operation": await in_thread(_kms_name, store, use),
            "Timestamp": use.time,
            "KmsRequestId": use.request_id,
            "CloudTrailEventId": f"{use.chain}:{use.seq}",
        }
    return {
        "KeyId": call.arn(name),
        "KeyLastUsage": usage,
        "TrackingStartDate": tracked_since,
        "KeyCreationDate": info.created_at,
    }
