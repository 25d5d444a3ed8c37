"""Vault's `sys/remount`: a Transit mount or an auth method moved to another path.

Vault queues a move and reports it by id (`sys/remount/status/:id`, which `bao secrets move`
and `bao auth move` poll). Here a move is one transaction, done when answered: its id reads
`success` for a week (`app.store.mount_migrations`). A Transit mount keeps its accessor and
key prefix, so its keys, the scopes that name them and its `config/keys` move with it; an auth
method keeps its roles and settings, and its tokens are revoked, as Vault revokes them.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from app.ops.auth_mounts import AuthMounts
from app.ops.errors import invalid_input
from app.ops.grants import AdminOperation
from app.ops.transit.mounts import Mounts
from app.store import KeyStore, MountExistsError, MountMigration, MountNotFoundError

# The paths no move may start or end under, and the auth methods that stay, as Vault's
# (`protectedMounts` and `protectedAuths` in OpenBao's internal/vault).
PROTECTED = ("audit/", "auth/", "sys/", "cubbyhole/", "identity/")
PROTECTED_AUTH = ("auth/token",)
AUTH = "auth/"


@dataclass(frozen=True)
class Move:
    """A move as asked: its paths as Vault names them (`pay/`, `auth/ci/`), and which table it
    changes."""

    source: str
    target: str
    auth: bool

    @property
    def path(self) -> str:
        """The source's path in its table (`pay`, `ci`)."""
        return _in_table(self.source, self.auth)

    @property
    def destination(self) -> str:
        return _in_table(self.target, self.auth)

    @property
    def needs(self) -> AdminOperation:
        """The admin operation the move takes: that of the table it changes."""
        return AdminOperation.AUTH if self.auth else AdminOperation.SYS


def planned(source: str, target: str) -> Move:
    """The move from `source` to `target`, refused as Vault refuses it, in its order (400)."""
    if not source or not target:
        raise invalid_input("both 'from' and 'to' path must be specified as a string")
    for name, path in (("from", source), ("to", target)):
        if path != path.strip(" "):
            raise invalid_input(f"'{name}' path cannot contain trailing whitespace")
    source, target = _sanitized(source), _sanitized(target)
    if source.startswith(AUTH):
        if not target.startswith(AUTH):
            raise invalid_input(f'cannot remount auth mount to non-auth mount "{target}"')
        if source.startswith(PROTECTED_AUTH):
            raise invalid_input(f'cannot remount "{source}"')
        if target.startswith(PROTECTED_AUTH):
            raise invalid_input(f'cannot remount to destination "{target}"')
        return Move(source, target, True)
    if source.startswith(PROTECTED):
        raise invalid_input(f'cannot remount "{source}"')
    if target.startswith(PROTECTED):
        raise invalid_input(f"cannot remount to destination {target}")
    return Move(source, target, False)


def _in_table(path: str, auth: bool) -> str:
    """A mount's path as its table keys it: an auth method's below `auth/`, no trailing '/'."""
    return (path.removeprefix(AUTH) if auth else path).strip("/")


def _sanitized(path: str) -> str:
    """A mount path as Vault keys its table: no leading '/', one trailing '/'."""
    return path.strip("/") + "/"


def move(mounts: Mounts, auth_mounts: AuthMounts, asked: Move) -> MountMigration:
    """Make the move and its record, in one transaction (400 as Vault when nothing is at its
    source, or something at its target)."""
    migration = MountMigration(
        str(uuid.uuid4()), asked.source, asked.target, mounts.store.clock.now()
    )
    try:
        if asked.auth:
            auth_mounts.move(asked.path, asked.destination, migration)
        else:
            mounts.move(asked.path, asked.destination, migration)
    except MountNotFoundError:
        raise invalid_input(f'no matching mount at "{asked.source[:128]}"') from None
    except MountExistsError as taken:
        shown = f"{AUTH}{taken.path}/" if asked.auth else f"{taken.path}/"
        raise invalid_input(f'path already in use at "{shown}"') from None
    return migration


def status(store: KeyStore, migration_id: str) -> dict[str, Any] | None:
    """A move's status as Vault's `sys/remount/status/:id` gives it; None for an id unknown."""
    migration = store.mount_migrations.get(migration_id)
    if migration is None:
        return None
    return {
        "migration_id": migration.id,
        "migration_info": {
            "source_mount": migration.source,
            "target_mount": migration.target,
            "status": "success",
        },
    }
