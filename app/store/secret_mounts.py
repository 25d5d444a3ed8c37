"""Secrets-engine mounts (Vault's `sys/mounts`): each a path under `/v1/` and the prefix that
makes its key names native key names. A disabled mount keeps its row, detached (no path), so
that its prefix is never handed to another mount while its keys wait for their deletion. A
mount's Transit `config/keys` document is kept by its accessor, so that the always-present
`transit`, which has no row, has one too, and a mount enabled again at a path starts afresh."""

import json
from collections.abc import Sequence
from dataclasses import astuple, replace
from typing import Any

from app.store import mount_migrations
from app.store.auth_state import advance, moves_generation
from app.store.database import Session
from app.store.errors import MountExistsError, MountNotFoundError
from app.store.records import MountMigration, SecretMount

# In the order of `SecretMount`'s fields, so that a row is its arguments.
COLUMNS = "accessor, path, type, key_prefix, description, created_at, former_path, detached_at"


class SecretMountRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    @moves_generation
    def add(self, mount: SecretMount, fixed: Sequence[str] = ()) -> None:
        """Store a new mount; `MountExistsError` if a mount is at its path, under it or over it
        (`fixed`: the paths of those that have no row). Each change of the mounts moves the
        auth generation: policies name mounts by path (`app.ops.grants.MountPrefixes`)."""
        try:
            with self._session.transaction(write=True) as cursor:
                mount_migrations.serialise(cursor, self._session.dialect.row_lock)
                mount_migrations.claim(cursor, "secret_mounts", mount.path or "", fixed)
                cursor.execute(
                    f"INSERT INTO secret_mounts ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    astuple(mount),
                )
                advance(cursor)
        except self._session.dialect.integrity_error:
            # Another replica took the path (or the prefix) between our check and our insert.
            raise MountExistsError(mount.path or "") from None

    def all(self) -> Sequence[SecretMount]:
        """Every mount, detached ones too, by creation."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(f"SELECT {COLUMNS} FROM secret_mounts ORDER BY created_at, accessor")
            return [SecretMount(*row) for row in cursor.fetchall()]

    def prefix_taken(self, prefix: str) -> bool:
        """Whether a mount, attached or detached, has this key prefix."""
        sql = "SELECT 1 FROM secret_mounts WHERE key_prefix = ?"
        return self._session.read_row(sql, (prefix,)) is not None

    @moves_generation
    def detach(self, path: str, when: float) -> SecretMount:
        """Free a mount's path, keeping its row and prefix; `MountNotFoundError` if no mount
        is at `path`."""
        with self._session.transaction(write=True) as cursor:
            mount_migrations.serialise(cursor, self._session.dialect.row_lock)
            advance(cursor)
            cursor.execute(f"SELECT {COLUMNS} FROM secret_mounts WHERE path = ?", (path,))
            row = cursor.fetchone()
            if row is None:
                raise MountNotFoundError(path)
            cursor.execute(
                "UPDATE secret_mounts SET path = NULL, former_path = ?, detached_at = ?"
                " WHERE accessor = ?",
                (path, when, row[0]),
            )
            cursor.execute(f"SELECT {COLUMNS} FROM secret_mounts WHERE accessor = ?", (row[0],))
            detached = cursor.fetchone()
            assert detached is not None
            return SecretMount(*detached)

    @moves_generation
    def move(
        self, path: str, target: str, migration: MountMigration, fixed: Sequence[str] = ()
    ) -> SecretMount:
        """Give the mount at `path` the path `target` and record the move. Its accessor and key
        prefix stay, and with them its keys, the scopes that name them and its `config/keys`.
        `MountNotFoundError` if no mount is at `path`, `MountExistsError` if one is at `target`,
        under it or over it (`fixed`: the paths of those that have no row)."""
        row = mount_migrations.move(
            self._session, "secret_mounts", COLUMNS, path, target, migration, fixed, advance
        )
        return replace(SecretMount(*row), path=target)

    def keys_config(self, accessor: str) -> dict[str, Any]:
        """The mount's settings (Transit's `config/keys` and `cache-config`) as last written;
        {} if they never were."""
        sql = "SELECT config FROM secret_mount_keys_config WHERE accessor = ?"
        row = self._session.read_row(sql, (accessor,))
        return {} if row is None else dict(json.loads(row[0]))

    def update_keys_config(self, accessor: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Set some of the mount's settings, the others kept, under the row's lock (two writes
        of different settings at once both hold); the settings as they now are."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "INSERT INTO secret_mount_keys_config (accessor, config) VALUES (?, '{}')"
                " ON CONFLICT (accessor) DO NOTHING",
                (accessor,),
            )
            cursor.execute(
                "SELECT config FROM secret_mount_keys_config WHERE accessor = ?"
                + self._session.dialect.row_lock,
                (accessor,),
            )
            row = cursor.fetchone()
            assert row is not None  # inserted above if it was not there
            config = {**json.loads(row[0]), **changes}
            cursor.execute(
                "UPDATE secret_mount_keys_config SET config = ? WHERE accessor = ?",
                (json.dumps(config, sort_keys=True), accessor),
            )
        return config
