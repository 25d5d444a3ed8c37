"""What crosses the store's interface: keys, tokens, audit rows, FE ledger entries and the
keyring's state, as values; none of them knows where it is stored.

Secret material crosses in the clear only on the way in (`RestoredVersion`, a new key's
secret) and out (`KeyMaterial`); the store keeps it wrapped under a term of the keyring, which
the root key wraps (`app.store.keyring`).
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

ACTIVE, PENDING_DELETION = "active", "pending-deletion"
# How a version after the first was made (`KeyVersionInfo.rotation`): by the maintenance pass,
# when the key's `auto_rotate_seconds` had passed, or at someone's request (a rotation or an
# import of a next version).
AUTOMATIC, ON_DEMAND = "automatic", "on-demand"


@dataclass(frozen=True)
class KeyVersionInfo:
    version: int
    created_at: float
    # AUTOMATIC or ON_DEMAND; None for a key's first version, and where it is not known: a
    # version restored from a backup or made before versions recorded it.
    rotation: str | None = None


@dataclass(frozen=True)
class KeyInfo:
    """What anyone allowed to read a key may see: never secret material."""

    name: str
    type: str
    params: dict[str, Any]
    exportable: bool
    created_at: float
    updated_at: float
    latest_version: int
    versions: tuple[KeyVersionInfo, ...] = field(default=())
    state: str = ACTIVE  # or PENDING_DELETION
    deletion_date: float | None = None
    deletion_protection: bool = False
    min_decryption_version: int = 1
    min_encryption_version: int = 0  # 0: the latest
    auto_rotate_seconds: float | None = None


# A policy change, decided under the key's row lock from the key as it is: the columns to set.
PolicyDecision = Callable[[KeyInfo], dict[str, Any]]


@dataclass(frozen=True)
class KeyPolicies:
    """The policies a key keeps in its own columns, as a backup carries them."""

    deletion_protection: bool = False
    min_decryption_version: int = 1
    min_encryption_version: int = 0
    auto_rotate_seconds: float | None = None


@dataclass(frozen=True)
class RestoredVersion:
    """One version of a key brought in from a backup, with its number and creation time."""

    version: int
    created_at: float
    secret: bytes = field(repr=False)
    public: bytes | None


@dataclass(frozen=True)
class KeyMaterial:
    """One unwrapped key version, as the crypto code needs it."""

    name: str
    type: str
    version: int
    params: dict[str, Any]
    secret: bytes = field(repr=False)
    public: bytes | None
    exportable: bool  # read with the secret, so that an export checks the key it returns
    latest_version: int = 0
    min_decryption_version: int = 1
    min_encryption_version: int = 0
    # What the crypto code derives from the secret once per version held in memory (an Ed25519
    # signing key), set by the keyring that holds it; never stored.
    prepared: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class TokenRecord:
    """A token as stored: only the SHA-256 of the token itself is kept. Its `id` is also its
    accessor: the handle by which it is looked up or revoked without being known.

    What it may do is the union of its named `policies` and its inline rule (`key_patterns` x
    `operations`, a scoped token's). Its life: `expires_at` (None: never), extended by a renewal
    up to `max_expires_at`, by `ttl_seconds` or the caller's increment, or by `period_seconds`
    for a periodic token; `uses_left` requests (None: any number). A child (`parent_id`) is
    revoked with its parent. `method`, `mount`, `role` and `identity` say who it was issued
    to: the identity's stable name, e.g. `approle:ci` or `jwt:repo:org/app`. `bound_cidrs`:
    the address blocks it may be used from (none: any)."""

    id: str
    token_hash: bytes = field(repr=False)
    description: str
    key_patterns: tuple[str, ...]
    operations: tuple[str, ...]
    created_at: float
    expires_at: float | None
    # Requests a second the token may make on each worker process; None: no limit.
    rate_per_second: float | None = None
    policies: tuple[str, ...] = ()
    parent_id: str | None = None
    ttl_seconds: float | None = None
    explicit_max_seconds: float | None = None
    max_expires_at: float | None = None
    period_seconds: float | None = None
    renewable: bool = False
    uses_left: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    method: str = "token"
    mount: str = "token"
    role: str = ""
    identity: str = "token:admin"
    path: str = ""
    renewed_at: float | None = None
    bound_cidrs: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyRecord:
    """A named policy: its document (JSON-serialisable: `app.ops.policies` gives its form) at
    its `version`, counted from 1 by each change."""

    name: str
    version: int
    document: dict[str, Any]
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class AuthState:
    """What every replica checks before it trusts a token: `generation` grows with every change
    that narrows a token (a policy changed or deleted, a token revoked, the admin token rotated,
    an auth mount disabled), and the admin token's SHA-256 once rotated (None: the configured
    one)."""

    generation: int
    admin_token_hash: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class AuthMount:
    """An auth method mounted at `path` under /v1/auth/ (Vault's `sys/auth`), of `type`
    (approle, jwt, oidc, cert, token), its settings as the method keeps them."""

    accessor: str
    path: str
    type: str
    description: str
    config: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class MountMigration:
    """A mount moved (Vault's `sys/remount`): `source` and `target` as Vault names them, with
    a trailing '/' (`payments/`, `auth/ci/`)."""

    # `mount_migrations` reads a row as these fields in this order.
    id: str
    source: str
    target: str
    created_at: float


@dataclass(frozen=True)
class AwsCredential:
    """A token's AWS access key pair: the secret unsealed, for checking a SigV4 signature."""

    access_key_id: str
    token: TokenRecord
    secret: bytes = field(repr=False)


@dataclass(frozen=True)
class KmsAlias:
    """An alias of AWS KMS's API (`alias/<name>`) and the key it names."""

    name: str
    key_name: str
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class SecretMount:
    """A secrets-engine mount: its path under /v1/ (None once disabled: detached, its former
    path kept), its engine, and the prefix that makes its key names native ones."""

    # `SecretMountRepository` reads a row as these fields in this order.
    accessor: str
    path: str | None
    type: str
    key_prefix: str
    description: str
    created_at: float
    former_path: str | None = None
    detached_at: float | None = None


@dataclass(frozen=True)
class FunctionRecord:
    """One function released under an FE key version: who asked, when, and the rank of all
    functions released under that version once it was."""

    version: int
    seq: int
    function: Any
    principal: str
    time: float
    rank: int


@dataclass(frozen=True)
class FunctionPage:
    """A page of the functions released under one FE key version, oldest first: `next` is the
    `after` of the page that follows (None on the last), and `rank` the rank of all of them,
    past the page, as a reader of one page still needs it."""

    functions: list[FunctionRecord]
    next: int | None
    rank: int


class FunctionLedger(ABC):
    """The functions released under one FE key version, inside the transaction that decides on
    more: `basis` is the echelon basis of their span (rows of integers) that the decision reads
    and replaces, `params` the key's parameters as they are now (its policy among them),
    `record` adds a release."""

    basis: list[list[int]]
    params: dict[str, Any]

    @abstractmethod
    def released_since(self, principal: str, since: float) -> int:
        """How many functions `principal` was released under this key (any version) after
        `since`, those recorded in this transaction included."""

    @abstractmethod
    def record(self, function: Any, principal: str, time: float, rank: int) -> None:
        """Record one released function (JSON-serialisable)."""


class AuditRow(NamedTuple):
    """One audit record as stored, its columns in table order: text fields exactly as the MAC
    covers them (`key_version` and `details` as canonical JSON), in chain `chain` at position
    `seq` (from 1). A tuple: one is made for every audited request, and a frozen dataclass took
    four times as long to build (docs/performance/choices.md)."""

    chain: str
    seq: int
    time: float
    request_id: str
    client: str | None
    principal: str | None
    operation: str
    key: str | None
    key_version: str | None
    status: int
    problem: str | None
    details: str
    mac: bytes


class AuditSummary(NamedTuple):
    """An audit record without its client, principal, details and MAC: what a walk back over a
    key's records reads of each (`AuditRepository.newest_of_key`)."""

    time: float
    chain: str
    seq: int
    operation: str
    status: int
    request_id: str


@dataclass(frozen=True)
class AuditHead:
    """The last position of a chain and a tag over it: a chain cut short no longer matches."""

    chain: str
    seq: int
    tag: bytes


@dataclass(frozen=True)
class AuditQuery:
    """Which records to list: every condition given must hold; `after` is the (time, chain,
    seq) of the last record of the previous page."""

    key: str | None = None
    principal: str | None = None
    operation: str | None = None
    status_from: int | None = None
    status_to: int | None = None
    since: float | None = None
    until: float | None = None
    after: tuple[float, str, int] | None = None
    limit: int = 100
    other_than_chain: str | None = None


@dataclass(frozen=True)
class KeyringStatus:
    """The newest term, and how many key versions are wrapped under an older one."""

    term: int
    versions: int
    versions_behind: int


class RootKey(Protocol):
    """What the root key does: wrap and unwrap the keyring's terms and the check value."""

    def wrap(self, secret: bytes, name: str, version: int, key_type: str) -> bytes: ...
    def unwrap(self, blob: bytes, name: str, version: int, key_type: str) -> bytes: ...


# Reads the root key from its source (again when the store says it was rotated).
RootKeyLoader = Callable[[], RootKey]


@dataclass(frozen=True)
class AppRole:
    """An AppRole role of the auth mount `mount` (its accessor): what a login with its
    `role_id` (and a secret id of its own, unless `settings` say it binds none) gets.
    `settings` are the role's fields as Vault names them (`app.ops.approle` gives their form);
    `hmac_key` keys the hashes its secret ids are stored by."""

    mount: str
    name: str
    role_id: str
    settings: dict[str, Any]
    hmac_key: bytes = field(repr=False)
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class SecretId:
    """A secret id of an AppRole role, as stored: only its HMAC under the role's key is kept,
    with the accessor that names it without revealing it. `uses_left` 0 is any number of
    uses; `expires_at` None is never."""

    accessor: str
    mount: str
    role: str
    secret_hash: bytes = field(repr=False)
    uses_left: int
    ttl_seconds: int
    expires_at: float | None
    metadata: dict[str, str]
    cidr_list: tuple[str, ...]
    token_bound_cidrs: tuple[str, ...]
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class WrappedResponse:
    """What is known of a response-wrapping token without unwrapping it: only its SHA-256 is
    kept; `accessor` names it. The answer it wraps is stored sealed beside it."""

    accessor: str
    token_hash: bytes = field(repr=False)
    creation_path: str
    created_at: float
    ttl_seconds: int
    wrapped_accessor: str = ""

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_seconds
