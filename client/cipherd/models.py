"""The service's answers as typed objects.

Each answer is a frozen dataclass read from the JSON by `decode`: base64 fields come out as
`bytes`, timestamps as `datetime`, and fields this version does not know are ignored, so an
answer that gains a field never breaks a client.
"""

import base64
import dataclasses
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, Generic, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from cipherd.errors import ProblemError, problem_from

T = TypeVar("T")
ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class KeyVersion:
    version: int
    created_at: datetime


@dataclass(frozen=True)
class Key:
    name: str
    type: str
    exportable: bool
    created_at: datetime
    updated_at: datetime
    latest_version: int
    dimension: int | None = None
    curve: str | None = None
    fe_policy: dict[str, Any] | None = None
    derived: bool = False
    convergent: bool = False
    state: str | None = None
    deletion_date: datetime | None = None
    deletion_protection: bool | None = None
    enabled: bool = True
    min_decryption_version: int | None = None
    min_encryption_version: int | None = None
    auto_rotate_seconds: int | None = None
    versions: list[KeyVersion] | None = None


@dataclass(frozen=True)
class DeletionScheduled:
    """A key whose deletion is scheduled: it can be restored until `deletion_date`."""

    name: str
    state: str
    deletion_date: datetime


@dataclass(frozen=True)
class KeyPage:
    keys: list[Key]
    next: str | None = None


@dataclass(frozen=True)
class PublicKey:
    """A key version's public part: bytes in the raw and der forms, text in pem, a dict in
    jwk."""

    name: str
    type: str
    version: int
    public_key: bytes | str | dict[str, Any]
    format: str = "raw"


@dataclass(frozen=True)
class Jwt:
    """A compact JWS; `key_version` is the version its kid names."""

    jwt: str
    key_version: int


@dataclass(frozen=True)
class Login:
    """A login's token: `token` is its secret, shown only this once; `lease_duration` its
    life in seconds (0: none), `metadata` what the login method noted (the role, the claims
    a JWT role maps, a certificate's names)."""

    token: str = field(repr=False)
    accessor: str
    policies: list[str]
    lease_duration: int
    renewable: bool
    metadata: dict[str, str]


@dataclass(frozen=True)
class ExportedKey:
    name: str
    type: str
    version: int
    secret: bytes


@dataclass(frozen=True)
class Token:
    """A token as the service shows it (never the token itself): its id is also its accessor;
    `identity` is whom it was issued to, e.g. `approle:ci`."""

    id: str
    description: str
    keys: list[str]
    operations: list[str]
    created_at: datetime
    expires_at: datetime | None = None
    rate_per_second: float | None = None
    policies: list[str] = field(default_factory=list)
    identity: str = ""
    method: str = ""
    role: str = ""
    parent: str | None = None
    max_expires_at: datetime | None = None
    renewable: bool = False
    period_seconds: float | None = None
    uses_left: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IssuedToken(Token):
    """A new token: `token` is its secret, shown only this once."""

    token: str = ""


@dataclass(frozen=True)
class TokenPage:
    tokens: list[Token]
    next: str | None = None


@dataclass(frozen=True)
class PolicyRule:
    """Operations on the keys whose names match one of `keys` (glob patterns)."""

    keys: list[str]
    operations: list[str]


@dataclass(frozen=True)
class Policy:
    """A named policy at its version: key rules and admin operations (`tokens`, `policies`,
    `auth`, `audit`, `backup`, `sys`)."""

    name: str
    version: int
    description: str = ""
    rules: list[PolicyRule] = field(default_factory=list)
    admin: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Ciphertext:
    ciphertext: bytes
    key_version: int


@dataclass(frozen=True)
class Plaintext:
    plaintext: bytes
    key_version: int


@dataclass(frozen=True)
class DataKey:
    """A fresh data key: its encryption under the key's latest version and, unless asked not
    to, the key itself; AEZ data keys also give the nonce and tau their decrypt takes."""

    ciphertext: bytes
    key_version: int
    plaintext: bytes | None = None
    nonce: bytes | None = None
    tau: int | None = None


@dataclass(frozen=True)
class Signature:
    signature: bytes
    key_version: int


@dataclass(frozen=True)
class Hmac:
    """An HMAC in the envelope that names its key version (`cipherd:v<N>:` and the MAC)."""

    hmac: bytes
    key_version: int


@dataclass(frozen=True)
class FunctionalKey:
    functional_key: bytes
    key_version: int


@dataclass(frozen=True)
class ReleasedFunction:
    function: list[Any]
    principal: str
    time: datetime
    key_version: int
    rank: int


@dataclass(frozen=True)
class FeFunctions:
    functions: list[ReleasedFunction]
    key_version: int
    rank: int
    max_rank: int | None = None
    next: int | None = None


@dataclass(frozen=True)
class Keyring:
    term: int
    versions: int
    versions_behind: int


@dataclass(frozen=True)
class AuditRecord:
    time: datetime
    request_id: str
    operation: str
    status: int
    outcome: str
    chain: str
    seq: int
    mac: str
    client: str | None = None
    principal: str | None = None
    key: str | None = None
    key_version: int | list[int] | None = None
    problem: str | None = None
    details: dict[str, Any] | None = None


@dataclass(frozen=True)
class AuditPage:
    records: list[AuditRecord]
    next: str | None = None


@dataclass(frozen=True)
class AuditFault:
    """What does not verify in the audit trail: its chain (None: the trail as a whole), the first
    record concerned (when it is about one), and what is wrong."""

    chain: str | None
    seq: int | None
    problem: str


@dataclass(frozen=True)
class AuditAnchor:
    """The published state of the trail a verification compared the store with: where it was
    kept (`file`, `audit-file`, `log`, `hsm`), when it was published, how many chains it holds."""

    source: str
    time: datetime
    chains: int


@dataclass(frozen=True)
class AuditVerification:
    """The service's check of every chain of its audit trail, and of the store against its latest
    anchor (None when none is kept)."""

    verified: bool
    records: int
    chains: int
    faults: list[AuditFault]
    anchor: AuditAnchor | None = None


@dataclass(frozen=True)
class SecretId:
    """An AppRole secret id: `secret_id` is the secret, shown only this once; `accessor`
    names it. `num_uses` 0: any number; `ttl` 0: no end."""

    secret_id: str
    accessor: str
    num_uses: int
    ttl: int


@dataclass(frozen=True)
class WrapInfo:
    """A response-wrapping token (Vault's `wrap_info`): `token` redeems the wrapped answer
    once (`client.sys.unwrap`) within `ttl` seconds."""

    token: str
    accessor: str
    ttl: int
    creation_time: datetime
    creation_path: str
    wrapped_accessor: str = ""


@dataclass(frozen=True)
class Streamed:
    """A raw-form call streamed into a file: the key version used and the bytes written."""

    key_version: int
    length: int


@dataclass(frozen=True)
class BatchItem(Generic[ResultT]):
    """One item of a batch answer: its result, or the problem that item met."""

    result: ResultT | None
    error: ProblemError | None

    def unwrap(self) -> ResultT:
        """The result, or the item's problem raised."""
        if self.error is not None:
            raise self.error
        return cast(ResultT, self.result)


def decode(cls: type[T], data: Any) -> T:
    """`data` (parsed JSON) as an instance of the dataclass `cls`."""
    converted: T = _convert(cls, data)
    return converted


def decode_batch(
    decode: Callable[[Any], T], answer: Mapping[str, Any], request_id: str | None
) -> list[BatchItem[T]]:
    """A batch answer (`{"results": [...]}`) item by item, each result read by `decode`."""
    items: list[BatchItem[T]] = []
    for item in answer["results"]:
        error = item.get("error")
        if error is not None:
            items.append(BatchItem(None, problem_from(error.get("status", 0), error, request_id)))
        else:
            items.append(BatchItem(decode(item), None))
    return items


@cache
def _fields(cls: type) -> dict[str, Any]:
    hints = get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


def _convert(hint: Any, value: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        inner = [arg for arg in get_args(hint) if arg is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if hint is bytes:
        return base64.b64decode(value)
    if hint is datetime:
        # Python 3.10's fromisoformat does not read the "Z" of UTC.
        return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    if origin is list:
        (inner,) = get_args(hint) or (Any,)
        return [_convert(inner, item) for item in value]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        known = _fields(hint)
        return hint(
            **{name: _convert(known[name], v) for name, v in value.items() if name in known}
        )
    return value
