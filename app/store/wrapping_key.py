"""The store's wrapping key pairs, each drawn once per store and kept with its secret wrapped:
the instance's (what backups and imported material are ECIES-encrypted to, `app.ops.backup`)
and Transit's import key (RSA-4096, what `transit/keys/:name/import` material is wrapped for,
`app.ops.transit.imports`)."""

from collections.abc import Callable

from app.store.database import Session
from app.store.keyring import Terms

# The secrets' wrapping identities: no key has an empty name or version 0.
IDENTITY = ("", 0, "wrapping-key")
IMPORT_IDENTITY = ("", 0, "transit-import-key")


class WrappingKeyRepository:
    def __init__(
        self, session: Session, terms: Terms, table: str, identity: tuple[str, int, str]
    ) -> None:
        self._session = session
        self._terms = terms
        self._table = table
        self._identity = identity

    def pair(self, generate: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        """The pair (secret, public), drawn by `generate` the first time: outside the write
        transaction, as an RSA key takes a second to draw, and of processes drawing at once the
        first to store its pair gives it to all."""
        drawn = None
        if self._session.read_row(f"SELECT 1 FROM {self._table} WHERE id = 1", ()) is None:
            drawn = generate()
        with self._session.transaction(write=True) as cursor:
            secret, public = self._terms.kept_once(
                cursor,
                self._table,
                ("wrapped", "public"),
                self._identity,
                lambda: drawn or generate(),
            )
        return secret, public
