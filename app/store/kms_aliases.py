"""Aliases of AWS KMS's API: `alias/<name>` -> a key's native name. An alias goes with its key
when the key is destroyed."""

from collections.abc import Sequence
from typing import Any

from app.store.clock import Clock
from app.store.database import Cursor, Session
from app.store.errors import KeyExistsError, KeyNotFoundError
from app.store.patterns import Scope
from app.store.records import KmsAlias

COLUMNS = "name, key_name, created_at, updated_at"
ALIAS_PREFIX = "alias/"


class KmsAliasRepository:
    def __init__(self, session: Session, clock: Clock) -> None:
        self._session = session
        self._clock = clock

    def add(self, name: str, key_name: str) -> KmsAlias:
        """A new alias; `KeyExistsError` if the name is taken (by an alias or a key),
        `KeyNotFoundError` if the key is not there."""
        now = self._clock.now()
        try:
            with self._session.transaction(write=True) as cursor:
                # As a key of the name is made: neither may miss the other.
                self._session.dialect.lock_name(cursor, name.removeprefix(ALIAS_PREFIX))
                cursor.execute(
                    "SELECT 1 FROM kms_aliases WHERE name = ? UNION ALL"
                    " SELECT 1 FROM keys WHERE name = ?",
                    (name, name.removeprefix(ALIAS_PREFIX)),
                )
                if cursor.fetchone() is not None:
                    raise KeyExistsError(name)
                _require_key(cursor, key_name)
                cursor.execute(
                    f"INSERT INTO kms_aliases ({COLUMNS}) VALUES (?, ?, ?, ?)",
                    (name, key_name, now, now),
                )
        except self._session.dialect.integrity_error:
            raise KeyExistsError(name) from None
        return KmsAlias(name, key_name, now, now)

    def get(self, name: str) -> KmsAlias | None:
        row = self._session.read_row(f"SELECT {COLUMNS} FROM kms_aliases WHERE name = ?", (name,))
        return None if row is None else _alias(row)

    def point(self, name: str, key_name: str) -> bool:
        """Point an alias at another key; False if there is no such alias."""
        with self._session.transaction(write=True) as cursor:
            if not _exists(cursor, name):
                return False
            _require_key(cursor, key_name)
            cursor.execute(
                "UPDATE kms_aliases SET key_name = ?, updated_at = ? WHERE name = ?",
                (key_name, self._clock.now(), name),
            )
            return True

    def delete(self, name: str) -> bool:
        """Delete an alias; False if there was none."""
        with self._session.transaction(write=True) as cursor:
            if not _exists(cursor, name):
                return False
            cursor.execute("DELETE FROM kms_aliases WHERE name = ?", (name,))
            return True

    def list(
        self,
        after: str | None,
        limit: int,
        key_name: str | None = None,
        scope: Scope | None = None,
    ) -> Sequence[KmsAlias]:
        """Up to `limit` aliases after `after`, by name; only `key_name`'s when given, and only
        those of keys within `scope` when given (where a token may read: the database skips
        the other tenants' aliases)."""
        query, args = f"SELECT {COLUMNS} FROM kms_aliases WHERE name > ?", [after or ""]
        if key_name is not None:
            query += " AND key_name = ?"
            args.append(key_name)
        if scope is not None:
            condition, condition_args = self._session.dialect.name_within(scope)
            query += f" AND key_name IN (SELECT name FROM keys WHERE {condition})"
            args.extend(condition_args)
        with self._session.transaction(write=False) as cursor:
            cursor.execute(f"{query} ORDER BY name LIMIT ?", (*args, limit))
            return [_alias(row) for row in cursor.fetchall()]


def _exists(cursor: Cursor, name: str) -> bool:
    cursor.execute("SELECT 1 FROM kms_aliases WHERE name = ?", (name,))
    return cursor.fetchone() is not None


def _require_key(cursor: Cursor, key_name: str) -> None:
    cursor.execute("SELECT 1 FROM keys WHERE name = ?", (key_name,))
    if cursor.fetchone() is None:
        raise KeyNotFoundError(key_name)


def _alias(row: tuple[Any, ...]) -> KmsAlias:
    name, key_name, created_at, updated_at = row
    return KmsAlias(name, key_name, created_at, updated_at)
