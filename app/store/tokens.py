"""Tokens, kept by the SHA-256 of the token: the token itself is never stored.

A revocation takes the token's children with it (the tokens made with it, and theirs), and
moves the auth generation on in the same transaction (`app.store.auth_state`), so that every
replica drops what it cached of them before its next request.
"""

import json
from collections.abc import Sequence
from typing import Any

from app.store.auth_state import advance, moves_generation
from app.store.database import Cursor, Session, delete_expired
from app.store.errors import MountNotFoundError, ParentTokenNotFoundError, TokenExistsError
from app.store.pages import read_weighed
from app.store.records import TokenRecord

COLUMNS = (
    "id, token_hash, description, key_patterns, operations, created_at, expires_at,"
    " rate_per_second, policies, parent_id, ttl_seconds, explicit_max_seconds, max_expires_at,"
    " period_seconds, renewable, uses_left, metadata, method, mount, role, identity, path,"
    " renewed_at, bound_cidrs"
)
# How deep a tree of child tokens a revocation follows (each level one query).
MAX_DEPTH = 64


class TokenRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, token: TokenRecord, mounted: str | None = None) -> None:
        """Store a token; `TokenExistsError` if one of the same value is stored. `mounted`: the
        path of the auth method that issues it, which must still be there
        (`MountNotFoundError`): a move or a disable that revokes the method's tokens then waits
        for this one, or this one for it."""
        share_lock = self._session.dialect.share_lock
        try:
            with self._session.transaction(write=True) as cursor:
                if mounted is not None:
                    cursor.execute(
                        "SELECT 1 FROM auth_mounts WHERE path = ?" + share_lock, (mounted,)
                    )
                    if cursor.fetchone() is None:
                        raise MountNotFoundError(mounted)
                if token.parent_id is not None:
                    cursor.execute(
                        "SELECT 1 FROM tokens WHERE id = ?" + share_lock, (token.parent_id,)
                    )
                    if cursor.fetchone() is None:
                        raise ParentTokenNotFoundError(token.parent_id)
                cursor.execute(
                    f"INSERT INTO tokens ({COLUMNS}) VALUES ({', '.join('?' * 24)})",
                    (
                        token.id,
                        token.token_hash,
                        token.description,
                        json.dumps(list(token.key_patterns)),
                        json.dumps(list(token.operations)),
                        token.created_at,
                        token.expires_at,
                        token.rate_per_second,
                        json.dumps(list(token.policies)),
                        token.parent_id,
                        token.ttl_seconds,
                        token.explicit_max_seconds,
                        token.max_expires_at,
                        token.period_seconds,
                        int(token.renewable),
                        token.uses_left,
                        json.dumps(token.metadata),
                        token.method,
                        token.mount,
                        token.role,
                        token.identity,
                        token.path,
                        token.renewed_at,
                        json.dumps(list(token.bound_cidrs)),
                    ),
                )
        except self._session.dialect.integrity_error:
            raise TokenExistsError from None

    def by_hash(self, token_hash: bytes) -> TokenRecord | None:
        """The token whose SHA-256 is `token_hash`, if any."""
        row = self._session.read_row(
            f"SELECT {COLUMNS} FROM tokens WHERE token_hash = ?", (token_hash,)
        )
        return None if row is None else token_of(row)

    def by_id(self, token_id: str) -> TokenRecord | None:
        """The token whose id (its accessor) is `token_id`, if any."""
        row = self._session.read_row(f"SELECT {COLUMNS} FROM tokens WHERE id = ?", (token_id,))
        return None if row is None else token_of(row)

    def ancestors(self, token_id: str) -> int:
        """How many tokens stand above `token_id` and it (its parent's, its parent's parent's,
        ...), counted up to MAX_DEPTH + 1: a revocation reaches MAX_DEPTH levels down."""
        count, current = 0, token_id
        with self._session.transaction(write=False) as cursor:
            while count <= MAX_DEPTH:
                cursor.execute("SELECT parent_id FROM tokens WHERE id = ?", (current,))
                row = cursor.fetchone()
                if row is None:
                    return count
                count += 1
                if row[0] is None:
                    return count
                current = row[0]
        return count

    def page(self, after: str | None, limit: int) -> tuple[Sequence[TokenRecord], bool]:
        """Up to `limit` tokens with an id past `after` (from the first when None), in id
        order, ending early at PAGE_BYTES of their patterns, policies and metadata; and whether
        tokens follow. Keyset paging: tokens issued or revoked meanwhile shift no page."""
        with self._session.transaction(write=False) as cursor:
            rows, more = read_weighed(
                cursor,
                self._session.dialect,
                COLUMNS,
                "(key_patterns || policies || metadata)",
                "FROM tokens WHERE id > ? ORDER BY id",
                ("" if after is None else after,),
                limit,
            )
        return [token_of(row) for row in rows], more

    def renew(self, token_id: str, expires_at: float, when: float) -> TokenRecord | None:
        """Set a token's expiry, renewed at `when`; None if there is no such token."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "UPDATE tokens SET expires_at = ?, renewed_at = ? WHERE id = ?",
                (expires_at, when, token_id),
            )
            cursor.execute(f"SELECT {COLUMNS} FROM tokens WHERE id = ?", (token_id,))
            row = cursor.fetchone()
        return None if row is None else token_of(row)

    @moves_generation
    def use(self, token_id: str) -> int | None:
        """Spend one of a use-limited token's uses: how many are left (None if it is gone). A
        token is revoked (with its children) in the transaction that spends its last use, so
        none is ever stored with no use left."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "UPDATE tokens SET uses_left = uses_left - 1 WHERE id = ? AND uses_left > 0",
                (token_id,),
            )
            cursor.execute("SELECT uses_left FROM tokens WHERE id = ?", (token_id,))
            row = cursor.fetchone()
            if row is None:
                return None
            left: int = row[0]
            if left == 0:
                revoke_tree(cursor, [token_id], self._session.dialect.row_lock)
                advance(cursor)
            return left

    @moves_generation
    def delete(self, token_id: str) -> Sequence[str]:
        """Revoke a token and its children, theirs too: the ids revoked (empty if there was no
        token with that id)."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute("SELECT 1 FROM tokens WHERE id = ?", (token_id,))
            if cursor.fetchone() is None:
                return []
            revoked = revoke_tree(cursor, [token_id], self._session.dialect.row_lock)
            advance(cursor)
            return revoked

    @moves_generation
    def delete_orphaning(self, token_id: str) -> bool:
        """Revoke one token and make its children orphans (Vault's revoke-orphan); False if
        there was no such token."""
        with self._session.transaction(write=True) as cursor:
            # Held until the end, so that no child is stored under it meanwhile (`add`).
            row_lock = self._session.dialect.row_lock
            cursor.execute("SELECT 1 FROM tokens WHERE id = ?" + row_lock, (token_id,))
            if cursor.fetchone() is None:
                return False
            cursor.execute("UPDATE tokens SET parent_id = NULL WHERE parent_id = ?", (token_id,))
            cursor.execute("DELETE FROM tokens WHERE id = ?", (token_id,))
            advance(cursor)
            return True

    @moves_generation
    def delete_under(self, prefix: str, limit: int) -> Sequence[str]:
        """Revoke up to `limit` tokens made at a path under `prefix` (which ends in `/`:
        `auth/approle/` holds those made at `auth/approle/login`), with their children, theirs
        too: the ids revoked (empty when none is left)."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                "SELECT id FROM tokens WHERE substr(path || '/', 1, ?) = ? LIMIT ?",
                (len(prefix), prefix, limit),
            )
            roots = [row[0] for row in cursor.fetchall()]
            if not roots:
                return []
            revoked = revoke_tree(cursor, roots, self._session.dialect.row_lock)
            advance(cursor)
            return revoked

    def delete_expired(self, before: float, limit: int) -> int:
        """Drop up to `limit` tokens that expired before `before`; how many. An expired token
        is refused already: this only frees its row (its children live on as orphans)."""
        with self._session.transaction(write=True) as cursor:
            due = "expires_at IS NOT NULL AND expires_at < ?"
            ids = delete_expired(cursor, "tokens", "id", due, (before,), limit)
            if ids:
                marks = ", ".join("?" * len(ids))
                cursor.execute(
                    f"UPDATE tokens SET parent_id = NULL WHERE parent_id IN ({marks})", ids
                )
            return len(ids)


def revoke_tree(cursor: Cursor, roots: list[str], row_lock: str) -> list[str]:
    """Delete tokens `roots` and every descendant of theirs; the ids deleted.

    Each level is locked (`row_lock`) before its children are read, as `add` holds a child's
    parent until the child is stored: a child stored under one of them meanwhile was committed
    before the lock was granted and is read with its level, and one stored after waits for this
    transaction and then finds its parent gone. No child is left under a revoked token."""
    revoked, level = list(roots), list(roots)
    if roots and row_lock:
        cursor.execute(
            f"SELECT id FROM tokens WHERE id IN ({', '.join('?' * len(roots))}){row_lock}", roots
        )
    for _ in range(MAX_DEPTH):
        if not level:
            break
        marks = ", ".join("?" * len(level))
        cursor.execute(f"SELECT id FROM tokens WHERE parent_id IN ({marks}){row_lock}", level)
        level = [row[0] for row in cursor.fetchall()]
        revoked.extend(level)
    for start in range(0, len(revoked), 500):
        chunk = revoked[start : start + 500]
        cursor.execute(f"DELETE FROM tokens WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
    return revoked


def token_of(row: tuple[Any, ...]) -> TokenRecord:
    return TokenRecord(
        id=row[0],
        token_hash=bytes(row[1]),
        description=row[2],
        key_patterns=tuple(json.loads(row[3])),
        operations=tuple(json.loads(row[4])),
        created_at=row[5],
        expires_at=row[6],
        rate_per_second=row[7],
        policies=tuple(json.loads(row[8])),
        parent_id=row[9],
        ttl_seconds=row[10],
        explicit_max_seconds=row[11],
        max_expires_at=row[12],
        period_seconds=row[13],
        renewable=bool(row[14]),
        uses_left=row[15],
        metadata=json.loads(row[16]),
        method=row[17],
        mount=row[18],
        role=row[19],
        identity=row[20],
        path=row[21],
        renewed_at=row[22],
        bound_cidrs=tuple(json.loads(row[23])),
    )
