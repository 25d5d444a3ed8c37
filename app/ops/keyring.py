"""Unwrapped keys of this process, cached for a short time, and kept through a store outage.

Unwrapping costs a store query and an AES-GCM decryption; a hot key is used thousands of times a
second. Entries live `CIPHERD_KEY_CACHE_SECONDS`, which bounds how long another replica's
rotation or deletion goes unseen here; this process's own changes drop the entry at once.

While the store does not answer (StoreUnavailableError), a key unwrapped within the last
`CIPHERD_OUTAGE_GRACE_SECONDS` goes on serving from memory, and past that it fails closed like
any other: the grace bounds how long a change made elsewhere meanwhile goes unseen. During the
outage one lookup per RETRY_SECONDS asks the store again, and the others are answered from
memory without waiting for it.
"""

import threading
import time

from anyio.to_thread import run_sync

from app.store import KeyMaterial, KeyStore, StoreUnavailableError

MAX_ENTRIES = 4096
# While the store is down, how often a lookup asks it again.
RETRY_SECONDS = 1.0

_Key = tuple[str, int | None]


class Keyring:
    def __init__(self, store: KeyStore, cache_seconds: float, grace_seconds: float) -> None:
        self.store = store
        self._cache_seconds = cache_seconds
        self._keep_seconds = max(cache_seconds, grace_seconds) if cache_seconds > 0 else 0.0
        # When each entry was unwrapped (monotonic), and its material.
        self._entries: dict[_Key, tuple[float, KeyMaterial]] = {}
        # Until then (monotonic), entries past the cache time but within the grace are served
        # as they are: a lookup is asking the store already, or the store did not answer.
        self._hold_until = 0.0
        self._lock = threading.Lock()

    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        """One version of a key (the latest when `version` is None)."""
        now = time.monotonic()
        with self._lock:
            kept = self._kept(name, version, now)
            if kept is not None:
                return kept
            held = self._held(name, version, now)
            if held is not None:  # this lookup asks the store, the others need not wait
                self._hold_until = now + RETRY_SECONDS
        try:
            material = self.store.material(name, version)
        except StoreUnavailableError:
            with self._lock:
                self._hold_until = time.monotonic() + RETRY_SECONDS
            if held is not None:
                return held
            raise
        if self._cache_seconds > 0:
            with self._lock:
                self._hold_until = 0.0
                if len(self._entries) >= MAX_ENTRIES:
                    self._drop_expired(now)
                self._entries[(name, version)] = (now, material)
        return material

    def _kept(self, name: str, version: int | None, now: float) -> KeyMaterial | None:
        """The entry within its cache time, or within its grace while held (the lock held)."""
        entry = self._entries.get((name, version))
        if entry is None:
            return None
        if now < entry[0] + self._cache_seconds:
            return entry[1]
        if now < self._hold_until and now < entry[0] + self._keep_seconds:
            return entry[1]
        return None

    def _held(self, name: str, version: int | None, now: float) -> KeyMaterial | None:
        """The entry within its grace, whatever the hold (the lock held)."""
        entry = self._entries.get((name, version))
        return entry[1] if entry is not None and now < entry[0] + self._keep_seconds else None

    def cached(self, name: str, version: int | None = None) -> KeyMaterial | None:
        """`material` without touching the store: None when only the store can tell."""
        with self._lock:
            return self._kept(name, version, time.monotonic())

    async def fetch(self, name: str, version: int | None = None) -> KeyMaterial:
        """`material` for a coroutine: a cached key is answered on the event loop, and only a
        store query (a miss) goes to a worker thread."""
        material = self.cached(name, version)
        if material is None:
            material = await run_sync(self.material, name, version)
        return material

    def forget(self, name: str) -> None:
        """Drop every cached version of a key after this process changed it."""
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k[0] != name}

    def _drop_expired(self, now: float) -> None:
        """Make room (the lock held): entries past their grace, or all of them."""
        self._entries = {
            key: entry
            for key, entry in self._entries.items()
            if now < entry[0] + self._keep_seconds
        }
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
