"""The roles of login methods that keep their roles as settings alone: JWT roles
(`auth/<mount>/role/:name`) and certificate rules (`auth/<mount>/certs/:name`), each a JSON
object of Vault's fields under its mount's accessor and its name. Keyed by the accessor, not the
path: a mount enabled again at a path starts with no roles.

Every change of a mount's roles moves its revision on (`auth_role_revisions`), in the
transaction that makes it: a reader that keeps what it made of the roles (`app.ops.cert_auth`)
reads the revision, one row, to know whether that is still current on every replica."""

import json
from collections.abc import Callable, Sequence
from typing import Any

from app.store.database import Cursor, Session


class AuthRoleRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def put(self, mount: str, name: str, settings: dict[str, Any], most: int) -> bool:
        """Store a role, replacing one of that name; False (nothing stored) if it is new and
        its mount holds `most` already."""
        return self.write(mount, name, lambda _: settings, most) is not None

    def write(
        self,
        mount: str,
        name: str,
        change: Callable[[dict[str, Any] | None], dict[str, Any]],
        most: int,
    ) -> dict[str, Any] | None:
        """Store `change(the role as stored, or None)`: what was stored, or None (nothing
        stored) if the role is new and its mount holds `most` already. A mount's role writes
        are made one at a time, so that none is lost to another made at once and the bound
        holds."""
        with self._session.transaction(write=True) as cursor:
            self._session.dialect.lock_name(cursor, f"auth roles of {mount}")
            cursor.execute(
                "SELECT settings FROM auth_roles WHERE mount = ? AND name = ?", (mount, name)
            )
            current = cursor.fetchone()
            settings = change(None if current is None else json.loads(current[0]))
            body = json.dumps(settings, sort_keys=True)
            if current is None:
                cursor.execute("SELECT COUNT(*) FROM auth_roles WHERE mount = ?", (mount,))
                row = cursor.fetchone()
                if row is not None and row[0] >= most:
                    return None
                cursor.execute(
                    "INSERT INTO auth_roles (mount, name, settings) VALUES (?, ?, ?)",
                    (mount, name, body),
                )
            else:
                cursor.execute(
                    "UPDATE auth_roles SET settings = ? WHERE mount = ? AND name = ?",
                    (body, mount, name),
                )
            _moved_on(cursor, mount)
            return settings

    def get(self, mount: str, name: str) -> dict[str, Any] | None:
        row = self._session.read_row(
            "SELECT settings FROM auth_roles WHERE mount = ? AND name = ?", (mount, name)
        )
        return None if row is None else json.loads(row[0])

    def names(self, mount: str) -> Sequence[str]:
        with self._session.transaction(write=False) as cursor:
            cursor.execute("SELECT name FROM auth_roles WHERE mount = ? ORDER BY name", (mount,))
            return [row[0] for row in cursor.fetchall()]

    def all(self, mount: str) -> dict[str, dict[str, Any]]:
        """Every role of a mount, by name."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute("SELECT name, settings FROM auth_roles WHERE mount = ?", (mount,))
            return {row[0]: json.loads(row[1]) for row in cursor.fetchall()}

    def delete(self, mount: str, name: str) -> None:
        """Remove a role (nothing if there is none, which Vault answers as a success too)."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute("DELETE FROM auth_roles WHERE mount = ? AND name = ?", (mount, name))
            _moved_on(cursor, mount)

    def revision(self, mount: str) -> int:
        """The revision of a mount's roles: 0 before their first change, then moved on by each."""
        row = self._session.read_row(
            "SELECT revision FROM auth_role_revisions WHERE mount = ?", (mount,)
        )
        return 0 if row is None else int(row[0])


def _moved_on(cursor: Cursor, mount: str) -> None:
    cursor.execute(
        "INSERT INTO auth_role_revisions (mount, revision) VALUES (?, 1)"
        " ON CONFLICT (mount) DO UPDATE SET revision = auth_role_revisions.revision + 1",
        (mount,),
    )
