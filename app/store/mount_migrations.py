"""Mount moves (Vault's `sys/remount`), kept for `sys/remount/status/:id`. A move is made by
`move_row` and recorded by `record` in one transaction, so that an id is never answered for a
move that did not happen; a record is kept for a week, and older ones go as a new one is
written."""

from dataclasses import astuple
from typing import Any

from app.store.database import Cursor, Session
from app.store.errors import MountExistsError, MountNotFoundError
from app.store.records import MountMigration

KEPT_SECONDS = 7 * 24 * 3600
COLUMNS = "id, source, target, created_at"


def move_row(cursor: Cursor, table: str, columns: str, path: str, target: str) -> tuple[Any, ...]:
    """Give the row of the mount `table` at `path` the path `target`; its `columns` as they were.
    `MountNotFoundError` if no row is at `path`, `MountExistsError` if one is at `target`."""
    cursor.execute(f"SELECT {columns} FROM {table} WHERE path = ?", (path,))
    row = cursor.fetchone()
    if row is None:
        raise MountNotFoundError(path)
    cursor.execute(f"SELECT 1 FROM {table} WHERE path = ?", (target,))
    if cursor.fetchone() is not None:
        raise MountExistsError(target)
    cursor.execute(f"UPDATE {table} SET path = ? WHERE accessor = ?", (target, row[0]))
    return tuple(row)


def record(cursor: Cursor, migration: MountMigration) -> None:
    cursor.execute(
        "DELETE FROM mount_migrations WHERE created_at < ?",
        (migration.created_at - KEPT_SECONDS,),
    )
    cursor.execute(
        f"INSERT INTO mount_migrations ({COLUMNS}) VALUES (?, ?, ?, ?)", astuple(migration)
    )


class MountMigrationRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, migration_id: str) -> MountMigration | None:
        sql = f"SELECT {COLUMNS} FROM mount_migrations WHERE id = ?"
        row = self._session.read_row(sql, (migration_id,))
        return None if row is None else MountMigration(*row)
