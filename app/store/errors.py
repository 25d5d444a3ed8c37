"""The store's errors: what callers catch, whichever backend and repository raised them.

Backends turn their drivers' failures into these at their edge, so no caller imports a driver.
"""

from datetime import UTC, datetime
from typing import ClassVar


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


class RootKeyUnreachableError(KeyStoreError):
    """The device that holds the root key cannot be reached now (a PKCS#11 token removed, its
    session lost): nothing is wrapped or unwrapped until it can, which a later call tries."""

    def __init__(self) -> None:
        super().__init__(
            "the token that holds the root key cannot be reached; the service tries it again on "
            "the next request that needs it"
        )


class UnwrapError(Exception):
    """A stored secret does not authenticate under the key that wrapped it and its row's
    identity."""


class KeyNamedError(KeyStoreError):
    """An error about one key, kept in `name`. A subclass gives its message as `template`, which
    names the key as `{name!r}` and may name the other values the subclass passes."""

    template: ClassVar[str]

    def __init__(self, name: str, **values: object) -> None:
        super().__init__(self.template.format(name=name, **values))
        self.name = name


class KeyNotFoundError(KeyNamedError, LookupError):
    template = "no key named {name!r}"


class VersionNotFoundError(KeyNamedError, LookupError):
    template = "key {name!r} has no version {version}"

    def __init__(self, name: str, version: int) -> None:
        super().__init__(name, version=version)
        self.version = version


class KeyChangedError(KeyNamedError):
    """The key was deleted, and perhaps its name given to a new key, while a new version was
    being drawn for it: the version belongs to neither, so nothing was stored."""

    template = (
        "key {name!r} was deleted or replaced while its new version was being made; "
        "nothing was stored"
    )


class KeyExistsError(KeyNamedError):
    template = "a key named {name!r} already exists"


class AliasedNameError(KeyExistsError):
    """Every key is also KMS's `alias/<its name>`: a key may not take an alias's name, or the
    alias's maker would hold the key that name reaches."""

    template = "the name {name!r} is taken: the KMS alias 'alias/{name}' exists"


class KeyPendingDeletionError(KeyNamedError):
    """The key is scheduled for deletion: nothing may use or change it but a restore."""

    template = (
        "key {name!r} is pending deletion (due {when}); POST /v1/keys/{name}/restore cancels it"
    )

    def __init__(self, name: str, deletion_date: float) -> None:
        super().__init__(name, when=datetime.fromtimestamp(deletion_date, UTC).isoformat())


class KeyNotPendingDeletionError(KeyNamedError):
    template = "key {name!r} is not pending deletion: there is nothing to restore"


class DeletionProtectedError(KeyNamedError):
    template = "key {name!r} has deletion_protection: PATCH it to false before deleting it"


class MountExistsError(KeyStoreError):
    def __init__(self, path: str) -> None:
        super().__init__(f"path is already in use at {path}/")
        self.path = path


class NulInTextError(KeyStoreError):
    """Text with a NUL character, which PostgreSQL's text cannot hold: no stored name has one,
    and none is stored."""

    def __init__(self) -> None:
        super().__init__("text with a NUL character (\\u0000): no name or field holds one")


class TokenExistsError(KeyStoreError):
    """A token of the same value is stored: only a value chosen by its maker can collide."""


class ParentTokenNotFoundError(KeyStoreError, LookupError):
    """The token a child was to be stored under is gone (revoked, or expired and freed): the
    child is not stored, as its maker's revocation would not reach it."""

    def __init__(self, parent_id: str) -> None:
        super().__init__(f"no token with id {parent_id[:64]!r} to make a child of")
        self.parent_id = parent_id


class MountNotFoundError(KeyStoreError, LookupError):
    def __init__(self, path: str) -> None:
        super().__init__(f"no secrets engine is mounted at {path}/")
        self.path = path
