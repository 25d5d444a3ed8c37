"""The instance's wrapping key pair: what backups and imported material are encrypted to
(`app.ops.backup`), drawn once per store and kept with its secret wrapped."""

from collections.abc import Callable

from app.store.database import Session
from app.store.keyring import Terms

# The secret's wrapping identity: no key has an empty name or version 0.
IDENTITY = ("", 0, "wrapping-key")


class WrappingKeyRepository:
    def __init__(self, session: Session, terms: Terms) -> None:
        self._session = session
        self._terms = terms

    def pair(self, generate: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        """The store's wrapping key pair (secret, public), drawn by `generate` the first time."""
        with self._session.transaction(write=True) as cursor:
            secret, public = self._terms.kept_once(
                cursor, "wrapping_key", ("wrapped", "public"), IDENTITY, generate
            )
        return secret, public
