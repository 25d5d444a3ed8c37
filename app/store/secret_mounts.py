"""Secrets-engine mounts (Vault's `sys/mounts`): each a path under `/v1/` and the prefix that
makes its key names native key names. A disabled mount keeps its row, detached (no path), so
that its prefix is never handed to another mount while its keys wait for their deletion."""

from collections.abc import Sequence
from dataclasses import astuple

from app.store.database import Session
from app.store.errors import MountExistsError, MountNotFoundError
from app.store.records import SecretMount

# In the order of `SecretMount`'s fields, so that a row is its arguments.
COLUMNS = "accessor, path, type, key_prefix, description, created_at, former_path, detached_at"


class SecretMountRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, mount: SecretMount) -> None:
        """Store a new mount; `MountExistsError` if its path is taken."""
        try:
            with self._session.transaction(write=True) as cursor:
                cursor.execute("SELECT 1 FROM secret_mounts WHERE path = ?", (mount.path,))
                if cursor.fetchone() is not None:
                    raise MountExistsError(mount.path or "")
                cursor.execute(
                    f"INSERT INTO secret_mounts ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    astuple(mount),
                )
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

    def detach(self, path: str, when: float) -> SecretMount:
        """Free a mount's path, keeping its row and prefix; `MountNotFoundError` if no mount
        is at `path`."""
        with self._session.transaction(write=True) as cursor:
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
