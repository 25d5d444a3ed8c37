"""The service's answers as typed objects.

Each answer is a frozen dataclass read from the JSON by `decode`: base64 fields come out as
`bytes`, timestamps as `datetime`, and fields this version does not know are ignored, so an
answer that gains a field never breaks a client.
"""

import base64
import dataclasses
import types
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Generic, TypeVar, Union, get_args, get_origin, get_type_hints

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
    state: str | None = None
    deletion_date: datetime | None = None
    deletion_protection: bool | None = None
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
    name: str
    type: str
    version: int
    public_key: bytes


@dataclass(frozen=True)
class ExportedKey:
    name: str
    type: str
    version: int
    secret: bytes


@dataclass(frozen=True)
class Token:
    id: str
    description: str
    keys: list[str]
    operations: list[str]
    created_at: datetime
    expires_at: datetime | None = None
    rate_per_second: float | None = None


@dataclass(frozen=True)
class IssuedToken(Token):
    """A new token: `token` is its secret, shown only this once."""

    token: str = ""


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
class FeResult:
    """An FE decryption: the value, or None when it lies outside the bounds searched."""

    result: int | None


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
        assert self.result is not None
        return self.result


def decode(cls: type[T], data: Any) -> T:
    """`data` (parsed JSON) as an instance of the dataclass `cls`."""
    converted: T = _convert(cls, data)
    return converted


def decode_batch(
    cls: type[T], answer: Mapping[str, Any], request_id: str | None
) -> list[BatchItem[T]]:
    """A batch answer (`{"results": [...]}`) item by item."""
    items: list[BatchItem[T]] = []
    for item in answer["results"]:
        error = item.get("error")
        if error is not None:
            items.append(BatchItem(None, problem_from(error.get("status", 0), error, request_id)))
        else:
            items.append(BatchItem(decode(cls, item), None))
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
        return datetime.fromisoformat(value)
    if origin is list:
        (inner,) = get_args(hint) or (Any,)
        return [_convert(inner, item) for item in value]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        known = _fields(hint)
        return hint(
            **{name: _convert(known[name], v) for name, v in value.items() if name in known}
        )
    return value
