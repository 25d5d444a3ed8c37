"""AppRole roles and their secret ids, per auth mount (by the mount's accessor).

A secret id is kept only as its HMAC-SHA-256 under its role's key: a login finds it by that,
and nothing stored gives it back. Spending a use of a limited secret id and deleting it at its
last use are one transaction, so that two replicas cannot both spend the last one.
"""

import json
from collections.abc import Callable, Sequence
from typing import Any

from app.store.database import Cursor, Session, delete_expired
from app.store.records import AppRole, SecretId

ROLE_COLUMNS = "mount, name, role_id, settings, hmac_key, created_at, updated_at"
SECRET_COLUMNS = (
    "accessor, mount, role, secret_hash, uses_left, ttl_seconds, expires_at, metadata,"
    " cidr_list, token_bound_cidrs, created_at, updated_at"
)


class AppRoleRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def put_role(
        self, mount: str, name: str, change: Callable[[AppRole | None], AppRole], max_roles: int
    ) -> tuple[str, AppRole]:
        """Store `change(the role as stored, or None)`, new or changed, the mount's role writes
        one at a time, so that none is lost to another made at once and the bound holds: "ok";
        "role-id-taken" if another role of the mount has its role id; "full" if the mount has
        `max_roles` roles already and this one is new. With the role `change` made."""
        with self._session.transaction(write=True) as cursor:
            self._session.dialect.lock_name(cursor, f"approle roles of {mount}")
            cursor.execute(
                f"SELECT {ROLE_COLUMNS} FROM approle_roles WHERE mount = ? AND name = ?",
                (mount, name),
            )
            current = cursor.fetchone()
            role = change(None if current is None else _role(current))
            cursor.execute(
                "SELECT name FROM approle_roles WHERE mount = ? AND role_id = ?",
                (mount, role.role_id),
            )
            holder = cursor.fetchone()
            if holder is not None and holder[0] != name:
                return "role-id-taken", role
            if current is not None:
                cursor.execute(
                    "UPDATE approle_roles SET role_id = ?, settings = ?, updated_at = ?"
                    " WHERE mount = ? AND name = ?",
                    (role.role_id, json.dumps(role.settings), role.updated_at, mount, name),
                )
                return "ok", role
            if _count(cursor, "approle_roles WHERE mount = ?", mount) >= max_roles:
                return "full", role
            cursor.execute(
                f"INSERT INTO approle_roles ({ROLE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    mount,
                    name,
                    role.role_id,
                    json.dumps(role.settings),
                    role.hmac_key,
                    role.created_at,
                    role.updated_at,
                ),
            )
            return "ok", role

    def role(self, mount: str, name: str) -> AppRole | None:
        return self._role_where("name", mount, name)

    def role_by_id(self, mount: str, role_id: str) -> AppRole | None:
        return self._role_where("role_id", mount, role_id)

    def _role_where(self, column: str, mount: str, value: str) -> AppRole | None:
        """The mount's role whose `column` (a unique one) is `value`."""
        row = self._session.read_row(
            f"SELECT {ROLE_COLUMNS} FROM approle_roles WHERE mount = ? AND {column} = ?",
            (mount, value),
        )
        return None if row is None else _role(row)

    def role_names(self, mount: str) -> Sequence[str]:
        with self._session.transaction(write=False) as cursor:
            cursor.execute("SELECT name FROM approle_roles WHERE mount = ? ORDER BY name", (mount,))
            return [row[0] for row in cursor.fetchall()]

    def delete_role(self, mount: str, name: str) -> bool:
        """Delete a role and its secret ids; False if there was no such role. The role's row is
        locked first, as a secret id's creation locks it: one made at once is either deleted
        with the role or refused, never left behind."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "SELECT 1 FROM approle_roles WHERE mount = ? AND name = ?"
                f"{self._session.dialect.row_lock}",
                (mount, name),
            )
            found = cursor.fetchone() is not None
            cursor.execute(
                "DELETE FROM approle_secret_ids WHERE mount = ? AND role = ?", (mount, name)
            )
            if not found:
                return False
            cursor.execute("DELETE FROM approle_roles WHERE mount = ? AND name = ?", (mount, name))
            return True

    def delete_mount(self, mount: str) -> None:
        """Forget every role and secret id of a mount (disabled)."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute("DELETE FROM approle_secret_ids WHERE mount = ?", (mount,))
            cursor.execute("DELETE FROM approle_roles WHERE mount = ?", (mount,))

    def add_secret_id(self, secret: SecretId, max_per_role: int) -> str:
        """Store a secret id of an existing role: "ok"; "exists" if the role has this secret
        id already; "full" if it has `max_per_role` live ones; "no-role" if the role is gone."""
        try:
            with self._session.transaction(write=True) as cursor:
                cursor.execute(
                    f"SELECT 1 FROM approle_roles WHERE mount = ? AND name = ?"
                    f"{self._session.dialect.row_lock}",
                    (secret.mount, secret.role),
                )
                if cursor.fetchone() is None:
                    return "no-role"
                cursor.execute(
                    "SELECT 1 FROM approle_secret_ids WHERE mount = ? AND role = ?"
                    " AND secret_hash = ?",
                    (secret.mount, secret.role, secret.secret_hash),
                )
                if cursor.fetchone() is not None:
                    return "exists"
                cursor.execute(
                    "DELETE FROM approle_secret_ids WHERE mount = ? AND role = ?"
                    " AND expires_at IS NOT NULL AND expires_at <= ?",
                    (secret.mount, secret.role, secret.created_at),
                )
                held = _count(
                    cursor, "approle_secret_ids WHERE mount = ? AND role = ?", *_of(secret)
                )
                if held >= max_per_role:
                    return "full"
                cursor.execute(
                    f"INSERT INTO approle_secret_ids ({SECRET_COLUMNS})"
                    f" VALUES ({', '.join('?' * 12)})",
                    (
                        secret.accessor,
                        secret.mount,
                        secret.role,
                        secret.secret_hash,
                        secret.uses_left,
                        secret.ttl_seconds,
                        secret.expires_at,
                        json.dumps(secret.metadata),
                        json.dumps(list(secret.cidr_list)),
                        json.dumps(list(secret.token_bound_cidrs)),
                        secret.created_at,
                        secret.updated_at,
                    ),
                )
                return "ok"
        except self._session.dialect.integrity_error:
            return "exists"

    def secret_id(
        self, mount: str, role: str, *, secret_hash: bytes | None = None, accessor: str = ""
    ) -> SecretId | None:
        """A role's secret id by its HMAC or by its accessor."""
        column, value = ("secret_hash", secret_hash) if secret_hash else ("accessor", accessor)
        row = self._session.read_row(
            f"SELECT {SECRET_COLUMNS} FROM approle_secret_ids"
            f" WHERE mount = ? AND role = ? AND {column} = ?",
            (mount, role, value),
        )
        return None if row is None else _secret(row)

    def accessors(self, mount: str, role: str, now: float) -> Sequence[str]:
        """The accessors of a role's secret ids that have not expired."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(
                "SELECT accessor FROM approle_secret_ids WHERE mount = ? AND role = ?"
                " AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, accessor",
                (mount, role, now),
            )
            return [row[0] for row in cursor.fetchall()]

    def delete_secret_id(self, mount: str, role: str, accessor: str) -> bool:
        """Destroy a secret id; False if the role had none with that accessor."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "SELECT 1 FROM approle_secret_ids WHERE mount = ? AND role = ? AND accessor = ?",
                (mount, role, accessor),
            )
            if cursor.fetchone() is None:
                return False
            cursor.execute("DELETE FROM approle_secret_ids WHERE accessor = ?", (accessor,))
            return True

    def spend(self, mount: str, role: str, secret_hash: bytes, now: float) -> SecretId | None:
        """Use a secret id once: the secret id as it was, or None if it is unknown, expired
        (then deleted) or used up. A limited one loses a use, and is deleted with its last."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                f"SELECT {SECRET_COLUMNS} FROM approle_secret_ids"
                " WHERE mount = ? AND role = ? AND secret_hash = ?"
                f"{self._session.dialect.row_lock}",
                (mount, role, secret_hash),
            )
            row = cursor.fetchone()
            if row is None:
                return None
            secret = _secret(row)
            if secret.expires_at is not None and secret.expires_at <= now:
                cursor.execute(
                    "DELETE FROM approle_secret_ids WHERE accessor = ?", (secret.accessor,)
                )
                return None
            if secret.uses_left == 1:
                cursor.execute(
                    "DELETE FROM approle_secret_ids WHERE accessor = ?", (secret.accessor,)
                )
            elif secret.uses_left > 1:
                cursor.execute(
                    "UPDATE approle_secret_ids SET uses_left = uses_left - 1, updated_at = ?"
                    " WHERE accessor = ?",
                    (now, secret.accessor),
                )
            return secret

    def delete_expired(self, now: float, limit: int) -> int:
        """Drop up to `limit` secret ids that have expired (a login refuses them already);
        how many."""
        with self._session.transaction(write=True) as cursor:
            due = "expires_at IS NOT NULL AND expires_at <= ?"
            return len(delete_expired(cursor, "approle_secret_ids", "accessor", due, (now,), limit))


def _of(secret: SecretId) -> tuple[str, str]:
    return secret.mount, secret.role


def _count(cursor: Cursor, where: str, *params: Any) -> int:
    cursor.execute(f"SELECT COUNT(*) FROM {where}", params)
    row = cursor.fetchone()
    return int(row[0]) if row is not None else 0


def _role(row: tuple[Any, ...]) -> AppRole:
    mount, name, role_id, settings, hmac_key, created_at, updated_at = row
    return AppRole(
        mount=mount,
        name=name,
        role_id=role_id,
        settings=json.loads(settings),
        hmac_key=bytes(hmac_key),
        created_at=created_at,
        updated_at=updated_at,
    )


def _secret(row: tuple[Any, ...]) -> SecretId:
    return SecretId(
        accessor=row[0],
        mount=row[1],
        role=row[2],
        secret_hash=bytes(row[3]),
        uses_left=row[4],
        ttl_seconds=row[5],
        expires_at=row[6],
        metadata=json.loads(row[7]),
        cidr_list=tuple(json.loads(row[8])),
        token_bound_cidrs=tuple(json.loads(row[9])),
        created_at=row[10],
        updated_at=row[11],
    )
