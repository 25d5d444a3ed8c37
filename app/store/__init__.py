"""Where keys and tokens live: one interface, an SQLite and a PostgreSQL backend, and the
wrapping of stored secrets under the root key."""

from pathlib import Path

from app.store.base import (
    AuditHead,
    AuditQuery,
    AuditRow,
    DeletionProtectedError,
    FunctionLedger,
    FunctionRecord,
    KeyChangedError,
    KeyExistsError,
    KeyInfo,
    KeyMaterial,
    KeyNotFoundError,
    KeyNotPendingDeletionError,
    KeyPendingDeletionError,
    KeyPolicies,
    KeyStore,
    KeyStoreError,
    KeyVersionInfo,
    PolicyDecision,
    RestoredVersion,
    RootKeyMismatchError,
    StorageFullError,
    StoreUnavailableError,
    TokenRecord,
    VersionNotFoundError,
)
from app.store.hierarchy import KeyringStatus, RootKey, RootKeyLoader
from app.store.wrapping import KeyWrapper, UnwrapError


def open_store(url: str, load_root: RootKeyLoader) -> KeyStore:
    """The backend a `CIPHERD_DATABASE_URL` names; `load_root` reads the root key (again when
    the store says it was rotated)."""
    if url.startswith("sqlite:///"):
        from app.store.sqlite import SqliteKeyStore

        return SqliteKeyStore(Path(url.removeprefix("sqlite:///")), load_root)
    if url.startswith(("postgresql://", "postgres://")):
        from app.store.postgres import PostgresKeyStore

        return PostgresKeyStore(url, load_root)
    raise KeyStoreError("CIPHERD_DATABASE_URL must start with sqlite:/// or postgresql://")


__all__ = [
    "AuditHead",
    "AuditQuery",
    "AuditRow",
    "DeletionProtectedError",
    "FunctionLedger",
    "FunctionRecord",
    "KeyChangedError",
    "KeyExistsError",
    "KeyInfo",
    "KeyMaterial",
    "KeyNotFoundError",
    "KeyNotPendingDeletionError",
    "KeyPendingDeletionError",
    "KeyPolicies",
    "KeyStore",
    "KeyStoreError",
    "KeyVersionInfo",
    "KeyWrapper",
    "KeyringStatus",
    "PolicyDecision",
    "RestoredVersion",
    "RootKey",
    "RootKeyLoader",
    "RootKeyMismatchError",
    "StorageFullError",
    "StoreUnavailableError",
    "TokenRecord",
    "UnwrapError",
    "VersionNotFoundError",
    "open_store",
]
