"""Unwrapped keys of this process, cached for a short time, and kept through a store outage.

Unwrapping costs a store query and an AES-GCM decryption; a hot key is used thousands of times a
second. Entries live `CIPHERD_KEY_CACHE_SECONDS`, which bounds how long another replica's
rotation or deletion goes unseen here; this process's own changes drop the entry at once.

While the store does not answer (StoreUnavailableError), an entry fetched within the last
`CIPHERD_OUTAGE_GRACE_SECONDS` goes on serving from memory, and past that it fails closed like
any other: the grace bounds how long a change made elsewhere meanwhile goes unseen. During the
outage one lookup per RETRY_SECONDS asks the store again, and the others are answered from
memory without waiting for it. `StoreCache` does this for the keys here and for the token
lookups of `app.ops.auth`.
"""

import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from anyio.to_thread import run_sync

from app.store import KeyMaterial, KeyStore, StoreUnavailableError

MAX_ENTRIES = 4096
# While the store is down, how often a lookup asks it again.
RETRY_SECONDS = 1.0

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Hold:
    """Until `until` (monotonic), the caches of one store serve entries past their cache time
    but within the grace as they are: a lookup is asking the store already, or the store did
    not answer. Shared by all of them, so that a request that looks up a token and then a key
    waits for the store once at most (each cache sets it under its own lock: a race between two
    only moves the next retry)."""

    def __init__(self) -> None:
        self.until = 0.0


_holds: "weakref.WeakKeyDictionary[KeyStore, _Hold]" = weakref.WeakKeyDictionary()
_holds_lock = threading.Lock()


def _hold_of(store: KeyStore) -> _Hold:
    with _holds_lock:
        return _holds.setdefault(store, _Hold())


class StoreCache(Generic[K, V]):
    """Answers of `store` by key: fresh for `cache_seconds`, and while the store does not
    answer, kept for `grace_seconds` from their fetching (nothing is kept with no cache time)."""

    def __init__(
        self, store: KeyStore, cache_seconds: float, grace_seconds: float, max_entries: int
    ) -> None:
        self._cache_seconds = cache_seconds
        self._keep_seconds = max(cache_seconds, grace_seconds) if cache_seconds > 0 else 0.0
        self._max_entries = max_entries
        # When each entry was fetched (monotonic), and the answer.
        self._entries: dict[K, tuple[float, V]] = {}
        # Entries past their grace are dropped once per grace (or when the cache is full), so
        # that memory follows what was used lately rather than fill up to the cap.
        self._swept_at = time.monotonic()
        self._hold = _hold_of(store)
        self._lock = threading.Lock()

    def cached(self, key: K) -> tuple[V] | None:
        """The answer, in a 1-tuple, if the store need not be asked; else None."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if now < entry[0] + self._cache_seconds or (
                now < self._hold.until and now < entry[0] + self._keep_seconds
            ):
                return (entry[1],)
            return None

    def load(self, key: K, fetch: Callable[[K], V]) -> V:
        """The answer, from memory or from `fetch` (a store call)."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and now < entry[0] + self._cache_seconds:
                return entry[1]
            kept = entry is not None and now < entry[0] + self._keep_seconds
            if kept and now < self._hold.until:
                return entry[1]  # type: ignore[index]
            if kept:  # this lookup asks the store, the others need not wait for it
                self._hold.until = now + RETRY_SECONDS
        try:
            value = fetch(key)
        except StoreUnavailableError:
            with self._lock:
                self._hold.until = time.monotonic() + RETRY_SECONDS
            if kept:
                return entry[1]  # type: ignore[index]
            raise
        if self._cache_seconds > 0:
            with self._lock:
                self._hold.until = 0.0
                if len(self._entries) >= self._max_entries or (
                    now > self._swept_at + self._keep_seconds
                ):
                    self._drop_expired(now)
                self._entries[key] = (now, value)
        return value

    def discard(self, drop: Callable[[K, V], bool]) -> None:
        """Drop the entries `drop` picks (after this process changed what they hold)."""
        with self._lock:
            self._entries = {k: e for k, e in self._entries.items() if not drop(k, e[1])}

    def _drop_expired(self, now: float) -> None:
        """Drop entries past their grace (the lock held), and all of them if still full."""
        self._swept_at = now
        self._entries = {
            key: entry
            for key, entry in self._entries.items()
            if now < entry[0] + self._keep_seconds
        }
        if len(self._entries) >= self._max_entries:
            self._entries.clear()


class Keyring:
    def __init__(self, store: KeyStore, cache_seconds: float, grace_seconds: float) -> None:
        self.store = store
        self._cache: StoreCache[tuple[str, int | None], KeyMaterial] = StoreCache(
            store, cache_seconds, grace_seconds, MAX_ENTRIES
        )

    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        """One version of a key (the latest when `version` is None)."""
        return self._cache.load((name, version), self._unwrap)

    def _unwrap(self, key: tuple[str, int | None]) -> KeyMaterial:
        return self.store.material(*key)

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
