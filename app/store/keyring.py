"""The key hierarchy: the root key wraps a keyring of data-encryption keys, one per term, kept in
the store; every key version is wrapped under one term.

Rotating the root key rewraps only the keyring (a few rows); rotating the keyring adds a term that
new writes use, and a rewrap moves older versions onto it while every older term still unwraps.
Each process holds the terms it has unwrapped (`Terms`), so it keeps serving while the root key
changes, and needs the root key only for a term it has not seen yet; when that term does not
open under the root key it holds, it asks its root key source again (the file was replaced, say).

A store remembers its root key by a check value wrapped under it, and opens under no other: a
process started with the wrong root key would otherwise serve 500s on every stored key and,
worse, add versions no other process can read. A store whose versions are wrapped directly under
the root key (made before the keyring existed) is moved onto the first term when it is opened.
"""

import logging
import os
import threading
from collections.abc import Callable

from app.store.clock import Clock
from app.store.database import Cursor, Session
from app.store.errors import RootKeyMismatchError, UnwrapError
from app.store.records import KeyringStatus, RootKey, RootKeyLoader
from app.store.wrapping import KeyWrapper

log = logging.getLogger("cipherd.keystore")

TERM_KEY_BYTES = 32
# A term's wrapping identity under the root key: no key has an empty name.
TERM_TYPE = "keyring-term"
# The check value, and its wrapping identity: no key has an empty name or version 0.
ROOT_KEY_CHECK = b"cipherd root key check"
ROOT_KEY_CHECK_IDENTITY = ("", 0, "root-key-check")


def opens(root: RootKey, blob: bytes, name: str, version: int, key_type: str) -> bool:
    try:
        root.unwrap(blob, name, version, key_type)
    except UnwrapError:
        return False
    return True


def _newest_term(cursor: Cursor) -> int:
    cursor.execute("SELECT MAX(term) FROM keyring")
    row = cursor.fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


class Terms:
    """This process's root key and the keyring's terms it has unwrapped, shared by every
    repository of a store; each method works inside the caller's transaction."""

    def __init__(self, load_root: RootKeyLoader, clock: Clock) -> None:
        self._load_root = load_root
        self._clock = clock
        self.root = load_root()
        self._terms: dict[int, KeyWrapper] = {}
        self._lock = threading.Lock()
        self._checked = b""  # the stored check value last found to open under `root`

    def open(self, cursor: Cursor) -> None:
        """On opening a store: the check that the root key is its own (recorded if the store
        has none yet), a first term for a new store, and versions from before the keyring moved
        onto the newest term."""
        cursor.execute("SELECT 1 FROM root_key_check WHERE id = 1")
        if cursor.fetchone() is not None:
            self.check_root(cursor)
        else:
            self._adopt_root(cursor)
        if _newest_term(cursor) == 0:
            self.add_term(cursor)
        self._migrate(cursor)

    def _adopt_root(self, cursor: Cursor) -> None:
        # A store made before the check value: any one of its secrets tells.
        cursor.execute(
            "SELECT v.wrapped, v.name, v.version, k.type FROM key_versions v"
            " JOIN keys k ON k.name = v.name LIMIT 1"
        )
        secret = cursor.fetchone()
        if secret is not None and not opens(self.root, bytes(secret[0]), *secret[1:]):
            raise RootKeyMismatchError()
        cursor.execute(
            "INSERT INTO root_key_check (id, wrapped) VALUES (1, ?)",
            (self.root.wrap(ROOT_KEY_CHECK, *ROOT_KEY_CHECK_IDENTITY),),
        )

    def _migrate(self, cursor: Cursor) -> None:
        """Versions wrapped directly under the root key (term NULL) rewrapped under the newest
        term, in the transaction that opens the store: all of them or none."""
        cursor.execute(
            "SELECT v.name, v.version, v.wrapped, k.type FROM key_versions v"
            " JOIN keys k ON k.name = v.name WHERE v.term IS NULL"
        )
        legacy = cursor.fetchall()
        if not legacy:
            return
        term, wrapper = self.current(cursor)
        for name, version, wrapped, key_type in legacy:
            secret = self.root.unwrap(bytes(wrapped), name, version, key_type)
            cursor.execute(
                "UPDATE key_versions SET wrapped = ?, term = ? WHERE name = ? AND version = ?",
                (wrapper.wrap(secret, name, version, key_type), term, name, version),
            )
        log.info("%d key versions moved under keyring term %d", len(legacy), term)

    def check_root(self, cursor: Cursor) -> None:
        """`RootKeyMismatchError` unless the stored check value opens under the root key
        (asking the source again once, for a root rotated since this process read it)."""
        cursor.execute("SELECT wrapped FROM root_key_check WHERE id = 1")
        row = cursor.fetchone()
        if row is None:
            return
        wrapped = bytes(row[0])
        if wrapped == self._checked:
            return
        if not opens(self.root, wrapped, *ROOT_KEY_CHECK_IDENTITY):
            fresh = self._load_root()
            if not opens(fresh, wrapped, *ROOT_KEY_CHECK_IDENTITY):
                raise RootKeyMismatchError()
            log.warning("the root key was rotated: this process now uses the new one")
            self.root = fresh
        self._checked = wrapped

    def wrapper(self, cursor: Cursor, term: int) -> KeyWrapper:
        """The data-encryption key of `term`, unwrapped once per process."""
        with self._lock:
            known = self._terms.get(term)
        if known is not None:
            return known
        cursor.execute("SELECT wrapped FROM keyring WHERE term = ?", (term,))
        row = cursor.fetchone()
        if row is None:
            raise RootKeyMismatchError()  # a version names a term the keyring lacks
        wrapped = bytes(row[0])
        try:
            secret = self.root.unwrap(wrapped, "", term, TERM_TYPE)
        except UnwrapError:
            self.check_root(cursor)  # the root key may have been rotated meanwhile
            secret = self.root.unwrap(wrapped, "", term, TERM_TYPE)
        wrapper = KeyWrapper(secret)
        with self._lock:
            self._terms[term] = wrapper
        return wrapper

    def current(self, cursor: Cursor) -> tuple[int, KeyWrapper]:
        """The newest term, which new writes use, and its key."""
        term = _newest_term(cursor)
        if term == 0:
            raise RootKeyMismatchError()  # no keyring: the store was not opened by this code
        return term, self.wrapper(cursor, term)

    def add_term(self, cursor: Cursor) -> int:
        """A new newest term, drawn here and wrapped under the root key; the caller's transaction
        holds the lock on the check value, so keyring changes are serialised."""
        self.check_root(cursor)
        term = _newest_term(cursor) + 1
        secret = os.urandom(TERM_KEY_BYTES)
        cursor.execute(
            "INSERT INTO keyring (term, wrapped, created_at) VALUES (?, ?, ?)",
            (term, self.root.wrap(secret, "", term, TERM_TYPE), self._clock.now()),
        )
        with self._lock:
            self._terms[term] = KeyWrapper(secret)
        return term

    def kept_once(
        self,
        cursor: Cursor,
        table: str,
        columns: tuple[str, ...],
        identity: tuple[str, int, str],
        draw: Callable[[], tuple[bytes, ...]],
    ) -> tuple[bytes, ...]:
        """The one row of `table`: a secret wrapped as `identity` in its first column (named
        in `columns`), and the values of the others; `draw` makes them the first time, and of
        processes asking at once the first one's are stored and answered to all.

        The secret is wrapped under the keyring's first term, which root rotations rewrap and
        no rewrap removes: it outlives both."""
        wrapper = self.wrapper(cursor, 1)
        select = f"SELECT {', '.join(columns)} FROM {table} WHERE id = 1"
        cursor.execute(select)
        row = cursor.fetchone()
        if row is None:
            secret, *others = draw()
            cursor.execute(
                f"INSERT INTO {table} (id, {', '.join(columns)})"
                f" VALUES (1{', ?' * len(columns)}) ON CONFLICT (id) DO NOTHING",
                (wrapper.wrap(secret, *identity), *others),
            )
            cursor.execute(select)
            row = cursor.fetchone()
            assert row is not None
        return wrapper.unwrap(bytes(row[0]), *identity), *(bytes(value) for value in row[1:])

    def rewrap_root(self, cursor: Cursor, new_root: RootKey) -> int:
        """Every term and the check value rewrapped under `new_root`; the number of terms."""
        self.check_root(cursor)
        cursor.execute("SELECT term, wrapped FROM keyring ORDER BY term")
        rows = cursor.fetchall()
        for term, wrapped in rows:
            secret = self.root.unwrap(bytes(wrapped), "", int(term), TERM_TYPE)
            cursor.execute(
                "UPDATE keyring SET wrapped = ? WHERE term = ?",
                (new_root.wrap(secret, "", int(term), TERM_TYPE), term),
            )
        check = new_root.wrap(ROOT_KEY_CHECK, *ROOT_KEY_CHECK_IDENTITY)
        cursor.execute("UPDATE root_key_check SET wrapped = ? WHERE id = 1", (check,))
        self.root, self._checked = new_root, check
        return len(rows)


class KeyringRepository:
    """The keyring's terms and the root key over them, as the operator changes them."""

    def __init__(self, session: Session, terms: Terms) -> None:
        self._session = session
        self._terms = terms

    def status(self) -> KeyringStatus:
        """The keyring's newest term and how many versions are still under older ones."""
        with self._session.transaction(write=False) as cursor:
            return _status(cursor)

    def rotate(self) -> KeyringStatus:
        """Add a term, which every write from now on uses (in every replica)."""
        with self._session.transaction(write=True) as cursor:
            self._lock(cursor)
            self._terms.add_term(cursor)
            return _status(cursor)

    def rotate_root(self, new_root: RootKey) -> int:
        """Rewrap the keyring (only it) under `new_root`; the number of terms rewrapped."""
        with self._session.transaction(write=True) as cursor:
            self._lock(cursor)
            return self._terms.rewrap_root(cursor, new_root)

    def rewrap(self, limit: int) -> tuple[int, KeyringStatus]:
        """Move up to `limit` versions from older terms to the newest, in one transaction;
        how many moved, and the status after."""
        with self._session.transaction(write=True) as cursor:
            term, wrapper = self._terms.current(cursor)
            cursor.execute(
                "SELECT v.name, v.version, v.term, v.wrapped, k.type FROM key_versions v"
                " JOIN keys k ON k.name = v.name WHERE v.term < ?"
                f" ORDER BY v.name, v.version LIMIT ?{self._session.dialect.skip_locked}",
                (term, limit),
            )
            rows = cursor.fetchall()
            for name, version, old_term, wrapped, key_type in rows:
                secret = self._terms.wrapper(cursor, old_term).unwrap(
                    bytes(wrapped), name, version, key_type
                )
                cursor.execute(
                    "UPDATE key_versions SET wrapped = ?, term = ?"
                    " WHERE name = ? AND version = ? AND term = ?",
                    (wrapper.wrap(secret, name, version, key_type), term, name, version, old_term),
                )
            return len(rows), _status(cursor)

    def refresh_root(self) -> None:
        """Take up a root key rotated by another process (asking the root key source again);
        `RootKeyMismatchError` if the source still gives a key that does not open the store."""
        with self._session.transaction(write=False) as cursor:
            self._terms.check_root(cursor)

    def _lock(self, cursor: Cursor) -> None:
        """Serialise changes of the keyring (and of the root key) between replicas."""
        row_lock = self._session.dialect.row_lock
        cursor.execute(f"SELECT wrapped FROM root_key_check WHERE id = 1{row_lock}")


def _status(cursor: Cursor) -> KeyringStatus:
    term = _newest_term(cursor)
    cursor.execute(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN term < ? THEN 1 ELSE 0 END), 0) FROM key_versions",
        (term,),
    )
    counts = cursor.fetchone()
    assert counts is not None
    return KeyringStatus(term, int(counts[0]), int(counts[1]))
