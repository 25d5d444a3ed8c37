"""Auth methods mounted under /v1/auth/ (Vault's `sys/auth`): a path, a type and the method's
settings. Enabling or disabling one moves the auth generation on (`app.store.auth_state`), so
that every replica routes logins by the new table from its next request."""

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from app.store import mount_migrations
from app.store.auth_state import advance, moves_generation
from app.store.database import Cursor, Session
from app.store.errors import MountExistsError, MountNotFoundError
from app.store.records import AuthMount, MountMigration
from app.store.tokens import revoke_tree

COLUMNS = "accessor, path, type, description, config, created_at"


class AuthMountRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    @moves_generation
    def add(self, mount: AuthMount, fixed: Sequence[str] = ()) -> None:
        """Store a new mount; `MountExistsError` if a mount is at its path, under it or over it
        (`fixed`: the paths of those that have no row)."""
        try:
            with self._session.transaction(write=True) as cursor:
                mount_migrations.serialise(cursor, self._session.dialect.row_lock)
                mount_migrations.claim(cursor, "auth_mounts", mount.path, fixed)
                cursor.execute(
                    f"INSERT INTO auth_mounts ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        mount.accessor,
                        mount.path,
                        mount.type,
                        mount.description,
                        json.dumps(mount.config),
                        mount.created_at,
                    ),
                )
                advance(cursor)
        except self._session.dialect.integrity_error:
            raise MountExistsError(mount.path) from None

    def all(self) -> Sequence[AuthMount]:
        """Every mount, by creation."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(f"SELECT {COLUMNS} FROM auth_mounts ORDER BY created_at, accessor")
            return [_mount(row) for row in cursor.fetchall()]

    @moves_generation
    def configure(self, path: str, config: dict[str, Any]) -> AuthMount:
        """Replace the settings of the mount at `path` (`MountNotFoundError` if none)."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "UPDATE auth_mounts SET config = ? WHERE path = ?", (json.dumps(config), path)
            )
            cursor.execute(f"SELECT {COLUMNS} FROM auth_mounts WHERE path = ?", (path,))
            row = cursor.fetchone()
            if row is None:
                raise MountNotFoundError(path)
            advance(cursor)
            return _mount(row)

    @moves_generation
    def move(
        self, path: str, target: str, migration: MountMigration, fixed: Sequence[str] = ()
    ) -> AuthMount:
        """Give the method at `path` the path `target`, revoke every token it issued (as Vault
        does on a move) and record the move; its roles and settings stay, being its accessor's.
        `MountNotFoundError` if no method is at `path`, `MountExistsError` if one is at `target`,
        under it or over it (`fixed`: the paths of those that have no row)."""

        row_lock = self._session.dialect.row_lock

        def revoke_issued(cursor: Cursor) -> None:
            cursor.execute("SELECT id FROM tokens WHERE mount = ?", (path,))
            revoke_tree(cursor, [token[0] for token in cursor.fetchall()], row_lock)
            advance(cursor)

        row = mount_migrations.move(
            self._session, "auth_mounts", COLUMNS, path, target, migration, fixed, revoke_issued
        )
        return replace(_mount(row), path=target)

    @moves_generation
    def remove(self, path: str) -> AuthMount:
        """Unmount the method at `path`, delete its roles (`auth_roles`) and revoke every token
        it issued, with their children (`MountNotFoundError` if none)."""
        with self._session.transaction(write=True) as cursor:
            mount_migrations.serialise(cursor, self._session.dialect.row_lock)
            cursor.execute(f"SELECT {COLUMNS} FROM auth_mounts WHERE path = ?", (path,))
            row = cursor.fetchone()
            if row is None:
                raise MountNotFoundError(path)
            cursor.execute("DELETE FROM auth_mounts WHERE path = ?", (path,))
            cursor.execute("DELETE FROM auth_roles WHERE mount = ?", (row[0],))
            cursor.execute("DELETE FROM auth_role_revisions WHERE mount = ?", (row[0],))
            cursor.execute("SELECT id FROM tokens WHERE mount = ?", (path,))
            revoke_tree(
                cursor, [row[0] for row in cursor.fetchall()], self._session.dialect.row_lock
            )
            advance(cursor)
            return _mount(row)


def _mount(row: tuple[Any, ...]) -> AuthMount:
    accessor, path, type_, description, config, created_at = row
    return AuthMount(accessor, path, type_, description, json.loads(config), created_at)
