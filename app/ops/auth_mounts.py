"""Auth methods mounted under /v1/auth/ (Vault's `sys/auth`): where each login method listens.

`token` is built in at `auth/token`, and AppRole at `auth/approle`: neither can be moved or
disabled (enabling AppRole at `approle` again is a success that changes nothing). The other
types (`approle` elsewhere, `jwt` and its alias `oidc`, `cert`) are enabled at a path of the
caller's choosing; a login
method's routes are declared once, at `/v1/auth/<family>/...` (`FAMILIES`), and a request to
another mount of the type is routed to them with its mount noted (`app.http.auth_mounts`).
Disabling a mount revokes every token it issued, and forgets an AppRole mount's roles; moving
one (`sys/remount`) revokes its tokens too, as in Vault, and keeps its roles. The
table is read again whenever the auth generation moved (`app.ops.auth`), so every replica
routes by a change from its next request.
"""

import secrets
import threading
import uuid
from typing import Any

from app.ops.auth import Authenticator
from app.ops.errors import Problem, invalid_input
from app.ops.transit.mounts import OPENBAO_RELEASE, check_path
from app.store import (
    AuthMount,
    KeyStore,
    MountExistsError,
    MountMigration,
    MountNotFoundError,
)

# Each type a mount may have, and the family of routes that serves it.
FAMILIES = {"approle": "approle", "jwt": "jwt", "oidc": "jwt", "cert": "cert", "token": "token"}


def _built_in(type_: str, description: str) -> AuthMount:
    """A mount every service has, at its type's own path."""
    return AuthMount(
        accessor=f"auth_{type_}_00000000",
        path=type_,
        type=type_,
        description=description,
        config={},
        created_at=0.0,
    )


TOKEN = _built_in("token", "token based credentials")
APPROLE = _built_in("approle", "AppRole, mounted by default")
BUILT_IN = {TOKEN.path: TOKEN, APPROLE.path: APPROLE}


class AuthMounts:
    """The auth mount table of one process, read again when the auth generation moves."""

    def __init__(self, store: KeyStore, auth: Authenticator) -> None:
        self.store = store
        self._auth = auth
        self._lock = threading.Lock()
        self._table: tuple[int, dict[str, AuthMount]] | None = None

    def table(self) -> dict[str, AuthMount]:
        """The mounts by path, `token` first (queries the store: off the event loop)."""
        generation = self._auth.state().generation
        with self._lock:
            cached = self._table
        if cached is not None and cached[0] == generation:
            return cached[1]
        table = dict(BUILT_IN)
        table.update({mount.path: mount for mount in self.store.auth_mounts.all()})
        with self._lock:
            self._table = (generation, table)
        return table

    def find(self, path: str) -> AuthMount:
        """The mount at `path` (400 as Vault, if none)."""
        mount = self.table().get(path.strip("/"))
        if mount is None:
            raise invalid_input(f"no auth method mounted at auth/{path.strip('/')[:128]}/")
        return mount

    def enable(self, path: str, method: str, description: str, config: dict[str, Any]) -> AuthMount:
        """Mount a login method of type `method` at `path` (400 for an unknown type, `token`,
        a path in use, under or over another mount)."""
        path = path.strip("/")
        if method not in FAMILIES:
            raise invalid_input(
                f"plugin not found in the catalog: {method[:64]}; this service mounts {_types()}"
            )
        if method == "token":
            raise invalid_input("token credential backend cannot be instantiated")
        if path == APPROLE.path and method == APPROLE.type:
            return APPROLE
        check_path(path)
        mount = AuthMount(
            accessor=f"auth_{method}_{secrets.token_hex(4)}",
            path=path,
            type=method,
            description=description,
            config=config,
            created_at=self.store.clock.now(),
        )
        try:
            self.store.auth_mounts.add(mount, fixed=tuple(BUILT_IN))
        except MountExistsError as taken:
            raise _in_use(taken.path) from None
        return mount

    def move(self, path: str, target: str, migration: MountMigration) -> None:
        """Move the method at `path` to `target`, revoking its tokens (400 for a built-in method
        and for a path `enable` would refuse; the store's errors otherwise)."""
        if path in BUILT_IN:
            raise invalid_input(f'cannot remount "auth/{path}/": a built-in method stays here')
        check_path(target)
        self.store.auth_mounts.move(path, target, migration, fixed=tuple(BUILT_IN))

    def configure(self, path: str, config: dict[str, Any]) -> AuthMount:
        """Replace the method's settings at `path` (what a login method keeps of its mount)."""
        try:
            return self.store.auth_mounts.configure(path.strip("/"), config)
        except MountNotFoundError:
            raise invalid_input(
                f"no auth method mounted at auth/{path.strip('/')[:128]}/"
            ) from None

    def disable(self, path: str) -> AuthMount | None:
        """Unmount the method at `path`, revoke its tokens and forget its roles (None if nothing
        was there, which Vault answers as a success too; 400 for a built-in mount)."""
        path = path.strip("/")
        if path in BUILT_IN:
            raise invalid_input(f"the built-in auth method at auth/{path}/ cannot be disabled")
        try:
            removed = self.store.auth_mounts.remove(path)
        except MountNotFoundError:
            return None
        if removed.type == "approle":
            self.store.approle.delete_mount(removed.accessor)
        return removed


def _types() -> str:
    return ", ".join(sorted(FAMILIES))


def _in_use(path: str) -> Problem:
    return Problem(400, "mount-exists", "Mount exists", f"path is already in use at {path}/")


def auth_entry(mount: AuthMount) -> dict[str, Any]:
    """A mount as `sys/auth` shows it."""
    entry: dict[str, Any] = {
        "accessor": mount.accessor,
        "config": {
            "default_lease_ttl": 0,
            "force_no_cache": False,
            "max_lease_ttl": 0,
            "token_type": "default-service",
        },
        "description": mount.description,
        "external_entropy_access": False,
        "local": False,
        "options": None if mount.type == "token" else {},
        "plugin_version": "",
        "running_plugin_version": f"v{OPENBAO_RELEASE}+builtin.cipherd",
        "running_sha256": "",
        "seal_wrap": False,
        "type": mount.type,
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"cipherd:auth:{mount.accessor}")),
    }
    if mount.type != "token":  # as Vault: the built-in method has no deprecation status
        entry["deprecation_status"] = "supported"
    return dict(sorted(entry.items()))
