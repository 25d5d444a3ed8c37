"""Secrets-engine mounts: Vault's `sys/mounts`, as namespaces of native key names.

The mount `transit` always exists and its key names are the native names themselves, so that
`transit/encrypt/orders` encrypts with the key `orders` and a token scoped to `orders*` may call
it. Every other mount has a prefix of its own (`payments.` for the mount `payments`), taken
when it is enabled and never given to another mount: its key `orders` is the native key
`payments.orders`. Disabling a mount detaches it: its path is free at once, and its keys go to
pending deletion under their names, restorable within the deletion window (`POST
/v1/keys/{name}/restore`), where Vault would destroy them. The mount `transit` holds the
service's own keys and cannot be disabled.

Each process keeps the table for `CIPHERD_KEY_CACHE_SECONDS`, the time a disabled mount's keys
stay usable elsewhere, as for any deleted key.
"""

import re
import secrets
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.ops.errors import Problem, invalid_input
from app.ops.keyring import Keyring
from app.ops.work import SharedRead
from app.settings import Settings
from app.store import (
    KeyNotFoundError,
    KeyPendingDeletionError,
    KeyStore,
    MountExistsError,
    MountMigration,
    MountNotFoundError,
    SecretMount,
)

ENGINE = "transit"
# The OpenBao release whose answers the Vault paths match.
OPENBAO_RELEASE = "2.7.2"
DEFAULT = SecretMount(
    accessor="transit_00000000",
    path=ENGINE,
    type=ENGINE,
    key_prefix="",
    description="the service's own keys, as Vault's Transit secrets engine",
    created_at=0.0,
)
# A mount's path: at most four segments of letters, digits, '-', '_' and '.', separated by '/'.
PATH_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,47}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,47}){0,3}"
_PATH = re.compile(PATH_PATTERN)


@dataclass(frozen=True)
class Found:
    """The mount a request's path is under, and the rest of the path."""

    mount: SecretMount
    rest: str


# How many key prefixes a mount's enabling draws when mounts enabled at once take them.
_PREFIX_ATTEMPTS = 3


class Mounts:
    """The mount table of one process: cached for `cache_seconds`, refreshed at once after a
    change made here. `reserved` are the first path segments the native API uses (no mount
    may shadow them)."""

    def __init__(self, store: KeyStore, cache_seconds: float) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self.reserved: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._table: dict[str, SecretMount] | None = None
        self._read_at = 0.0
        self._shared = SharedRead(self.table)

    def _cached(self) -> dict[str, SecretMount] | None:
        """The table by path, if this process read it recently enough; None otherwise."""
        if self._table is not None and time.monotonic() - self._read_at < self.cache_seconds:
            return self._table
        return None

    async def current_table(self) -> dict[str, SecretMount]:
        """The table for a request on the event loop: the cached one, else one read in a worker
        thread for all the requests that find the cache stale together (a thread hop each, the
        moment it expires, cost a wave of small requests more than their work)."""
        cached = self._cached()
        if cached is not None:
            return cached
        return await self._shared(time.monotonic() - self.cache_seconds)

    def table(self) -> dict[str, SecretMount]:
        """The attached mounts by path, `transit` first (may query the store)."""
        cached = self._cached()
        if cached is not None:
            return cached
        return self._refresh()

    def _refresh(self) -> dict[str, SecretMount]:
        rows = self.store.secret_mounts.all()
        table = {ENGINE: DEFAULT}
        table.update({m.path: m for m in rows if m.path is not None})
        with self._lock:
            self._table, self._read_at = table, time.monotonic()
        return table

    def other_prefixes(self) -> tuple[str, ...]:
        """The prefixes of every mount but `transit`, detached ones too: the native names
        that are not `transit`'s keys."""
        return tuple(m.key_prefix for m in self.store.secret_mounts.all())

    def enable(self, path: str, engine: str, description: str) -> SecretMount:
        """Mount a Transit engine at `path` (400 for another engine, a path in use, under or
        over another mount, or one the native API uses)."""
        path = path.strip("/")
        if path == ENGINE and engine == ENGINE:
            # Vault starts without it, so enabling it is the first step of its guides: here it
            # is always mounted, and enabling it again is no change.
            return self.table()[ENGINE]
        if engine != ENGINE:
            raise invalid_input(
                f"plugin not found in the catalog: {engine}; this service mounts {ENGINE!r} only"
            )
        self._check_path(path)
        for attempt in range(_PREFIX_ATTEMPTS):
            mount = SecretMount(
                accessor=f"transit_{secrets.token_hex(4)}",
                path=path,
                type=engine,
                key_prefix=self._free_prefix(path),
                description=description,
                created_at=self.store.clock.now(),
            )
            try:
                self.store.secret_mounts.add(mount, fixed=(ENGINE,))
                break
            except MountExistsError:
                # A mount enabled meanwhile at another path of the same prefix (`a/x` beside
                # `a-x`) took it: draw the next one. At this path, the path is the clash.
                taken = self.store.secret_mounts.prefix_taken(mount.key_prefix)
                if not taken or attempt == _PREFIX_ATTEMPTS - 1:
                    raise
        self._refresh()
        return mount

    def move(self, path: str, target: str, migration: MountMigration) -> None:
        """Move the mount at `path` to `target` (400 for `transit`, whose keys are the service's
        own, and for a path `enable` would refuse; the store's errors otherwise)."""
        if path == ENGINE:
            raise invalid_input(
                f'cannot remount "{ENGINE}/": the service\'s own keys are always mounted there'
            )
        self._check_path(target)
        try:
            self.store.secret_mounts.move(path, target, migration, fixed=(ENGINE,))
        finally:
            self._refresh()

    def _check_path(self, path: str) -> None:
        """400 for a path no mount may have, the native API's among them (whether another
        mount is at it, under it or over it is the store's to say)."""
        check_path(path)
        if path.split("/")[0] in self.reserved:
            raise invalid_input(f"path {path!r} is one the service's native API uses")

    def _free_prefix(self, path: str) -> str:
        """`path.` (its '/' as '-'), or with `-2`, `-3`, ... when a mount, detached or not, or
        a native key already has it."""
        base = path.replace("/", "-")
        for n in range(1, 10_000):
            prefix = f"{base}." if n == 1 else f"{base}-{n}."
            if self.store.secret_mounts.prefix_taken(prefix):
                continue
            if self.store.keys.list(limit=1, patterns=[f"{prefix}*"]):
                continue
            return prefix
        raise invalid_input(f"path {path!r}: no free key prefix")  # pragma: no cover

    def detach(self, path: str) -> SecretMount:
        """Free the path of the mount at `path` (`MountNotFoundError` if none); the mount as
        the store had it."""
        mount = self.store.secret_mounts.detach(path, self.store.clock.now())
        self._refresh()
        return mount


def check_path(path: str) -> None:
    """400 for a path no mount may have, Transit mount or auth method."""
    if not _PATH.fullmatch(path):
        raise invalid_input(
            f"path {path[:64]!r}: segments of letters, digits, '-', '_' and '.', at most 4"
        )


def resolve(table: dict[str, SecretMount], path: str) -> Found | None:
    """The mount `path` (below /v1/) is under, the longest mount path first."""
    parts = path.split("/")
    for depth in range(min(len(parts) - 1, 4), 0, -1):
        mount = table.get("/".join(parts[:depth]))
        if mount is not None:
            return Found(mount, "/".join(parts[depth:]))
    return None


def native_name(mount: SecretMount, name: str) -> str:
    return mount.key_prefix + name


def nested_prefixes(own: str, prefixes: Iterable[str]) -> tuple[str, ...]:
    """The other mounts' prefixes that start with the prefix `own` (every other for
    `transit`'s, which is empty): the native names under them are those mounts' keys, not its
    own."""
    return tuple(p for p in prefixes if p != own and p.startswith(own))


def transit_names(mount: SecretMount, names: Iterable[str], others: Sequence[str]) -> list[str]:
    """The mount's key names among native `names`: those with its prefix and none of the
    other mounts' within it (`others`), without its prefix."""
    own = mount.key_prefix
    nested = nested_prefixes(own, others)
    return [n.removeprefix(own) for n in names if n.startswith(own) and not n.startswith(nested)]


def mount_entry(mount: SecretMount) -> dict[str, Any]:
    """A mount as `sys/mounts` shows it; `key_prefix` is the service's own: what the mount's
    key names are known as in the native API."""
    return {
        "accessor": mount.accessor,
        "config": {"default_lease_ttl": 0, "force_no_cache": False, "max_lease_ttl": 0},
        "deprecation_status": "supported",
        "description": mount.description,
        "external_entropy_access": False,
        "local": False,
        "options": {},
        "plugin_version": "",
        "running_plugin_version": f"v{OPENBAO_RELEASE}+builtin.cipherd",
        "running_sha256": "",
        "seal_wrap": False,
        "type": mount.type,
        "uuid": mount_uuid(mount),
        "key_prefix": mount.key_prefix,
    }


def mount_uuid(mount: SecretMount) -> str:
    """A stable UUID for the mount, as Vault shows one (from its accessor)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"cipherd:mount:{mount.accessor}"))


def not_mounted(path: str) -> Problem:
    return invalid_input(f"No secret engine mount at {path.strip('/')[:128]}/")


def disable(mounts: Mounts, keyring: Keyring, path: str, settings: Settings) -> list[str]:
    """Disable the mount at `path`: its path is free at once, and each of its active keys is
    scheduled for deletion after the deletion window (the names scheduled), those with
    deletion protection too (as Vault destroys a mount's keys whatever their
    `deletion_allowed`): the protection is theirs again if they are restored."""
    store = mounts.store
    path = path.strip("/")
    if path == ENGINE:
        raise invalid_input("the mount transit holds the service's own keys and cannot be disabled")
    try:
        # The store's row, not this process's table: that may be as old as a move since.
        mount = mounts.detach(path)
    except MountNotFoundError:
        return []  # as Vault: disabling what is not mounted leaves it so
    held = [k for k in store.keys.list(patterns=[f"{mount.key_prefix}*"]) if k.state == "active"]
    due = store.clock.now() + settings.deletion_window_seconds
    scheduled = []
    for info in held:
        try:
            store.keys.schedule_deletion(info.name, due, protected_too=True)
        except (KeyPendingDeletionError, KeyNotFoundError):
            continue  # deleted since it was listed
        keyring.forget(info.name)
        scheduled.append(info.name)
    return scheduled
