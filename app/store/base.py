"""The key-store interface shared by the SQLite and PostgreSQL backends.

Routers talk to a `KeyStore`, never to SQL. Secret material crosses this interface only in the
clear on the way in (`create`, `rotate`) and out (`material`); the backend stores it wrapped under
a term of the keyring, which the root key wraps (`app.store.hierarchy`).
"""

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from app.store.hierarchy import KeyringStatus, RootKey

DecisionT = TypeVar("DecisionT")

# How long a write waits for a lock another process holds (its rotation of the same key, or for
# SQLite any write) before it gives up with StoreUnavailableError, a 503 the client retries.
LOCK_WAIT_SECONDS = 10.0


class KeyStoreError(Exception):
    """Base class of the store's own errors."""


class StoreUnavailableError(KeyStoreError):
    """The database did not answer (down, restarting, unreachable); the request may be retried.
    A write that failed this way may or may not have been applied."""


class StorageFullError(StoreUnavailableError):
    """A write found no space on the store's disk; reads go on, and writes work again once
    space is freed. Nothing of the failed write was applied."""


class RootKeyMismatchError(KeyStoreError):
    """The store's secrets were wrapped under another root key."""

    def __init__(self) -> None:
        super().__init__(
            "the root key does not open this key store: its keyring is wrapped under another "
            "root key (check CIPHERD_ROOT_KEY, CIPHERD_ROOT_KEY_FILE, the "
            "CIPHERD_ROOT_KEY_PKCS11_* settings or the data directory; after "
            "`cipherd root rotate`, give the new root key)"
        )


class KeyNotFoundError(KeyStoreError, LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no key named {name!r}")
        self.name = name


class VersionNotFoundError(KeyStoreError, LookupError):
    def __init__(self, name: str, version: int) -> None:
        super().__init__(f"key {name!r} has no version {version}")
        self.name = name
        self.version = version


class KeyChangedError(KeyStoreError):
    """The key was deleted, and perhaps its name given to a new key, while a new version was
    being drawn for it: the version belongs to neither, so nothing was stored."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"key {name!r} was deleted or replaced while its new version was being made; "
            "nothing was stored"
        )
        self.name = name


class KeyExistsError(KeyStoreError):
    def __init__(self, name: str) -> None:
        super().__init__(f"a key named {name!r} already exists")
        self.name = name


class KeyPendingDeletionError(KeyStoreError):
    """The key is scheduled for deletion: nothing may use or change it but a restore."""

    def __init__(self, name: str, deletion_date: float) -> None:
        when = datetime.fromtimestamp(deletion_date, UTC).isoformat()
        super().__init__(
            f"key {name!r} is pending deletion (due {when}); POST /v1/keys/{name}/restore "
            "cancels it"
        )
        self.name = name


class KeyNotPendingDeletionError(KeyStoreError):
    def __init__(self, name: str) -> None:
        super().__init__(f"key {name!r} is not pending deletion: there is nothing to restore")
        self.name = name


class DeletionProtectedError(KeyStoreError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"key {name!r} has deletion_protection: PATCH it to false before deleting it"
        )
        self.name = name


@dataclass(frozen=True)
class KeyVersionInfo:
    version: int
    created_at: float


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
    state: str = "active"  # or "pending-deletion"
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
    """A scoped token as stored: only the SHA-256 of the token itself is kept."""

    id: str
    token_hash: bytes = field(repr=False)
    description: str
    key_patterns: tuple[str, ...]
    operations: tuple[str, ...]
    created_at: float
    expires_at: float | None
    # Requests a second the token may make on each worker process; None: no limit.
    rate_per_second: float | None = None


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
    four times as long to build (bench/README.md)."""

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


class KeyStore(ABC):
    """Named, versioned keys and scoped tokens, durable once a call returns."""

    @abstractmethod
    def create(
        self,
        name: str,
        type: str,
        params: dict[str, Any],
        exportable: bool,
        secret: bytes,
        public: bytes | None,
        deletion_protection: bool = False,
    ) -> KeyInfo:
        """Store version 1 of a new key; `KeyExistsError` if the name is taken."""

    @abstractmethod
    def rotate(
        self,
        name: str,
        secret: bytes,
        public: bytes | None,
        created_at: float,
        expected_version: int | None = None,
    ) -> KeyInfo:
        """Add the next version atomically: concurrent rotations get distinct versions.

        `created_at` is that of the key the secret was drawn for (drawing can take seconds):
        `KeyChangedError` if the name now stands for another key, or if `expected_version` is
        given and is no longer the latest; `KeyNotFoundError`; `KeyPendingDeletionError`.
        """

    @abstractmethod
    def restore_backup(
        self,
        name: str,
        type: str,
        params: dict[str, Any],
        exportable: bool,
        versions: Sequence[RestoredVersion],
        policies: KeyPolicies,
    ) -> KeyInfo:
        """Store a key brought from a backup, with its versions (numbers kept) and policies;
        `KeyExistsError` if the name is taken."""

    @abstractmethod
    def wrapping_key(self, generate: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        """The store's wrapping key pair (secret, public), drawn by `generate` the first time."""

    @abstractmethod
    def get(self, name: str) -> KeyInfo:
        """Metadata of a key with its versions; `KeyNotFoundError` if absent."""

    @abstractmethod
    def list(
        self,
        after: str | None = None,
        limit: int | None = None,
        patterns: Sequence[str] | None = None,
    ) -> Sequence[KeyInfo]:
        """Metadata of the keys named after `after` (all when None) that match one of the glob
        `patterns` (any key when None; see `app.store.patterns`), in name order, at most
        `limit` of them (all when None); without the version list."""

    @abstractmethod
    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        """Unwrapped material of one version (the latest when `version` is None)."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Destroy a key and every version of it at once; `KeyNotFoundError` if absent."""

    @abstractmethod
    def schedule_deletion(self, name: str, deletion_date: float) -> KeyInfo:
        """Mark a key pending deletion until `deletion_date`; `KeyPendingDeletionError` if it
        is already, `DeletionProtectedError` if it is protected."""

    @abstractmethod
    def restore(self, name: str) -> KeyInfo:
        """Cancel a scheduled deletion; `KeyNotPendingDeletionError` if none is scheduled."""

    @abstractmethod
    def destroy_due(self, now: float) -> builtins.list[str]:
        """Destroy every key whose deletion date has come: the names this call destroyed (each
        key is destroyed by exactly one call, whichever process makes it)."""

    @abstractmethod
    def set_policy(self, name: str, decide: PolicyDecision) -> KeyInfo:
        """Change a key's policy columns as `decide` says, from the key under its row lock."""

    @abstractmethod
    def trim(self, name: str) -> tuple[KeyInfo, builtins.list[int]]:
        """Destroy the versions below the key's min_decryption_version: the key, and the
        versions destroyed."""

    @abstractmethod
    def due_rotations(self, now: float) -> builtins.list[tuple[str, int]]:
        """Keys with auto_rotate_seconds whose latest version is at least that old: (name,
        latest version)."""

    @abstractmethod
    def set_params(self, name: str, changes: dict[str, Any]) -> KeyInfo:
        """Change some of a key's parameters (a value of None removes one); `KeyNotFoundError`
        if absent."""

    @abstractmethod
    def release_functions(
        self, name: str, version: int, decide: Callable[[FunctionLedger], DecisionT]
    ) -> DecisionT:
        """Run `decide` on the ledger of one key version in one write transaction, serialised
        with every other decision on that version on every replica, and store what it recorded
        (nothing if it raises)."""

    @abstractmethod
    def functions(self, name: str, version: int | None) -> Sequence[FunctionRecord]:
        """The functions released under a key (one version, or all), in order."""

    @abstractmethod
    def keyring_status(self) -> "KeyringStatus":
        """The keyring's newest term and how many versions are still under older ones."""

    @abstractmethod
    def rotate_keyring(self) -> "KeyringStatus":
        """Add a term, which every write from now on uses (in every replica)."""

    @abstractmethod
    def rotate_root(self, new_root: "RootKey") -> int:
        """Rewrap the keyring (only it) under `new_root`; the number of terms rewrapped."""

    @abstractmethod
    def rewrap_keyring(self, limit: int) -> "tuple[int, KeyringStatus]":
        """Move up to `limit` versions from older terms to the newest, in one transaction;
        how many moved, and the status after."""

    @abstractmethod
    def refresh_root(self) -> None:
        """Take up a root key rotated by another process (asking the root key source again);
        `RootKeyMismatchError` if the source still gives a key that does not open the store."""

    @abstractmethod
    def add_token(self, token: TokenRecord) -> None:
        """Store a scoped token."""

    @abstractmethod
    def token_by_hash(self, token_hash: bytes) -> TokenRecord | None:
        """The token whose SHA-256 is `token_hash`, if any."""

    @abstractmethod
    def list_tokens(self) -> Sequence[TokenRecord]:
        """Every scoped token, oldest first."""

    @abstractmethod
    def delete_token(self, token_id: str) -> bool:
        """Revoke a token; False if there was none with that id."""

    @abstractmethod
    def append_audit(self, rows: Sequence[AuditRow], head: AuditHead) -> None:
        """Store audit records of one chain and its new head (unless the stored head is further
        on), in one transaction, on disk when this returns; records already stored (by an
        earlier move of the same journal) are left as they are."""

    @abstractmethod
    def extend_audit_chain(
        self,
        chain: str,
        extend: Callable[[Sequence[AuditRow]], tuple[Sequence[AuditRow], AuditHead | None]],
    ) -> None:
        """Append to a chain that several processes write, one at a time: `extend` is given
        the chain's records so far, under its lock, and answers the records that follow and
        the new head (None: nothing to add)."""

    @abstractmethod
    def audit_mac_key(self) -> bytes:
        """The key of the audit trail's MACs: drawn once per store, kept wrapped in it."""

    @abstractmethod
    def audit_records(self, query: AuditQuery) -> Sequence[AuditRow]:
        """Records matching `query`, oldest first (by time, chain, seq)."""

    @abstractmethod
    def audit_record(self, chain: str, seq: int) -> AuditRow | None:
        """One record by its place in its chain."""

    @abstractmethod
    def audit_chain(self, chain: str, after_seq: int, limit: int) -> Sequence[AuditRow]:
        """Up to `limit` records of `chain` after position `after_seq`, in chain order."""

    @abstractmethod
    def audit_heads(self) -> Sequence[AuditHead]:
        """The head of every chain, and a head of seq 0 for a chain with records but no head."""

    @abstractmethod
    def ping(self) -> None:
        """Raise if the store cannot be reached."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""
