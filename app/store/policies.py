"""Named policies: a document of rules by name, its version counted by each change. A change
moves the auth generation on in its transaction (`app.store.auth_state`): every replica
resolves the policy anew on its next request."""

import json
from collections.abc import Sequence
from typing import Any

from app.store.auth_state import advance, moves_generation
from app.store.database import Session
from app.store.records import PolicyRecord

COLUMNS = "name, version, document, created_at, updated_at"


class PolicyRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    @moves_generation
    def put(self, name: str, document: dict[str, Any], when: float) -> PolicyRecord:
        """Create the policy `name`, or replace its document with the next version. One
        statement: two first writes of a name at once are a creation and a replacement, where a
        read then an insert let both insert (a lock on no row locks nothing)."""
        text = json.dumps(document, sort_keys=True, separators=(",", ":"))
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                f"INSERT INTO policies ({COLUMNS}) VALUES (?, 1, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET version = policies.version + 1,"
                " document = excluded.document, updated_at = excluded.updated_at"
                " RETURNING version, created_at",
                (name, text, when, when),
            )
            written = cursor.fetchone()
            assert written is not None  # an upsert returns its row
            version, created_at = written
            advance(cursor)
        return PolicyRecord(name, version, json.loads(text), created_at, when)

    def get(self, name: str) -> PolicyRecord | None:
        row = self._session.read_row(f"SELECT {COLUMNS} FROM policies WHERE name = ?", (name,))
        return None if row is None else _policy(row)

    def get_many(self, names: Sequence[str]) -> Sequence[PolicyRecord]:
        """The policies among `names` that exist."""
        if not names:
            return []
        with self._session.transaction(write=False) as cursor:
            marks = ", ".join("?" * len(names))
            cursor.execute(f"SELECT {COLUMNS} FROM policies WHERE name IN ({marks})", list(names))
            return [_policy(row) for row in cursor.fetchall()]

    def names(self) -> Sequence[str]:
        """Every policy's name, sorted."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute("SELECT name FROM policies ORDER BY name")
            return [row[0] for row in cursor.fetchall()]

    @moves_generation
    def delete(self, name: str) -> bool:
        """Delete a policy; False if there was none by that name."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute("SELECT 1 FROM policies WHERE name = ?", (name,))
            if cursor.fetchone() is None:
                return False
            cursor.execute("DELETE FROM policies WHERE name = ?", (name,))
            advance(cursor)
            return True


def _policy(row: tuple[Any, ...]) -> PolicyRecord:
    name, version, document, created_at, updated_at = row
    return PolicyRecord(name, version, json.loads(document), created_at, updated_at)
