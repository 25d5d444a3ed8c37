"""The auth generation and the rotated admin token: one row every replica reads before it
trusts what it cached of tokens, policies and auth mounts (`app.ops.auth`).

Every change that narrows what a token may do moves the generation on in the transaction that
makes it (`advance`), so that a replica reading a newer generation drops its caches first.
The repository methods that do are marked `moves_generation`, which also counts each move in
this process (`Database.auth_moves`) once it has committed: this process's readers, which may
otherwise reuse a recent reading (`CIPHERD_AUTH_CHECK_SECONDS`), read it again at once.
"""

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from app.store.database import Cursor, Session
from app.store.errors import StoreUnavailableError
from app.store.records import AuthState


class _Repository(Protocol):
    _session: Session


RepositoryT = TypeVar("RepositoryT", bound=_Repository)
ArgsP = ParamSpec("ArgsP")
ResultT = TypeVar("ResultT")


def moves_generation(
    method: Callable[Concatenate[RepositoryT, ArgsP], ResultT],
) -> Callable[Concatenate[RepositoryT, ArgsP], ResultT]:
    """A repository method that may move the generation on (`advance`): once it has returned,
    its transaction committed (or, inside a held one, once that commits), the move is counted
    in this process."""

    @functools.wraps(method)
    def counted(repository: RepositoryT, *args: ArgsP.args, **kwargs: ArgsP.kwargs) -> ResultT:
        result = method(repository, *args, **kwargs)
        repository._session.generation_moved()
        return result

    return counted


def advance(cursor: Cursor) -> None:
    """Move the generation on, inside the caller's write transaction."""
    cursor.execute("UPDATE auth_state SET generation = generation + 1 WHERE id = 1")


class AuthStateRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def read(self) -> AuthState:
        """The generation and the rotated admin token's hash."""
        return _read(self._session)

    def read_at_once(self) -> AuthState | None:
        """`read`, made here and now without waiting, where the store allows it (`at_once`);
        else, or if the store is busy, None: then `read` it in a thread."""
        session = self._session.at_once()
        if session is None:
            return None
        try:
            return _read(session)
        except StoreUnavailableError:
            return None

    @moves_generation
    def advance(self) -> None:
        """Move the generation on: what every replica cached of tokens, policies and auth
        mounts is dropped before its next request."""
        with self._session.transaction(write=True) as cursor:
            advance(cursor)

    @moves_generation
    def set_admin_token_hash(self, token_hash: bytes, replacing: bytes | None) -> bool:
        """Replace the admin token (by its SHA-256) if the store still holds `replacing` (None:
        none yet, the configured one serves); False (nothing changed) if another replaced it.
        The former one is refused everywhere from the next request."""
        with self._session.transaction(write=True) as cursor:
            row_lock = self._session.dialect.row_lock
            cursor.execute(f"SELECT admin_token_hash FROM auth_state WHERE id = 1{row_lock}")
            row = cursor.fetchone()
            held = None if row is None or row[0] is None else bytes(row[0])
            if held != replacing:
                return False
            cursor.execute("UPDATE auth_state SET admin_token_hash = ? WHERE id = 1", (token_hash,))
            advance(cursor)
            return True


def _read(session: Session) -> AuthState:
    row = session.read_row("SELECT generation, admin_token_hash FROM auth_state WHERE id = 1")
    assert row is not None  # the schema's creation inserts it
    return AuthState(row[0], None if row[1] is None else bytes(row[1]))
