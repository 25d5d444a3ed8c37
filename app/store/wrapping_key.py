"""The store's wrapping key pairs, each drawn once per store and kept with its secret wrapped:
the instance's (what backups and imported material are ECIES-encrypted to, `app.ops.backup`)
and Transit's import key (RSA-4096, what `transit/keys/:name/import` material is wrapped for,
`app.ops.transit.imports`)."""

import threading
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
        self._drawing = threading.Lock()

    def pair(self, generate: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        """The pair (secret, public), drawn by `generate` the first time: once per process
        however many ask at once, outside the write transaction (an RSA key takes a second to
        draw), and of processes drawing at once the first to store its pair gives it to all.
        Once stored, a read."""
        kept = self._kept()
        if kept is not None:
            return kept
        with self._drawing:
            kept = self._kept()
            if kept is not None:
                return kept
            drawn = generate()
            with self._session.transaction(write=True) as cursor:
                secret, public = self._terms.kept_once(
                    cursor, self._table, ("wrapped", "public"), self._identity, lambda: drawn
                )
        return secret, public

    def public(self, generate: Callable[[], tuple[bytes, bytes]]) -> bytes:
        """The pair's public part, read without its secret once stored (drawn as `pair` draws
        it the first time)."""
        row = self._session.read_row(f"SELECT public FROM {self._table} WHERE id = 1")
        return bytes(row[0]) if row is not None else self.pair(generate)[1]

    def _kept(self) -> tuple[bytes, bytes] | None:
        with self._session.transaction(write=False) as cursor:
            cursor.execute(f"SELECT wrapped, public FROM {self._table} WHERE id = 1")
            row = cursor.fetchone()
            if row is None:
                return None
            secret = self._terms.wrapper(cursor, 1).unwrap(bytes(row[0]), *self._identity)
        return secret, bytes(row[1])
