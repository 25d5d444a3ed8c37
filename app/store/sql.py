"""The key store over SQL, shared by the SQLite and PostgreSQL backends.

The backends differ only in how they connect, how a write transaction takes its lock, the
placeholder style and one column type; the queries and the wrapping live here once.

A store remembers its root key by a check value wrapped under it, and opens under no other: a
process started with the wrong root key would otherwise serve 500s on every stored key and,
worse, add versions no other process can read. Key versions are wrapped under the keyring's terms
(`app.store.hierarchy`); a store whose versions are wrapped directly under the root key (made
before the keyring existed) is moved onto the first term when it is first opened.
"""

import builtins
import json
import logging
import os
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from app.store.base import (
    AuditHead,
    AuditQuery,
    AuditRow,
    DecisionT,
    DeletionProtectedError,
    FunctionLedger,
    FunctionRecord,
    KeyChangedError,
    KeyExistsError,
    KeyInfo,
    KeyMaterial,
    KeyNotFoundError,
    KeyNotPendingDeletionError,
    KeyPendingDeletionError,
    KeyPolicies,
    KeyStore,
    KeyVersionInfo,
    PolicyDecision,
    RestoredVersion,
    RootKeyMismatchError,
    TokenRecord,
    VersionNotFoundError,
)
from app.store.hierarchy import (
    ROOT_KEY_CHECK,
    ROOT_KEY_CHECK_IDENTITY,
    KeyringStatus,
    RootKey,
    RootKeyLoader,
    Terms,
    opens,
)
from app.store.patterns import GlobParts, usable

log = logging.getLogger("cipherd.keystore")

SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    name TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    params TEXT NOT NULL,
    exportable INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    latest_version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS key_versions (
    name TEXT NOT NULL REFERENCES keys(name) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    wrapped {blob} NOT NULL,
    public {blob},
    term INTEGER,
    PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS root_key_check (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS keyring (
    term INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    token_hash {blob} NOT NULL UNIQUE,
    description TEXT NOT NULL,
    key_patterns TEXT NOT NULL,
    operations TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION,
    rate_per_second DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS fe_bases (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    basis TEXT NOT NULL,
    PRIMARY KEY (name, version),
    FOREIGN KEY (name, version) REFERENCES key_versions(name, version) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS fe_functions (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    function TEXT NOT NULL,
    principal TEXT NOT NULL,
    time DOUBLE PRECISION NOT NULL,
    rank INTEGER NOT NULL,
    PRIMARY KEY (name, version, seq),
    FOREIGN KEY (name, version) REFERENCES key_versions(name, version) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS audit (
    chain TEXT NOT NULL,
    seq INTEGER NOT NULL,
    time DOUBLE PRECISION NOT NULL,
    request_id TEXT NOT NULL,
    client TEXT,
    principal TEXT,
    operation TEXT NOT NULL,
    key_name TEXT,
    key_version TEXT,
    status INTEGER NOT NULL,
    problem TEXT,
    details TEXT NOT NULL,
    mac {blob} NOT NULL,
    PRIMARY KEY (chain, seq)
);
CREATE INDEX IF NOT EXISTS audit_time ON audit (time, chain, seq);
CREATE TABLE IF NOT EXISTS audit_heads (
    chain TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    tag {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_key (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL
);
CREATE TABLE IF NOT EXISTS wrapping_key (
    id INTEGER PRIMARY KEY,
    wrapped {blob} NOT NULL,
    public {blob} NOT NULL
)
"""

KEY_COLUMNS = (
    "name, type, params, exportable, created_at, updated_at, latest_version, state,"
    " deletion_date, deletion_protection, min_decryption_version, min_encryption_version,"
    " auto_rotate_seconds"
)
# The lifecycle's columns, added to a store made before them: name, definition.
LIFECYCLE_COLUMNS = (
    ("state", "TEXT NOT NULL DEFAULT 'active'"),
    ("deletion_date", "DOUBLE PRECISION"),
    ("deletion_protection", "INTEGER NOT NULL DEFAULT 0"),
    ("min_decryption_version", "INTEGER NOT NULL DEFAULT 1"),
    ("min_encryption_version", "INTEGER NOT NULL DEFAULT 0"),
    ("auto_rotate_seconds", "DOUBLE PRECISION"),
)
ACTIVE, PENDING_DELETION = "active", "pending-deletion"
TOKEN_COLUMNS = (
    "id, token_hash, description, key_patterns, operations, created_at, expires_at, rate_per_second"
)
AUDIT_COLUMNS = (
    "chain, seq, time, request_id, client, principal, operation, key_name, key_version, status,"
    " problem, details, mac"
)
# The audit MAC key's wrapping identity: no key has an empty name or version 0.
AUDIT_KEY_IDENTITY = ("", 0, "audit-mac-key")
WRAPPING_KEY_IDENTITY = ("", 0, "wrapping-key")
# Rows per audit INSERT: runs of the largest size, the rest in the smaller ones. A few fixed
# sizes make a few statements, which the drivers prepare once and keep; a statement per length
# would fill their caches with dozens of large ones. 64 rows of 13 columns stay under SQLite's
# oldest limit of 999 parameters per statement.
AUDIT_ROWS_PER_INSERT = (64, 16, 4, 1)
_AUDIT_PLACEHOLDERS = "(" + ", ".join(["?"] * 13) + ")"


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses, with `?` placeholders on every backend."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> object: ...
    def fetchone(self) -> tuple[Any, ...] | None: ...
    def fetchall(self) -> list[tuple[Any, ...]]: ...


class SqlKeyStore(KeyStore):
    BLOB_TYPE = "BLOB"
    # Appended to the SELECT that reads a key row inside a write transaction, to hold it.
    ROW_LOCK = ""
    # Appended to the SELECT of versions to rewrap: replicas rewrapping at once take
    # different rows instead of queueing on the same ones.
    SKIP_LOCKED = ""
    # What the driver raises when an INSERT hits a unique constraint.
    INTEGRITY_ERROR: type[Exception]

    def __init__(self, load_root: RootKeyLoader) -> None:
        self._terms = Terms(load_root)

    @abstractmethod
    def _name_matches(self, globs: Sequence[GlobParts]) -> tuple[str, list[str]]:
        """A condition, and its parameters, that `name` matches one of the token globs."""

    @abstractmethod
    def _transaction(self, write: bool) -> AbstractContextManager[Cursor]:
        """A cursor inside one transaction; `write` transactions serialise with each other."""

    def _lock_schema(self, cursor: Cursor) -> None:
        """Serialise schema creation between processes starting at once."""

    @abstractmethod
    def _has_column(self, cursor: Cursor, table: str, column: str) -> bool:
        """Whether `table` has `column` (stores made by older code lack some)."""

    def _create_schema(self) -> None:
        """The tables, and the check that the root key is this store's (RootKeyMismatchError)."""
        with self._transaction(write=True) as cursor:
            self._lock_schema(cursor)
            for statement in SCHEMA.format(blob=self.BLOB_TYPE).split(";"):
                if statement.strip():
                    cursor.execute(statement)
            if not self._has_column(cursor, "key_versions", "term"):
                cursor.execute("ALTER TABLE key_versions ADD COLUMN term INTEGER")
            for column, definition in LIFECYCLE_COLUMNS:
                if not self._has_column(cursor, "keys", column):
                    cursor.execute(f"ALTER TABLE keys ADD COLUMN {column} {definition}")
            if not self._has_column(cursor, "tokens", "rate_per_second"):
                cursor.execute("ALTER TABLE tokens ADD COLUMN rate_per_second DOUBLE PRECISION")
            self._check_root_key(cursor)
            cursor.execute("SELECT 1 FROM keyring LIMIT 1")
            if cursor.fetchone() is None:
                self._terms.add_term(cursor)
            self._migrate_to_keyring(cursor)

    def _check_root_key(self, cursor: Cursor) -> None:
        cursor.execute("SELECT 1 FROM root_key_check WHERE id = 1")
        if cursor.fetchone() is not None:
            self._terms.check_root(cursor)
            return
        # A store made before the check value: any one of its secrets tells.
        cursor.execute(
            "SELECT v.wrapped, v.name, v.version, k.type FROM key_versions v"
            " JOIN keys k ON k.name = v.name LIMIT 1"
        )
        secret = cursor.fetchone()
        root = self._terms.root
        if secret is not None and not opens(root, bytes(secret[0]), *secret[1:]):
            raise RootKeyMismatchError()
        cursor.execute(
            "INSERT INTO root_key_check (id, wrapped) VALUES (1, ?)",
            (root.wrap(ROOT_KEY_CHECK, *ROOT_KEY_CHECK_IDENTITY),),
        )

    def _migrate_to_keyring(self, cursor: Cursor) -> None:
        """Versions wrapped directly under the root key (term NULL) rewrapped under the newest
        term, in the transaction that opens the store: all of them or none."""
        cursor.execute(
            "SELECT v.name, v.version, v.wrapped, k.type FROM key_versions v"
            " JOIN keys k ON k.name = v.name WHERE v.term IS NULL"
        )
        legacy = cursor.fetchall()
        if not legacy:
            return
        term, wrapper = self._terms.current(cursor)
        for name, version, wrapped, key_type in legacy:
            secret = self._terms.root.unwrap(bytes(wrapped), name, version, key_type)
            cursor.execute(
                "UPDATE key_versions SET wrapped = ?, term = ? WHERE name = ? AND version = ?",
                (wrapper.wrap(secret, name, version, key_type), term, name, version),
            )
        log.info("%d key versions moved under keyring term %d", len(legacy), term)

    def _lock_key_row(self, cursor: Cursor, name: str) -> tuple[Any, ...] | None:
        cursor.execute(f"SELECT {KEY_COLUMNS} FROM keys WHERE name = ?{self.ROW_LOCK}", (name,))
        return cursor.fetchone()

    def create(
        self,
        name: str,
        type: str,
        params: dict[str, Any],
        exportable: bool,
        secret: bytes,
        public: bytes | None,
        deletion_protection: bool = False,
    ) -> KeyInfo:
        now = time.time()
        try:
            return self._insert_key(
                name, type, params, exportable, secret, public, now, deletion_protection
            )
        except self.INTEGRITY_ERROR:
            # Another replica created the same name between our check and our insert.
            raise KeyExistsError(name) from None

    def _insert_key(
        self,
        name: str,
        type: str,
        params: dict[str, Any],
        exportable: bool,
        secret: bytes,
        public: bytes | None,
        now: float,
        deletion_protection: bool,
    ) -> KeyInfo:
        with self._transaction(write=True) as cursor:
            cursor.execute("SELECT 1 FROM keys WHERE name = ?", (name,))
            if cursor.fetchone() is not None:
                raise KeyExistsError(name)
            term, wrapper = self._terms.current(cursor)
            cursor.execute(
                "INSERT INTO keys (name, type, params, exportable, created_at, updated_at,"
                " latest_version, deletion_protection) VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
                (
                    name,
                    type,
                    json.dumps(params),
                    int(exportable),
                    now,
                    now,
                    int(deletion_protection),
                ),
            )
            cursor.execute(
                "INSERT INTO key_versions (name, version, created_at, wrapped, public, term)"
                " VALUES (?, 1, ?, ?, ?, ?)",
                (name, now, wrapper.wrap(secret, name, 1, type), public, term),
            )
            return self._info(cursor, name)

    def restore_backup(
        self,
        name: str,
        type: str,
        params: dict[str, Any],
        exportable: bool,
        versions: Sequence[RestoredVersion],
        policies: KeyPolicies,
    ) -> KeyInfo:
        now = time.time()
        try:
            with self._transaction(write=True) as cursor:
                cursor.execute("SELECT 1 FROM keys WHERE name = ?", (name,))
                if cursor.fetchone() is not None:
                    raise KeyExistsError(name)
                term, wrapper = self._terms.current(cursor)
                latest = max(v.version for v in versions)
                cursor.execute(
                    "INSERT INTO keys (name, type, params, exportable, created_at, updated_at,"
                    " latest_version, deletion_protection, min_decryption_version,"
                    " min_encryption_version, auto_rotate_seconds)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        name,
                        type,
                        json.dumps(params),
                        int(exportable),
                        now,
                        now,
                        latest,
                        int(policies.deletion_protection),
                        policies.min_decryption_version,
                        policies.min_encryption_version,
                        policies.auto_rotate_seconds,
                    ),
                )
                for v in versions:
                    cursor.execute(
                        "INSERT INTO key_versions"
                        " (name, version, created_at, wrapped, public, term)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            name,
                            v.version,
                            v.created_at,
                            wrapper.wrap(v.secret, name, v.version, type),
                            v.public,
                            term,
                        ),
                    )
                return self._info(cursor, name)
        except self.INTEGRITY_ERROR:
            raise KeyExistsError(name) from None

    def wrapping_key(self, generate: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        # Under the keyring's first term, as the audit key: no rewrap moves it.
        with self._transaction(write=True) as cursor:
            wrapper = self._terms.wrapper(cursor, 1)
            cursor.execute("SELECT wrapped, public FROM wrapping_key WHERE id = 1")
            row = cursor.fetchone()
            if row is not None:
                return wrapper.unwrap(bytes(row[0]), *WRAPPING_KEY_IDENTITY), bytes(row[1])
            secret, public = generate()
            cursor.execute(
                "INSERT INTO wrapping_key (id, wrapped, public) VALUES (1, ?, ?)",
                (wrapper.wrap(secret, *WRAPPING_KEY_IDENTITY), public),
            )
            return secret, public

    def rotate(
        self,
        name: str,
        secret: bytes,
        public: bytes | None,
        created_at: float,
        expected_version: int | None = None,
    ) -> KeyInfo:
        now = time.time()
        with self._transaction(write=True) as cursor:
            row = self._lock_key_row(cursor, name)
            if row is None:
                raise KeyNotFoundError(name)
            if row[4] != created_at:
                raise KeyChangedError(name)
            if row[7] == PENDING_DELETION:
                raise KeyPendingDeletionError(name, row[8])
            if expected_version is not None and row[6] != expected_version:
                raise KeyChangedError(name)
            key_type, version = row[1], row[6] + 1
            term, wrapper = self._terms.current(cursor)
            cursor.execute(
                "INSERT INTO key_versions (name, version, created_at, wrapped, public, term)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (name, version, now, wrapper.wrap(secret, name, version, key_type), public, term),
            )
            cursor.execute(
                "UPDATE keys SET latest_version = ?, updated_at = ? WHERE name = ?",
                (version, now, name),
            )
            return self._info(cursor, name)

    def get(self, name: str) -> KeyInfo:
        with self._transaction(write=False) as cursor:
            return self._info(cursor, name)

    def list(
        self,
        after: str | None = None,
        limit: int | None = None,
        patterns: Sequence[str] | None = None,
    ) -> Sequence[KeyInfo]:
        # Keyset paging: a page starts after the last name of the previous one, so keys created
        # or deleted meanwhile shift nothing.
        conditions: list[str] = []
        params: list[Any] = []
        if after is not None:
            conditions.append("name > ?")
            params.append(after)
        if patterns is not None:
            globs = usable(patterns)
            condition, pattern_params = self._name_matches(globs) if globs else ("FALSE", [])
            conditions.append(condition)
            params.extend(pattern_params)
        query = f"SELECT {KEY_COLUMNS} FROM keys"
        if conditions:
            query += " WHERE " + " AND ".join(conditions)
        query += " ORDER BY name"
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        with self._transaction(write=False) as cursor:
            cursor.execute(query, params)
            return [_key_info(row) for row in cursor.fetchall()]

    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        with self._transaction(write=False) as cursor:
            cursor.execute(
                "SELECT type, params, latest_version, exportable, state, deletion_date,"
                " min_decryption_version, min_encryption_version FROM keys WHERE name = ?",
                (name,),
            )
            key = cursor.fetchone()
            if key is None:
                raise KeyNotFoundError(name)
            key_type, params, latest, exportable, state, deletion_date, min_dec, min_enc = key
            if state == PENDING_DELETION:
                raise KeyPendingDeletionError(name, deletion_date)
            wanted = latest if version is None else version
            if not 1 <= wanted <= latest:
                # Not stored, and past what an INTEGER column can even be asked for.
                raise VersionNotFoundError(name, wanted)
            cursor.execute(
                "SELECT wrapped, public, term FROM key_versions WHERE name = ? AND version = ?",
                (name, wanted),
            )
            row = cursor.fetchone()
            if row is None:
                raise VersionNotFoundError(name, wanted)
            wrapped, public, term = row
            wrapper = self._terms.wrapper(cursor, term)
        return KeyMaterial(
            name=name,
            type=key_type,
            version=wanted,
            params=json.loads(params),
            secret=wrapper.unwrap(bytes(wrapped), name, wanted, key_type),
            public=None if public is None else bytes(public),
            exportable=bool(exportable),
            latest_version=latest,
            min_decryption_version=min_dec,
            min_encryption_version=min_enc,
        )

    def set_params(self, name: str, changes: dict[str, Any]) -> KeyInfo:
        with self._transaction(write=True) as cursor:
            row = self._lock_key_row(cursor, name)
            if row is None:
                raise KeyNotFoundError(name)
            params = {**json.loads(row[2]), **changes}
            params = {key: value for key, value in params.items() if value is not None}
            cursor.execute(
                "UPDATE keys SET params = ?, updated_at = ? WHERE name = ?",
                (json.dumps(params), time.time(), name),
            )
            return self._info(cursor, name)

    def release_functions(
        self, name: str, version: int, decide: Callable[[FunctionLedger], DecisionT]
    ) -> DecisionT:
        with self._transaction(write=True) as cursor:
            # The basis row is the lock that serialises decisions on this key version, on
            # every replica: created if missing, then held until the commit.
            cursor.execute(
                "INSERT INTO fe_bases (name, version, basis) VALUES (?, ?, '[]')"
                " ON CONFLICT DO NOTHING",
                (name, version),
            )
            cursor.execute(
                f"SELECT basis FROM fe_bases WHERE name = ? AND version = ?{self.ROW_LOCK}",
                (name, version),
            )
            row = cursor.fetchone()
            assert row is not None
            cursor.execute("SELECT params FROM keys WHERE name = ?", (name,))
            key = cursor.fetchone()
            if key is None:
                raise KeyNotFoundError(name)
            ledger = _SqlLedger(cursor, name, version, json.loads(row[0]), json.loads(key[0]))
            decision = decide(ledger)
            ledger.write()
            return decision

    def functions(self, name: str, version: int | None) -> Sequence[FunctionRecord]:
        query = (
            "SELECT version, seq, function, principal, time, rank FROM fe_functions WHERE name = ?"
        )
        params: list[Any] = [name]
        if version is not None:
            query += " AND version = ?"
            params.append(version)
        with self._transaction(write=False) as cursor:
            cursor.execute(query + " ORDER BY version, seq", params)
            return [
                FunctionRecord(v, seq, json.loads(function), principal, time_, rank)
                for v, seq, function, principal, time_, rank in cursor.fetchall()
            ]

    def delete(self, name: str) -> None:
        with self._transaction(write=True) as cursor:
            if self._lock_key_row(cursor, name) is None:
                raise KeyNotFoundError(name)
            self._destroy(cursor, name)

    def _destroy(self, cursor: Cursor, name: str) -> None:
        cursor.execute("DELETE FROM fe_functions WHERE name = ?", (name,))
        cursor.execute("DELETE FROM fe_bases WHERE name = ?", (name,))
        cursor.execute("DELETE FROM key_versions WHERE name = ?", (name,))
        cursor.execute("DELETE FROM keys WHERE name = ?", (name,))

    def schedule_deletion(self, name: str, deletion_date: float) -> KeyInfo:
        with self._transaction(write=True) as cursor:
            row = self._lock_key_row(cursor, name)
            if row is None:
                raise KeyNotFoundError(name)
            if row[7] == PENDING_DELETION:
                raise KeyPendingDeletionError(name, row[8])
            if row[9]:
                raise DeletionProtectedError(name)
            cursor.execute(
                "UPDATE keys SET state = ?, deletion_date = ?, updated_at = ? WHERE name = ?",
                (PENDING_DELETION, deletion_date, time.time(), name),
            )
            return self._info(cursor, name)

    def restore(self, name: str) -> KeyInfo:
        with self._transaction(write=True) as cursor:
            row = self._lock_key_row(cursor, name)
            if row is None:
                raise KeyNotFoundError(name)
            if row[7] != PENDING_DELETION:
                raise KeyNotPendingDeletionError(name)
            cursor.execute(
                "UPDATE keys SET state = ?, deletion_date = NULL, updated_at = ? WHERE name = ?",
                (ACTIVE, time.time(), name),
            )
            return self._info(cursor, name)

    def destroy_due(self, now: float) -> builtins.list[str]:
        with self._transaction(write=False) as cursor:
            cursor.execute(
                "SELECT name FROM keys WHERE state = ? AND deletion_date <= ? ORDER BY name",
                (PENDING_DELETION, now),
            )
            due = [name for (name,) in cursor.fetchall()]
        destroyed = []
        for name in due:
            # One transaction per key, deciding again under the row lock: of the processes
            # that found it due, the first destroys it and the others find nothing.
            with self._transaction(write=True) as cursor:
                row = self._lock_key_row(cursor, name)
                if row is None or row[7] != PENDING_DELETION or row[8] > now:
                    continue
                self._destroy(cursor, name)
            destroyed.append(name)
        return destroyed

    def set_policy(self, name: str, decide: PolicyDecision) -> KeyInfo:
        with self._transaction(write=True) as cursor:
            row = self._lock_key_row(cursor, name)
            if row is None:
                raise KeyNotFoundError(name)
            if row[7] == PENDING_DELETION:
                raise KeyPendingDeletionError(name, row[8])
            checked = decide(self._info(cursor, name))
            if not checked:
                return self._info(cursor, name)
            assignments = ", ".join(f"{column} = ?" for column in checked)
            cursor.execute(
                f"UPDATE keys SET {assignments}, updated_at = ? WHERE name = ?",
                [*(_column_value(value) for value in checked.values()), time.time(), name],
            )
            return self._info(cursor, name)

    def trim(self, name: str) -> tuple[KeyInfo, builtins.list[int]]:
        with self._transaction(write=True) as cursor:
            row = self._lock_key_row(cursor, name)
            if row is None:
                raise KeyNotFoundError(name)
            if row[7] == PENDING_DELETION:
                raise KeyPendingDeletionError(name, row[8])
            minimum = row[10]
            cursor.execute(
                "SELECT version FROM key_versions WHERE name = ? AND version < ? ORDER BY version",
                (name, minimum),
            )
            versions = [int(v) for (v,) in cursor.fetchall()]
            for table in ("fe_functions", "fe_bases", "key_versions"):
                cursor.execute(
                    f"DELETE FROM {table} WHERE name = ? AND version < ?", (name, minimum)
                )
            if versions:
                cursor.execute("UPDATE keys SET updated_at = ? WHERE name = ?", (time.time(), name))
            return self._info(cursor, name), versions

    def due_rotations(self, now: float) -> builtins.list[tuple[str, int]]:
        with self._transaction(write=False) as cursor:
            cursor.execute(
                "SELECT k.name, k.latest_version FROM keys k JOIN key_versions v"
                " ON v.name = k.name AND v.version = k.latest_version"
                " WHERE k.auto_rotate_seconds IS NOT NULL AND k.state = ?"
                " AND v.created_at + k.auto_rotate_seconds <= ? ORDER BY k.name",
                (ACTIVE, now),
            )
            return [(name, int(version)) for name, version in cursor.fetchall()]

    def keyring_status(self) -> KeyringStatus:
        with self._transaction(write=False) as cursor:
            return self._keyring_status(cursor)

    def _keyring_status(self, cursor: Cursor) -> KeyringStatus:
        cursor.execute("SELECT MAX(term) FROM keyring")
        row = cursor.fetchone()
        term = int(row[0]) if row is not None and row[0] is not None else 0
        cursor.execute(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN term < ? THEN 1 ELSE 0 END), 0)"
            " FROM key_versions",
            (term,),
        )
        counts = cursor.fetchone()
        assert counts is not None
        return KeyringStatus(term, int(counts[0]), int(counts[1]))

    def rotate_keyring(self) -> KeyringStatus:
        with self._transaction(write=True) as cursor:
            self._lock_keyring(cursor)
            self._terms.add_term(cursor)
            return self._keyring_status(cursor)

    def rotate_root(self, new_root: RootKey) -> int:
        with self._transaction(write=True) as cursor:
            self._lock_keyring(cursor)
            return self._terms.rewrap_root(cursor, new_root)

    def rewrap_keyring(self, limit: int) -> tuple[int, KeyringStatus]:
        with self._transaction(write=True) as cursor:
            term, wrapper = self._terms.current(cursor)
            cursor.execute(
                "SELECT v.name, v.version, v.term, v.wrapped, k.type FROM key_versions v"
                " JOIN keys k ON k.name = v.name WHERE v.term < ?"
                f" ORDER BY v.name, v.version LIMIT ?{self.SKIP_LOCKED}",
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
            return len(rows), self._keyring_status(cursor)

    def refresh_root(self) -> None:
        with self._transaction(write=False) as cursor:
            self._terms.check_root(cursor)

    def _lock_keyring(self, cursor: Cursor) -> None:
        """Serialise changes of the keyring (and of the root key) between replicas."""
        cursor.execute(f"SELECT wrapped FROM root_key_check WHERE id = 1{self.ROW_LOCK}")

    def add_token(self, token: TokenRecord) -> None:
        with self._transaction(write=True) as cursor:
            cursor.execute(
                f"INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    token.id,
                    token.token_hash,
                    token.description,
                    json.dumps(list(token.key_patterns)),
                    json.dumps(list(token.operations)),
                    token.created_at,
                    token.expires_at,
                    token.rate_per_second,
                ),
            )

    def token_by_hash(self, token_hash: bytes) -> TokenRecord | None:
        with self._transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE token_hash = ?", (token_hash,)
            )
            row = cursor.fetchone()
        return None if row is None else _token(row)

    def list_tokens(self) -> Sequence[TokenRecord]:
        with self._transaction(write=False) as cursor:
            cursor.execute(f"SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY created_at, id")
            return [_token(row) for row in cursor.fetchall()]

    def delete_token(self, token_id: str) -> bool:
        with self._transaction(write=True) as cursor:
            cursor.execute("SELECT 1 FROM tokens WHERE id = ?", (token_id,))
            if cursor.fetchone() is None:
                return False
            cursor.execute("DELETE FROM tokens WHERE id = ?", (token_id,))
            return True

    def append_audit(self, rows: Sequence[AuditRow], head: AuditHead) -> None:
        with self._transaction(write=True) as cursor:
            if not rows:  # a check that the table takes writes: it inserts nothing
                cursor.execute(
                    f"INSERT INTO audit ({AUDIT_COLUMNS}) SELECT {AUDIT_COLUMNS} FROM audit"
                    " WHERE 1 = 0"
                )
            _insert_audit(cursor, rows, head)

    def extend_audit_chain(
        self,
        chain: str,
        extend: Callable[[Sequence[AuditRow]], tuple[Sequence[AuditRow], AuditHead | None]],
    ) -> None:
        with self._transaction(write=True) as cursor:
            # A head row to lock, the chain's first writer's; replaced below.
            cursor.execute(
                "INSERT INTO audit_heads (chain, seq, tag) VALUES (?, 0, ?)"
                " ON CONFLICT (chain) DO NOTHING",
                (chain, b""),
            )
            cursor.execute(f"SELECT seq FROM audit_heads WHERE chain = ?{self.ROW_LOCK}", (chain,))
            cursor.fetchone()
            cursor.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit WHERE chain = ? ORDER BY seq", (chain,)
            )
            rows, head = extend([_audit_row(row) for row in cursor.fetchall()])
            if head is not None:
                _insert_audit(cursor, rows, head)

    def audit_mac_key(self) -> bytes:
        # Under the keyring's first term, which root rotations rewrap and no rewrap removes:
        # the key, and every chain's MACs, outlive both.
        with self._transaction(write=True) as cursor:
            wrapper = self._terms.wrapper(cursor, 1)
            cursor.execute("SELECT wrapped FROM audit_key WHERE id = 1")
            row = cursor.fetchone()
            if row is not None:
                return wrapper.unwrap(bytes(row[0]), *AUDIT_KEY_IDENTITY)
            secret = os.urandom(32)
            cursor.execute(
                "INSERT INTO audit_key (id, wrapped) VALUES (1, ?)",
                (wrapper.wrap(secret, *AUDIT_KEY_IDENTITY),),
            )
            return secret

    def audit_records(self, query: AuditQuery) -> Sequence[AuditRow]:
        conditions: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("key_name = ?", query.key),
            ("principal = ?", query.principal),
            ("operation = ?", query.operation),
            ("status >= ?", query.status_from),
            ("status <= ?", query.status_to),
            ("time >= ?", query.since),
            ("time < ?", query.until),
            ("chain != ?", query.other_than_chain),
        ):
            if value is not None:
                conditions.append(column)
                params.append(value)
        if query.after is not None:
            conditions.append("(time, chain, seq) > (?, ?, ?)")
            params.extend(query.after)
        sql = f"SELECT {AUDIT_COLUMNS} FROM audit"
        if conditions:
            sql += " WHERE " + " AND ".join(conditions)
        sql += " ORDER BY time, chain, seq LIMIT ?"
        params.append(query.limit)
        with self._transaction(write=False) as cursor:
            cursor.execute(sql, params)
            return [_audit_row(row) for row in cursor.fetchall()]

    def audit_record(self, chain: str, seq: int) -> AuditRow | None:
        with self._transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit WHERE chain = ? AND seq = ?", (chain, seq)
            )
            row = cursor.fetchone()
        return None if row is None else _audit_row(row)

    def audit_chain(self, chain: str, after_seq: int, limit: int) -> Sequence[AuditRow]:
        with self._transaction(write=False) as cursor:
            cursor.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit WHERE chain = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (chain, after_seq, limit),
            )
            return [_audit_row(row) for row in cursor.fetchall()]

    def audit_heads(self) -> Sequence[AuditHead]:
        with self._transaction(write=False) as cursor:
            cursor.execute("SELECT chain, seq, tag FROM audit_heads ORDER BY chain")
            heads = {
                chain: AuditHead(chain, seq, bytes(tag)) for chain, seq, tag in cursor.fetchall()
            }
            cursor.execute("SELECT DISTINCT chain FROM audit")
            for (chain,) in cursor.fetchall():
                heads.setdefault(chain, AuditHead(chain, 0, b""))
        return sorted(heads.values(), key=lambda head: head.chain)

    def ping(self) -> None:
        with self._transaction(write=False) as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()

    def _info(self, cursor: Cursor, name: str) -> KeyInfo:
        cursor.execute(f"SELECT {KEY_COLUMNS} FROM keys WHERE name = ?", (name,))
        row = cursor.fetchone()
        if row is None:
            raise KeyNotFoundError(name)
        cursor.execute(
            "SELECT version, created_at FROM key_versions WHERE name = ? ORDER BY version",
            (name,),
        )
        versions = tuple(KeyVersionInfo(v, created) for v, created in cursor.fetchall())
        return _key_info(row, versions)


class _SqlLedger(FunctionLedger):
    """The function ledger of one key version inside a store transaction."""

    def __init__(
        self,
        cursor: Cursor,
        name: str,
        version: int,
        basis: list[list[int]],
        params: dict[str, Any],
    ) -> None:
        self._cursor = cursor
        self._name = name
        self._version = version
        self.basis = basis
        self.params = params
        self._records: list[tuple[Any, str, float, int]] = []

    def released_since(self, principal: str, since: float) -> int:
        self._cursor.execute(
            "SELECT COUNT(*) FROM fe_functions WHERE name = ? AND principal = ? AND time > ?",
            (self._name, principal, since),
        )
        row = self._cursor.fetchone()
        return (int(row[0]) if row else 0) + sum(
            1 for _, who, when, _ in self._records if who == principal and when > since
        )

    def record(self, function: Any, principal: str, time: float, rank: int) -> None:
        self._records.append((function, principal, time, rank))

    def write(self) -> None:
        """Store what was decided: the records, then the basis they leave."""
        if not self._records:
            return
        self._cursor.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM fe_functions WHERE name = ? AND version = ?",
            (self._name, self._version),
        )
        row = self._cursor.fetchone()
        seq = int(row[0]) if row else 0
        for function, principal, when, rank in self._records:
            seq += 1
            self._cursor.execute(
                "INSERT INTO fe_functions (name, version, seq, function, principal, time, rank)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self._name, self._version, seq, json.dumps(function), principal, when, rank),
            )
        self._cursor.execute(
            "UPDATE fe_bases SET basis = ? WHERE name = ? AND version = ?",
            (json.dumps(self.basis), self._name, self._version),
        )


def _key_info(row: tuple[Any, ...], versions: tuple[KeyVersionInfo, ...] = ()) -> KeyInfo:
    name, key_type, params, exportable, created_at, updated_at, latest = row[:7]
    state, deletion_date, protection, min_dec, min_enc, auto_rotate = row[7:]
    return KeyInfo(
        name=name,
        type=key_type,
        params=json.loads(params),
        exportable=bool(exportable),
        created_at=created_at,
        updated_at=updated_at,
        latest_version=latest,
        versions=versions,
        state=state,
        deletion_date=deletion_date,
        deletion_protection=bool(protection),
        min_decryption_version=min_dec,
        min_encryption_version=min_enc,
        auto_rotate_seconds=auto_rotate,
    )


_AUDIT_INSERTS = {
    size: f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES "
    + ", ".join([_AUDIT_PLACEHOLDERS] * size)
    + " ON CONFLICT (chain, seq) DO NOTHING"
    for size in AUDIT_ROWS_PER_INSERT
}


def _column_value(value: object) -> object:
    return int(value) if isinstance(value, bool) else value


def _insert_audit(cursor: Cursor, rows: Sequence[AuditRow], head: AuditHead) -> None:
    # Many rows per statement: each statement is a trip through the driver, and for the mover
    # thread a wait for the interpreter lock.
    start = 0
    for size in AUDIT_ROWS_PER_INSERT:
        while len(rows) - start >= size:
            chunk, start = rows[start : start + size], start + size
            # A record already there is one a journal was moved with before (or a forgery that
            # `verify` finds): moving a journal again changes nothing.
            cursor.execute(_AUDIT_INSERTS[size], [value for row in chunk for value in row])
    cursor.execute(
        "INSERT INTO audit_heads (chain, seq, tag) VALUES (?, ?, ?)"
        " ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, tag = excluded.tag"
        " WHERE excluded.seq >= audit_heads.seq",
        (head.chain, head.seq, head.tag),
    )


def _audit_row(row: tuple[Any, ...]) -> AuditRow:
    return AuditRow(*row[:12], mac=bytes(row[12]))  # type: ignore[misc]  # twelve text and number columns, then the MAC


def _token(row: tuple[Any, ...]) -> TokenRecord:
    token_id, token_hash, description, patterns, operations, created_at, expires_at, rate = row
    return TokenRecord(
        id=token_id,
        token_hash=bytes(token_hash),
        description=description,
        key_patterns=tuple(json.loads(patterns)),
        operations=tuple(json.loads(operations)),
        created_at=created_at,
        expires_at=expires_at,
        rate_per_second=rate,
    )
