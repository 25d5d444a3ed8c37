"""Where keys and everything about them live: one repository per concern (keys, tokens, audit
records, the keyring, the FE ledger, the wrapping key, the secrets-engine mounts, wrapped
answers, AppRole's roles and secret ids) over an SQLite or a PostgreSQL backend, and the
wrapping of stored secrets under the keyring and the root key.

    records.py   the values that cross the interface     errors.py    what it raises
    database.py  backends' common ground, transactions   schema.py    the tables
    keys.py tokens.py audit.py keyring.py ledger.py wrapping_key.py secret_mounts.py
    mount_migrations.py wrapped.py approle.py
    policies.py auth_state.py auth_mounts.py auth_roles.py
                 the repositories
    keystore.py  all of them over one backend            sqlite.py postgres.py   the backends
    wrapping.py  AES-GCM under a key, bound to the row   patterns.py  token globs in SQL
    journal.py   a process's audit records before they reach the store
    clock.py     the database's time, the one clock of every replica
"""

from pathlib import Path

from app.store.clock import MAX_SKEW_SECONDS
from app.store.database import CONNECT_TIMEOUT_SECONDS, Database
from app.store.errors import (
    AliasedNameError,
    DeletionProtectedError,
    KeyChangedError,
    KeyExistsError,
    KeyNotFoundError,
    KeyNotPendingDeletionError,
    KeyPendingDeletionError,
    KeyStoreError,
    MountExistsError,
    MountNotFoundError,
    NulInTextError,
    ParentTokenNotFoundError,
    RootKeyMismatchError,
    RootKeyUnreachableError,
    StorageFullError,
    StoreUnavailableError,
    TokenExistsError,
    UnwrapError,
    VersionNotFoundError,
)
from app.store.keystore import KeyStore, Repositories
from app.store.records import (
    AUTOMATIC,
    ON_DEMAND,
    AppRole,
    AuditHead,
    AuditQuery,
    AuditRow,
    AuditSummary,
    AuthMount,
    AuthState,
    AwsCredential,
    FunctionLedger,
    FunctionPage,
    FunctionRecord,
    KeyInfo,
    KeyMaterial,
    KeyPolicies,
    KeyringStatus,
    KeyVersionInfo,
    KmsAlias,
    MountMigration,
    PolicyDecision,
    PolicyRecord,
    RestoredVersion,
    RootKey,
    RootKeyLoader,
    SecretId,
    SecretMount,
    TokenRecord,
    WrappedResponse,
)
from app.store.wrapping import KeyWrapper


def open_store(
    url: str,
    load_root: RootKeyLoader,
    *,
    connect_timeout: int = CONNECT_TIMEOUT_SECONDS,
    max_clock_skew: float = MAX_SKEW_SECONDS,
) -> KeyStore:
    """The store a `CIPHERD_DATABASE_URL` names; `load_root` reads the root key (again when
    the store says it was rotated). `connect_timeout` bounds one PostgreSQL connection attempt
    to one host; `max_clock_skew` how far this machine's clock may be from the database's
    (`app.store.clock`)."""
    if url.startswith("sqlite:///"):
        from app.store.sqlite import SqliteDatabase

        database: Database = SqliteDatabase(Path(url.removeprefix("sqlite:///")))
    elif url.startswith(("postgresql://", "postgres://")):
        from app.store.postgres import PostgresDatabase

        database = PostgresDatabase(url, connect_timeout=connect_timeout)
    else:
        raise KeyStoreError("CIPHERD_DATABASE_URL must start with sqlite:/// or postgresql://")
    try:
        return KeyStore(database, load_root, max_clock_skew)
    except BaseException:
        database.close()
        raise


__all__ = [
    "AUTOMATIC",
    "ON_DEMAND",
    "AliasedNameError",
    "AppRole",
    "AuditHead",
    "AuditQuery",
    "AuditRow",
    "AuditSummary",
    "AuthMount",
    "AuthState",
    "AwsCredential",
    "DeletionProtectedError",
    "FunctionLedger",
    "FunctionPage",
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
    "KmsAlias",
    "MountExistsError",
    "MountMigration",
    "MountNotFoundError",
    "NulInTextError",
    "ParentTokenNotFoundError",
    "PolicyDecision",
    "PolicyRecord",
    "Repositories",
    "RestoredVersion",
    "RootKey",
    "RootKeyLoader",
    "RootKeyMismatchError",
    "RootKeyUnreachableError",
    "SecretId",
    "SecretMount",
    "StorageFullError",
    "StoreUnavailableError",
    "TokenExistsError",
    "TokenRecord",
    "UnwrapError",
    "VersionNotFoundError",
    "WrappedResponse",
    "open_store",
]
