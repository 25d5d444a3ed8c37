"""The registry of KMS actions (`action`), what an action is given (`KmsCall`) and the request
fields actions share. How an action is declared: `app.ops.kms`."""

import importlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field

from app.ops import Services
from app.ops.audit import AuditNote
from app.ops.grants import Operation, Principal
from app.ops.kms import keyids
from app.ops.kms.errors import access_denied
from app.ops.work import in_thread

# The modules of actions, one per group; importing one declares its actions.
MODULES = (
    "keys",
    "rotation",
    "deletion",
    "aliases",
    "tags",
    "crypto",
    "datakeys",
    "signing",
    "usage",
)

# Fields of AWS's request shapes, with AWS's bounds.
KeyIdField = Annotated[str, Field(min_length=1, max_length=2048)]
GrantTokenList = (
    Annotated[list[Annotated[str, Field(max_length=8192)]], Field(max_length=10)] | None
)


class KmsRequest(BaseModel):
    """A request shape: members in AWS's spelling, typed strictly; unknown members refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass(slots=True)  # not frozen: made on every request
class KmsCall:
    """What an action is given: the services, the caller, the audit record being written, the
    region the request was signed for and the action's name."""

    services: Services
    principal: Principal
    note: AuditNote
    region: str
    action: str

    def arn(self, key_name: str) -> str:
        return keyids.key_arn(self.region, self.services.settings.aws_account_id, key_name)

    def allow(self, operation: Operation, key_name: str | None) -> None:
        """AccessDeniedException unless the token may do `operation` on the key (on any key,
        for None)."""
        if not self.principal.allows(operation, key_name):
            target = f" on key {key_name!r}" if key_name else ""
            raise access_denied(
                f"The token {self.principal.id} is not authorized to perform "
                f"{self.action}: its scope has no {operation.value!r}{target}"
            )

    def record(self, native: str, key_name: str | None = None) -> None:
        """Record the call as the native operation `native` (on the key, when given)."""
        self.note.operation = native
        if key_name is not None:
            self.note.key = key_name

    async def changing(self) -> None:
        """The call changes keys: made only once the audit trail can take its record first
        (503 otherwise), and on disk before the answer."""
        await self.services.audit.admit_change(self.note)

    async def key(self, key_id: str, native: str, access: Operation, change: bool = False) -> str:
        """The native name of the key `key_id` names (a key id, key ARN, alias or alias ARN),
        once the token may do `access` on it; the call recorded as `native` on that key."""
        account = self.services.settings.aws_account_id
        name = keyids.direct(key_id, account)
        if name is None:
            name = await in_thread(keyids.by_alias, self.services.store, key_id, account)
        self.record(native, name)
        self.allow(access, name)
        if change:
            await self.changing()
        return name


ActionFunction = Callable[[KmsCall, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Action:
    name: str
    request: type[KmsRequest]
    run: ActionFunction


ACTIONS: dict[str, Action] = {}
# AWS KMS's actions this service does not serve, and why: UnsupportedOperationException, where
# an action no KMS has is UnknownOperationException.
_BY_SCOPE = "who may use a key is its tokens' scope and policies, not a key policy or grant"
NOT_SERVED = {
    **dict.fromkeys(
        (
            "GetKeyPolicy",
            "PutKeyPolicy",
            "ListKeyPolicies",
            "CreateGrant",
            "ListGrants",
            "ListRetirableGrants",
            "RetireGrant",
            "RevokeGrant",
        ),
        _BY_SCOPE,
    ),
    **dict.fromkeys(
        (
            "ConnectCustomKeyStore",
            "CreateCustomKeyStore",
            "DeleteCustomKeyStore",
            "DescribeCustomKeyStores",
            "DisconnectCustomKeyStore",
            "UpdateCustomKeyStore",
        ),
        "there are no custom key stores: the service's root key wraps every key",
    ),
    **dict.fromkeys(
        ("GetParametersForImport", "ImportKeyMaterial", "DeleteImportedKeyMaterial"),
        "key material comes in through the native API (POST /v1/keys/import)",
    ),
    **dict.fromkeys(("ReplicateKey", "UpdatePrimaryRegion"), "keys are not multi-Region"),
    **dict.fromkeys(
        ("Encapsulate", "Decapsulate", "DeriveSharedSecret"),
        "there are no ML-KEM or key agreement keys",
    ),
}
_ACTION_NAME = re.compile(r"^[A-Z][A-Za-z]+$")


def action(name: str) -> Callable[[ActionFunction], ActionFunction]:
    """Declare `async def f(call: KmsCall, request: SomeRequest) -> dict` as KMS's action
    `name` (`X-Amz-Target: TrentService.<name>`)."""

    def declare(function: ActionFunction) -> ActionFunction:
        if not _ACTION_NAME.fullmatch(name) or name in ACTIONS:
            raise ValueError(f"action {name!r}: not an action name, or declared twice")
        hints = get_type_hints(function)
        request = next(h for k, h in hints.items() if k not in ("call", "return"))
        ACTIONS[name] = Action(name, request, function)
        return function

    return declare


def declared() -> dict[str, Action]:
    """Every action, once their modules are imported."""
    for module in MODULES:
        importlib.import_module(f"app.ops.kms.{module}")
    return ACTIONS
