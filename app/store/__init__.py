"""Where keys and tokens live: one interface, an SQLite and a PostgreSQL backend, and the
wrapping of stored secrets under the root key."""

from pathlib import Path

from app.store.base import (
    FunctionLedger,
    FunctionRecord,
    KeyChangedError,
    KeyExistsError,
    KeyInfo,
    KeyMaterial,
    KeyNotFoundError,
    KeyStore,
    KeyStoreError,
    KeyVersionInfo,
    RootKeyMismatchError,
    StoreUnavailableError,
    TokenRecord,
    VersionNotFoundError,
)
from app.store.wrapping import KeyWrapper, UnwrapError


def open_store(url: str, wrapper: KeyWrapper) -> KeyStore:
    """The backend a `CIPHERD_DATABASE_URL` names."""
    if url.startswith("sqlite:///"):
        from app.store.sqlite import SqliteKeyStore

        return SqliteKeyStore(Path(url.removeprefix("sqlite:///")), wrapper)
    if url.startswith(("postgresql://", "postgres://")):
        from app.store.postgres import PostgresKeyStore

        return PostgresKeyStore(url, wrapper)
    raise KeyStoreError("CIPHERD_DATABASE_URL must start with sqlite:/// or postgresql://")


__all__ = [
    "FunctionLedger",
    "FunctionRecord",
    "KeyChangedError",
    "KeyExistsError",
    "KeyInfo",
    "KeyMaterial",
    "KeyNotFoundError",
    "KeyStore",
    "KeyStoreError",
    "KeyVersionInfo",
    "KeyWrapper",
    "RootKeyMismatchError",
    "StoreUnavailableError",
    "TokenRecord",
    "UnwrapError",
    "VersionNotFoundError",
    "open_store",
]
