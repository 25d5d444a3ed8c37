"""Named, versioned keys: their metadata, policies and lifecycle, and each version's material,
wrapped under the keyring's newest term as it is stored (`app.store.keyring`).

A change reads the key's row with the dialect's row lock inside its write transaction, so that
concurrent changes from any replica are serialised (rotations get consecutive versions, a
destruction due on several processes happens once).
"""

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from app.store import ledger
from app.store.clock import Clock
from app.store.database import Cursor, Session
from app.store.errors import (
    AliasedNameError,
    DeletionProtectedError,
    KeyChangedError,
    KeyExistsError,
    KeyNotFoundError,
    KeyNotPendingDeletionError,
    KeyPendingDeletionError,
    MountNotFoundError,
    VersionNotFoundError,
)
from app.store.keyring import Terms
from app.store.kms_aliases import ALIAS_PREFIX
from app.store.patterns import Scope
from app.store.records import (
    ACTIVE,
    ON_DEMAND,
    PENDING_DELETION,
    KeyInfo,
    KeyMaterial,
    KeyPolicies,
    KeyVersionInfo,
    PolicyDecision,
    RestoredVersion,
)

COLUMNS = (
    "name, type, params, exportable, created_at, updated_at, latest_version, state,"
    " deletion_date, deletion_protection, min_decryption_version, min_encryption_version,"
    " auto_rotate_seconds"
)
# Positions in a row of COLUMNS.
_CREATED_AT, _LATEST, _STATE, _DELETION_DATE, _PROTECTED, _MIN_DECRYPTION = 4, 6, 7, 8, 9, 10


class KeyRepository:
    def __init__(self, session: Session, terms: Terms, clock: Clock) -> None:
        self._session = session
        self._terms = terms
        self._clock = clock

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
        """Store version 1 of a new key; `KeyExistsError` if the name is taken."""
        now = self._clock.now()
        key = KeyInfo(
            name, type, params, exportable, now, now, 1, deletion_protection=deletion_protection
        )
        return self._insert(key, [RestoredVersion(1, now, secret, public)])

    def restore_backup(
        self,
        name: str,
        type: str,
        params: dict[str, Any],
        exportable: bool,
        versions: Sequence[RestoredVersion],
        policies: KeyPolicies,
    ) -> KeyInfo:
        """Store a key brought from a backup, with its versions (numbers kept) and policies;
        `KeyExistsError` if the name is taken."""
        now = self._clock.now()
        latest = max(v.version for v in versions)
        key = KeyInfo(name, type, params, exportable, now, now, latest, **asdict(policies))
        return self._insert(key, versions)

    def _insert(self, key: KeyInfo, versions: Sequence[RestoredVersion]) -> KeyInfo:
        """A new key and its versions, as `key` says (its version list aside)."""
        name = key.name
        try:
            with self._session.transaction(write=True) as cursor:
                self._session.dialect.lock_name(cursor, name)  # as an alias of it is made
                cursor.execute("SELECT 1 FROM keys WHERE name = ?", (name,))
                if cursor.fetchone() is not None:
                    raise KeyExistsError(name)
                cursor.execute("SELECT 1 FROM kms_aliases WHERE name = ?", (ALIAS_PREFIX + name,))
                if cursor.fetchone() is not None:
                    raise AliasedNameError(name)
                self._refuse_disabled_mount(cursor, name)
                term, wrapper = self._terms.current(cursor)
                cursor.execute(
                    "INSERT INTO keys (name, type, params, exportable, created_at, updated_at,"
                    " latest_version, deletion_protection, min_decryption_version,"
                    " min_encryption_version, auto_rotate_seconds)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        name,
                        key.type,
                        json.dumps(key.params),
                        int(key.exportable),
                        key.created_at,
                        key.updated_at,
                        key.latest_version,
                        int(key.deletion_protection),
                        key.min_decryption_version,
                        key.min_encryption_version,
                        key.auto_rotate_seconds,
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
                            wrapper.wrap(v.secret, name, v.version, key.type),
                            v.public,
                            term,
                        ),
                    )
                return _info(cursor, name)
        except self._session.dialect.integrity_error:
            # Another replica created the same name between our check and our insert.
            raise KeyExistsError(name) from None

    def rotate(
        self,
        name: str,
        secret: bytes,
        public: bytes | None,
        created_at: float,
        expected_version: int | None = None,
        rotation: str = ON_DEMAND,
    ) -> KeyInfo:
        """Add the next version atomically: concurrent rotations get distinct versions.
        `rotation` says how it was made (AUTOMATIC or ON_DEMAND).

        `created_at` is that of the key the secret was drawn for (drawing can take seconds):
        `KeyChangedError` if the name now stands for another key, or if `expected_version` is
        given and is no longer the latest; `KeyNotFoundError`; `KeyPendingDeletionError`.
        """
        now = self._clock.now()
        with self._session.transaction(write=True) as cursor:
            row = self._lock(cursor, name)
            if row[_CREATED_AT] != created_at:
                raise KeyChangedError(name)
            _refuse_pending(row)
            if expected_version is not None and row[_LATEST] != expected_version:
                raise KeyChangedError(name)
            key_type, version = row[1], row[_LATEST] + 1
            term, wrapper = self._terms.current(cursor)
            cursor.execute(
                "INSERT INTO key_versions"
                " (name, version, created_at, wrapped, public, term, rotation)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    version,
                    now,
                    wrapper.wrap(secret, name, version, key_type),
                    public,
                    term,
                    rotation,
                ),
            )
            cursor.execute(
                "UPDATE keys SET latest_version = ?, updated_at = ? WHERE name = ?",
                (version, now, name),
            )
            return _info(cursor, name)

    def get(self, name: str) -> KeyInfo:
        """Metadata of a key with its versions; `KeyNotFoundError` if absent."""
        with self._session.transaction(write=False) as cursor:
            return _info(cursor, name)

    def locked(self, name: str) -> KeyInfo:
        """`get`, with the key's row held until the enclosing transaction ends: a change read
        from the key and written back is not lost to another made at once."""
        with self._session.transaction(write=True) as cursor:
            self._lock(cursor, name)
            return _info(cursor, name)

    def list(
        self,
        after: str | None = None,
        limit: int | None = None,
        patterns: Sequence[str] | None = None,
        scope: Scope | None = None,
    ) -> Sequence[KeyInfo]:
        """Metadata of the keys named after `after` (all when None) that match one of the glob
        `patterns` (any key when None; see `app.store.patterns`) and are within `scope` (any
        key when None), in name order, at most `limit` of them (all when None); without the
        version list."""
        # Keyset paging: a page starts after the last name of the previous one, so keys created
        # or deleted meanwhile shift nothing.
        conditions: builtins.list[str] = []
        params: builtins.list[Any] = []
        if after is not None:
            conditions.append("name > ?")
            params.append(after)
        if patterns is not None:
            condition, pattern_params = self._session.dialect.name_matches_any(patterns)
            conditions.append(condition)
            params.extend(pattern_params)
        if scope is not None:
            condition, scope_params = self._session.dialect.name_within(scope)
            conditions.append(condition)
            params.extend(scope_params)
        query = f"SELECT {COLUMNS} FROM keys"
        if conditions:
            query += " WHERE " + " AND ".join(conditions)
        query += " ORDER BY name"
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        with self._session.transaction(write=False) as cursor:
            cursor.execute(query, params)
            return [_key_info(row) for row in cursor.fetchall()]

    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        """Unwrapped material of one version (the latest when `version` is None)."""
        with self._session.transaction(write=False) as cursor:
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

    def public_parts(self, name: str, from_version: int) -> dict[int, bytes | None]:
        """Each version's public part from `from_version` on, in one read and without unwrapping
        a secret: a Transit read of a key of 10,000 versions unwrapped each, 0.8 s."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(
                "SELECT version, public FROM key_versions WHERE name = ? AND version >= ?",
                (name, from_version),
            )
            return {v: None if public is None else bytes(public) for v, public in cursor.fetchall()}

    def set_params(self, name: str, changes: dict[str, Any]) -> KeyInfo:
        """Change some of a key's parameters (a value of None removes one); `KeyNotFoundError`
        if absent."""
        with self._session.transaction(write=True) as cursor:
            row = self._lock(cursor, name)
            params = {**json.loads(row[2]), **changes}
            params = {key: value for key, value in params.items() if value is not None}
            cursor.execute(
                "UPDATE keys SET params = ?, updated_at = ? WHERE name = ?",
                (json.dumps(params), self._clock.now(), name),
            )
            return _info(cursor, name)

    def set_policy(self, name: str, decide: PolicyDecision) -> KeyInfo:
        """Change a key's policy columns as `decide` says, from the key under its row lock."""
        with self._session.transaction(write=True) as cursor:
            _refuse_pending(self._lock(cursor, name))
            checked = decide(_info(cursor, name))
            if not checked:
                return _info(cursor, name)
            assignments = ", ".join(f"{column} = ?" for column in checked)
            cursor.execute(
                f"UPDATE keys SET {assignments}, updated_at = ? WHERE name = ?",
                [*(_column_value(value) for value in checked.values()), self._clock.now(), name],
            )
            return _info(cursor, name)

    def delete(self, name: str) -> None:
        """Destroy a key and every version of it at once; `KeyNotFoundError` if absent."""
        with self._session.transaction(write=True) as cursor:
            self._lock(cursor, name)
            _destroy(cursor, name)
        self._session.secrets_destroyed()

    def schedule_deletion(
        self, name: str, deletion_date: float, protected_too: bool = False
    ) -> KeyInfo:
        """Mark a key pending deletion until `deletion_date`; `KeyPendingDeletionError` if it
        is already, `DeletionProtectedError` if it is protected (unless `protected_too`: its
        protection stays set, and is there again once it is restored)."""
        with self._session.transaction(write=True) as cursor:
            row = self._lock(cursor, name)
            _refuse_pending(row)
            if row[_PROTECTED] and not protected_too:
                raise DeletionProtectedError(name)
            cursor.execute(
                "UPDATE keys SET state = ?, deletion_date = ?, updated_at = ? WHERE name = ?",
                (PENDING_DELETION, deletion_date, self._clock.now(), name),
            )
            return _info(cursor, name)

    def restore(self, name: str) -> KeyInfo:
        """Cancel a scheduled deletion; `KeyNotPendingDeletionError` if none is scheduled."""
        with self._session.transaction(write=True) as cursor:
            if self._lock(cursor, name)[_STATE] != PENDING_DELETION:
                raise KeyNotPendingDeletionError(name)
            cursor.execute(
                "UPDATE keys SET state = ?, deletion_date = NULL, updated_at = ? WHERE name = ?",
                (ACTIVE, self._clock.now(), name),
            )
            return _info(cursor, name)

    def due_for_destruction(self, now: float) -> builtins.list[str]:
        """The keys whose deletion date has come."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(
                "SELECT name FROM keys WHERE state = ? AND deletion_date <= ? ORDER BY name",
                (PENDING_DELETION, now),
            )
            return [name for (name,) in cursor.fetchall()]

    def destroy_if_due(self, name: str, now: float, before_commit: Callable[[], None]) -> bool:
        """Destroy the key if its deletion date has come, calling `before_commit` before the
        destruction commits (its failure keeps the key): whether this call destroyed it (each
        key is destroyed by exactly one call, whichever process makes it)."""
        # Decided again under the row lock: of the processes that found it due, the first
        # destroys it and the others find nothing.
        with self._session.transaction(write=True) as cursor:
            row = self._row(cursor, name)
            if row is None or row[_STATE] != PENDING_DELETION or row[_DELETION_DATE] > now:
                return False
            _destroy(cursor, name)
            before_commit()
        self._session.secrets_destroyed()
        return True

    def trim(self, name: str, below: int | None = None) -> tuple[KeyInfo, builtins.list[int]]:
        """Destroy the versions below `below`, by default the key's min_decryption_version (and
        never above it): the key, and the versions destroyed."""
        with self._session.transaction(write=True) as cursor:
            row = self._lock(cursor, name)
            _refuse_pending(row)
            minimum = row[_MIN_DECRYPTION] if below is None else min(below, row[_MIN_DECRYPTION])
            cursor.execute(
                "SELECT version FROM key_versions WHERE name = ? AND version < ? ORDER BY version",
                (name, minimum),
            )
            versions = [int(v) for (v,) in cursor.fetchall()]
            ledger.forget(cursor, name, below=minimum)
            cursor.execute(
                "DELETE FROM key_versions WHERE name = ? AND version < ?", (name, minimum)
            )
            if versions:
                cursor.execute(
                    "UPDATE keys SET updated_at = ? WHERE name = ?", (self._clock.now(), name)
                )
            trimmed = _info(cursor, name)
        if versions:
            self._session.secrets_destroyed()
        return trimmed, versions

    def due_rotations(self, now: float) -> builtins.list[tuple[str, int]]:
        """Keys with auto_rotate_seconds whose latest version is at least that old: (name,
        latest version)."""
        with self._session.transaction(write=False) as cursor:
            cursor.execute(
                "SELECT k.name, k.latest_version FROM keys k JOIN key_versions v"
                " ON v.name = k.name AND v.version = k.latest_version"
                " WHERE k.auto_rotate_seconds IS NOT NULL AND k.state = ?"
                " AND v.created_at + k.auto_rotate_seconds <= ? ORDER BY k.name",
                (ACTIVE, now),
            )
            return [(name, int(version)) for name, version in cursor.fetchall()]

    def _refuse_disabled_mount(self, cursor: Cursor, name: str) -> None:
        """MountNotFoundError for a name under a disabled mount's prefix. The mount's row is
        locked as its disabling locks it: a key made meanwhile is made first and scheduled for
        deletion with the mount's others, or refused, never left active."""
        cursor.execute(
            "SELECT path, former_path FROM secret_mounts WHERE key_prefix <> ''"
            " AND substr(?, 1, length(key_prefix)) = key_prefix"
            f"{self._session.dialect.row_lock}",
            (name,),
        )
        for path, former_path in cursor.fetchall():
            if path is None:
                raise MountNotFoundError(former_path)

    def _row(self, cursor: Cursor, name: str) -> tuple[Any, ...] | None:
        """The key's row, held until the transaction ends; None if there is no such key."""
        row_lock = self._session.dialect.row_lock
        cursor.execute(f"SELECT {COLUMNS} FROM keys WHERE name = ?{row_lock}", (name,))
        return cursor.fetchone()

    def _lock(self, cursor: Cursor, name: str) -> tuple[Any, ...]:
        """`_row`, or `KeyNotFoundError`."""
        row = self._row(cursor, name)
        if row is None:
            raise KeyNotFoundError(name)
        return row


def _refuse_pending(row: tuple[Any, ...]) -> None:
    if row[_STATE] == PENDING_DELETION:
        raise KeyPendingDeletionError(row[0], row[_DELETION_DATE])


def _destroy(cursor: Cursor, name: str) -> None:
    ledger.forget(cursor, name)
    cursor.execute("DELETE FROM key_versions WHERE name = ?", (name,))
    cursor.execute("DELETE FROM keys WHERE name = ?", (name,))


def _info(cursor: Cursor, name: str) -> KeyInfo:
    cursor.execute(f"SELECT {COLUMNS} FROM keys WHERE name = ?", (name,))
    row = cursor.fetchone()
    if row is None:
        raise KeyNotFoundError(name)
    cursor.execute(
        "SELECT version, created_at, rotation FROM key_versions WHERE name = ? ORDER BY version",
        (name,),
    )
    versions = tuple(KeyVersionInfo(*row) for row in cursor.fetchall())
    return _key_info(row, versions)


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


def _column_value(value: object) -> object:
    return int(value) if isinstance(value, bool) else value
