"""The key hierarchy: the root key wraps a keyring of data-encryption keys, one per term, kept in
the store; every key version is wrapped under one term.

Rotating the root key rewraps only the keyring (a few rows); rotating the keyring adds a term that
new writes use, and a rewrap moves older versions onto it while every older term still unwraps.
Each process holds the terms it has unwrapped, so it keeps serving while the root key changes,
and needs the root key only for a term it has not seen yet; when that term does not open under
the root key it holds, it asks its root key source again (the file was replaced, say).
"""

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from app.store.base import RootKeyMismatchError
from app.store.wrapping import KeyWrapper, UnwrapError

if TYPE_CHECKING:
    from app.store.sql import Cursor

log = logging.getLogger("cipherd.keystore")

TERM_KEY_BYTES = 32
# A term's wrapping identity under the root key: no key has an empty name.
TERM_TYPE = "keyring-term"
# The check value, and its wrapping identity: no key has an empty name or version 0.
ROOT_KEY_CHECK = b"cipherd root key check"
ROOT_KEY_CHECK_IDENTITY = ("", 0, "root-key-check")


class RootKey(Protocol):
    """What the root key does: wrap and unwrap the keyring's terms and the check value."""

    def wrap(self, secret: bytes, name: str, version: int, key_type: str) -> bytes: ...
    def unwrap(self, blob: bytes, name: str, version: int, key_type: str) -> bytes: ...


RootKeyLoader = Callable[[], RootKey]


@dataclass(frozen=True)
class KeyringStatus:
    """The newest term, and how many key versions are wrapped under an older one."""

    term: int
    versions: int
    versions_behind: int


def opens(root: RootKey, blob: bytes, name: str, version: int, key_type: str) -> bool:
    try:
        root.unwrap(blob, name, version, key_type)
    except UnwrapError:
        return False
    return True


class Terms:
    """This process's root key and the keyring's terms it has unwrapped."""

    def __init__(self, load_root: RootKeyLoader) -> None:
        self._load_root = load_root
        self.root = load_root()
        self._terms: dict[int, KeyWrapper] = {}
        self._lock = threading.Lock()
        self._checked = b""  # the stored check value last found to open under `root`

    def check_root(self, cursor: "Cursor") -> None:
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

    def wrapper(self, cursor: "Cursor", term: int) -> KeyWrapper:
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

    def current(self, cursor: "Cursor") -> tuple[int, KeyWrapper]:
        """The newest term, which new writes use, and its key."""
        cursor.execute("SELECT MAX(term) FROM keyring")
        row = cursor.fetchone()
        term = int(row[0]) if row is not None and row[0] is not None else 0
        if term == 0:
            raise RootKeyMismatchError()  # no keyring: the store was not opened by this code
        return term, self.wrapper(cursor, term)

    def add_term(self, cursor: "Cursor") -> int:
        """A new newest term, drawn here and wrapped under the root key; the caller's transaction
        holds the lock on the check value, so keyring changes are serialised."""
        self.check_root(cursor)
        cursor.execute("SELECT MAX(term) FROM keyring")
        row = cursor.fetchone()
        term = (int(row[0]) if row is not None and row[0] is not None else 0) + 1
        secret = os.urandom(TERM_KEY_BYTES)
        cursor.execute(
            "INSERT INTO keyring (term, wrapped, created_at) VALUES (?, ?, ?)",
            (term, self.root.wrap(secret, "", term, TERM_TYPE), time.time()),
        )
        with self._lock:
            self._terms[term] = KeyWrapper(secret)
        return term

    def rewrap_root(self, cursor: "Cursor", new_root: RootKey) -> int:
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
