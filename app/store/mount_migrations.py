"""Changes of the mount tables (`serialise`, `claim`), and mount moves (Vault's `sys/remount`),
kept for `sys/remount/status/:id`. A move is made and recorded by `move` in one transaction, so
that an id is never answered for a move that did not happen; a record is kept for a week, and
older ones go as a new one is written."""

from collections.abc import Callable, Sequence
from dataclasses import astuple
from typing import Any

from app.store.database import Cursor, Session
from app.store.errors import MountExistsError, MountNotFoundError
from app.store.records import MountMigration

KEPT_SECONDS = 7 * 24 * 3600
COLUMNS = "id, source, target, created_at"


def serialise(cursor: Cursor, row_lock: str) -> None:
    """Take the auth state's row for the rest of the transaction (SQLite's write transactions
    hold the whole database): every change of a mount table does so first, so that two at once
    cannot both find way for mounts one of which is under the other, nor move a mount another
    detaches."""
    cursor.execute("SELECT generation FROM auth_state WHERE id = 1" + row_lock)


def claim(cursor: Cursor, table: str, path: str, fixed: Sequence[str] = ()) -> None:
    """Make way for a mount at `path` in the mount `table` (`serialise`d): `MountExistsError`
    naming the path of a mount at it, under it or over it, the always-present ones at `fixed`
    (which have no row) among them."""
    cursor.execute(f"SELECT path FROM {table} WHERE path IS NOT NULL")
    for other in (*fixed, *(row[0] for row in cursor.fetchall())):
        if path == other or path.startswith(other + "/") or other.startswith(path + "/"):
            raise MountExistsError(other)


def move(
    session: Session,
    table: str,
    columns: str,
    path: str,
    target: str,
    migration: MountMigration,
    fixed: Sequence[str],
    then: Callable[[Cursor], None] = lambda cursor: None,
) -> tuple[Any, ...]:
    """Give the row of the mount `table` at `path` the path `target` (`claim`ed), do `then` and
    record the move, in one transaction; the row's `columns` as they were.
    `MountNotFoundError` if no row is at `path`, `MountExistsError` if `target` is not free."""
    try:
        with session.transaction(write=True) as cursor:
            serialise(cursor, session.dialect.row_lock)
            cursor.execute(f"SELECT {columns} FROM {table} WHERE path = ?", (path,))
            row = cursor.fetchone()
            if row is None:
                raise MountNotFoundError(path)
            claim(cursor, table, target, fixed)
            cursor.execute(f"UPDATE {table} SET path = ? WHERE accessor = ?", (target, row[0]))
            then(cursor)
            record(cursor, migration)
    except session.dialect.integrity_error:
        raise MountExistsError(target) from None
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
