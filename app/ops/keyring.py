"""Unwrapped keys of this process, cached for a short time, and kept through a store outage.

Unwrapping costs a store query and an AES-GCM decryption; a hot key is used thousands of times a
second. Entries live `CIPHERD_KEY_CACHE_SECONDS`, which bounds how long another replica's
rotation or deletion goes unseen here; this process's own changes drop the entry at once.

While the store does not answer (StoreUnavailableError), an entry fetched within the last
`CIPHERD_OUTAGE_GRACE_SECONDS` goes on serving from memory, without waiting for the store, and
past that it fails closed like any other: the grace bounds how long a change made elsewhere
meanwhile goes unseen. During the outage a thread of its own asks the store again, once per
RETRY_SECONDS, and the first answer ends the outage for every cache of that store.
`StoreCache` does this for the keys here and for the token lookups of `app.ops.auth`.
"""

import threading
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from anyio.to_thread import run_sync

from app.ops.keytypes import KEY_TYPES
from app.server.metrics import CACHE_BYTES, CACHE_ENTRIES
from app.store import KeyMaterial, KeyStore, KeyStoreError, StoreUnavailableError

MAX_ENTRIES = 4096
# While the store is down, how often a lookup asks it again.
RETRY_SECONDS = 1.0

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Outage:
    """Whether a store is taken to be down: its last call through a cache did not answer, and
    none has since. Shared by the caches of one store, so that a request that looks up a token
    and then a key waits for it once at most."""

    def __init__(self) -> None:
        self.down = False
        self.retry_at = 0.0  # monotonic: when the next retry may start
        self.lock = threading.Lock()

    def failed(self) -> None:
        with self.lock:
            self.down = True
            self.retry_at = time.monotonic() + RETRY_SECONDS

    def answered(self) -> None:
        self.down = False

    def claim_retry(self) -> bool:
        """Whether the caller is to ask the store again now (at most once per RETRY_SECONDS)."""
        with self.lock:
            now = time.monotonic()
            if not self.down or now < self.retry_at:
                return False
            self.retry_at = now + RETRY_SECONDS
            return True


_outages: "weakref.WeakKeyDictionary[KeyStore, Outage]" = weakref.WeakKeyDictionary()
_outages_lock = threading.Lock()


def store_outage(store: KeyStore) -> Outage:
    """The one outage state of `store`, shared by its caches and the auth check."""
    with _outages_lock:
        return _outages.setdefault(store, Outage())


@dataclass(frozen=True)
class Weight:
    """A byte bound on a cache: what each answer weighs, and the most they may weigh in all
    (reported in /metrics as cipherd_cache_bytes of cache `name`)."""

    name: str
    weigh: Callable[[Any], int]
    max_bytes: int


class StoreCache(Generic[K, V]):
    """Answers of `store` by key, from `fetch`: fresh for `cache_seconds`, and while the store
    does not answer, kept for `grace_seconds` from their fetching (nothing is kept with no
    cache time). At most `max_entries` of them, and with a `weight`, that many bytes. `alias`
    names another key a fetched answer also answers, if there is one (kept as an entry of its
    own)."""

    def __init__(
        self,
        store: KeyStore,
        fetch: Callable[[K], V],
        cache_seconds: float,
        grace_seconds: float,
        max_entries: int,
        weight: Weight | None = None,
        alias: Callable[[K, V], K | None] | None = None,
    ) -> None:
        self._fetch = fetch
        self._alias = alias
        self._cache_seconds = cache_seconds
        self._keep_seconds = max(cache_seconds, grace_seconds) if cache_seconds > 0 else 0.0
        self._max_entries = max_entries
        self._weight = weight
        self._bytes = 0
        # When each entry was fetched (monotonic), the answer and its weight.
        self._entries: dict[K, tuple[float, V, int]] = {}
        # Entries past their grace are dropped once per grace (or when the cache is full), so
        # that memory follows what was used lately rather than fill up to the cap.
        self._swept_at = time.monotonic()
        self._outage = store_outage(store)
        self._lock = threading.Lock()

    def cached(self, key: K) -> tuple[V] | None:
        """The answer, in a 1-tuple, if the store need not be asked now; else None."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
        if entry is None:
            return None
        if now < entry[0] + self._cache_seconds:
            return (entry[1],)
        if self._outage.down and now < entry[0] + self._keep_seconds:
            self._retry_later(key)
            return (entry[1],)
        return None

    def load(self, key: K) -> V:
        """The answer, from memory or from the store."""
        hit = self.cached(key)
        if hit is not None:
            return hit[0]
        now = time.monotonic()
        try:
            value = self._fetch(key)
        except StoreUnavailableError:
            self._outage.failed()
            with self._lock:
                entry = self._entries.get(key)
            if entry is not None and now < entry[0] + self._keep_seconds:
                return entry[1]
            raise
        self._outage.answered()
        self._put(key, value, now)
        return value

    def _put(self, key: K, value: V, now: float) -> None:
        if self._cache_seconds <= 0:
            return
        alias = None if self._alias is None else self._alias(key, value)
        for each in (key,) if alias is None else (key, alias):
            self._put_one(each, value, now)

    def _put_one(self, key: K, value: V, now: float) -> None:
        size = 0 if self._weight is None else self._weight.weigh(value)
        max_bytes = None if self._weight is None else self._weight.max_bytes
        if max_bytes is not None and size > max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            if (
                len(self._entries) >= self._max_entries
                or (max_bytes is not None and self._bytes + size > max_bytes)
                or now > self._swept_at + self._keep_seconds
            ):
                self._drop_expired(now, size)
            self._entries[key] = (now, value, size)
            self._bytes += size
            self._report()

    def _report(self) -> None:
        if self._weight is not None:
            CACHE_ENTRIES.labels(self._weight.name).set(len(self._entries))
            CACHE_BYTES.labels(self._weight.name).set(self._bytes)

    def _retry_later(self, key: K) -> None:
        """Ask the store for `key` again on a thread of its own, if no retry is due yet."""
        if self._outage.claim_retry():
            threading.Thread(target=self._retry, args=(key,), daemon=True).start()

    def _retry(self, key: K) -> None:
        now = time.monotonic()
        try:
            value = self._fetch(key)
        except StoreUnavailableError:
            self._outage.failed()
            return
        except KeyStoreError:  # the store answered otherwise (the key is gone): fail closed
            self._outage.answered()
            self.discard(lambda k, _: k == key)
            return
        self._outage.answered()
        self._put(key, value, now)

    def discard(self, drop: Callable[[K, V], bool]) -> None:
        """Drop the entries `drop` picks (after this process changed what they hold)."""
        with self._lock:
            self._entries = {k: e for k, e in self._entries.items() if not drop(k, e[1])}
            self._bytes = sum(entry[2] for entry in self._entries.values())
            self._report()

    def _drop_expired(self, now: float, room: int) -> None:
        """Drop entries past their grace (the lock held), and all of them if there is still no
        room for one more of `room` bytes."""
        self._swept_at = now
        self._entries = {
            key: entry
            for key, entry in self._entries.items()
            if now < entry[0] + self._keep_seconds
        }
        self._bytes = sum(entry[2] for entry in self._entries.values())
        max_bytes = None if self._weight is None else self._weight.max_bytes
        if len(self._entries) >= self._max_entries or (
            max_bytes is not None and self._bytes + room > max_bytes
        ):
            self._entries.clear()
            self._bytes = 0


# What a cached key weighs beside its secret, its public part and what its type prepares (the
# object, its name, params).
KEY_OVERHEAD_BYTES = 512


def _key_bytes(material: KeyMaterial) -> int:
    prepared = KEY_TYPES[material.type].prepared_bytes
    return KEY_OVERHEAD_BYTES + len(material.secret) + len(material.public or b"") + prepared


def _other_name(
    key: tuple[str, int | None], material: KeyMaterial
) -> tuple[str, int | None] | None:
    """The latest version is asked for by number as well as by None (a payload's envelope or a
    bare payload's trial names it): one fetch answers both, so that through a store outage every
    verb finds what the last request unwrapped, whichever way it names the version."""
    name, version = key
    if version is None:
        return name, material.version
    return (name, None) if version == material.latest_version else None


class Keyring:
    def __init__(
        self,
        store: KeyStore,
        cache_seconds: float,
        grace_seconds: float,
        max_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.store = store
        self._cache: StoreCache[tuple[str, int | None], KeyMaterial] = StoreCache(
            store,
            self._unwrap,
            cache_seconds,
            grace_seconds,
            MAX_ENTRIES,
            Weight("unwrapped_keys", _key_bytes, max_bytes),
            _other_name,
        )

    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        """One version of a key (the latest when `version` is None)."""
        return self._cache.load((name, version))

    def _unwrap(self, key: tuple[str, int | None]) -> KeyMaterial:
        material = self.store.keys.material(*key)
        prepare = KEY_TYPES[material.type].prepare
        return material if prepare is None else replace(material, prepared=prepare(material.secret))

    def cached(self, name: str, version: int | None = None) -> KeyMaterial | None:
        """`material` without touching the store: None when only the store can tell."""
        hit = self._cache.cached((name, version))
        return None if hit is None else hit[0]

    async def fetch(self, name: str, version: int | None = None) -> KeyMaterial:
        """`material` for a coroutine: a cached key is answered on the event loop, and only a
        store query (a miss) goes to a worker thread."""
        material = self.cached(name, version)
        if material is None:
            material = await run_sync(self.material, name, version)
        return material

    def forget(self, name: str) -> None:
        """Drop every cached version of a key after this process changed it."""
        self._cache.discard(lambda key, _: key[0] == name)
