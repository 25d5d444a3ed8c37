"""Wrapped answers (Vault's response wrapping): each kept by the SHA-256 of its single-use
wrapping token, sealed under the keyring's newest term as key material is, with the term
beside it, until it is unwrapped (taken and deleted in one transaction, so that only one
caller ever gets it) or expires."""

from typing import Any

from app.store.database import Cursor, Session, delete_expired
from app.store.keyring import Terms
from app.store.records import WrappedResponse

COLUMNS = "accessor, token_hash, creation_path, created_at, ttl_seconds, wrapped_accessor"
# The sealed answer's identity under its term: no key has version 0.
SEALED_TYPE = "wrapped-response"


class WrappedResponseRepository:
    def __init__(self, session: Session, terms: Terms) -> None:
        self._session = session
        self._terms = terms

    def add(self, wrapped: WrappedResponse, answer: bytes) -> None:
        """Keep `answer` sealed under the newest term until it is taken or expires."""
        with self._session.transaction(write=True) as cursor:
            term, wrapper = self._terms.current(cursor)
            cursor.execute(
                f"INSERT INTO wrapped_responses ({COLUMNS}, expires_at, term, sealed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    wrapped.accessor,
                    wrapped.token_hash,
                    wrapped.creation_path,
                    wrapped.created_at,
                    wrapped.ttl_seconds,
                    wrapped.wrapped_accessor,
                    wrapped.expires_at,
                    term,
                    wrapper.wrap(answer, wrapped.accessor, 0, SEALED_TYPE),
                ),
            )

    def lookup(self, token_hash: bytes, now: float) -> WrappedResponse | None:
        """What is known of a live wrapping token, without its answer."""
        row = self._session.read_row(
            f"SELECT {COLUMNS} FROM wrapped_responses WHERE token_hash = ? AND expires_at > ?",
            (token_hash, now),
        )
        return None if row is None else _wrapped(row)

    def take(self, token_hash: bytes, now: float) -> tuple[WrappedResponse, bytes] | None:
        """A live wrapping token's record and its answer, deleted as they are read; None if
        the token is unknown, used or expired."""
        with self._session.transaction(write=True) as cursor:
            cursor.execute(
                f"SELECT {COLUMNS}, term, sealed FROM wrapped_responses WHERE token_hash = ?"
                f"{self._session.dialect.row_lock}",
                (token_hash,),
            )
            row = cursor.fetchone()
            if row is None:
                return None
            cursor.execute("DELETE FROM wrapped_responses WHERE token_hash = ?", (token_hash,))
            wrapped = _wrapped(row[:6])
            if wrapped.expires_at <= now:
                return None
            answer = self._open(cursor, wrapped, int(row[6]), bytes(row[7]))
        return wrapped, answer

    def delete_expired(self, now: float, limit: int) -> int:
        """Drop up to `limit` expired wrapped answers (unwrapping refuses them already); how
        many."""
        with self._session.transaction(write=True) as cursor:
            due = "expires_at <= ?"
            return len(delete_expired(cursor, "wrapped_responses", "accessor", due, (now,), limit))

    def _open(self, cursor: Cursor, wrapped: WrappedResponse, term: int, sealed: bytes) -> bytes:
        return self._terms.wrapper(cursor, term).unwrap(sealed, wrapped.accessor, 0, SEALED_TYPE)


def _wrapped(row: tuple[Any, ...]) -> WrappedResponse:
    accessor, token_hash, creation_path, created_at, ttl_seconds, wrapped_accessor = row
    return WrappedResponse(
        accessor=accessor,
        token_hash=bytes(token_hash),
        creation_path=creation_path,
        created_at=created_at,
        ttl_seconds=ttl_seconds,
        wrapped_accessor=wrapped_accessor,
    )
