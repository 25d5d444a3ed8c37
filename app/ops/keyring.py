"""Unwrapped keys of this process, cached for a short time.

Unwrapping costs a store query and an AES-GCM decryption; a hot key is used thousands of times a
second. Entries live `CIPHERD_KEY_CACHE_SECONDS` at most, which bounds how long another replica's
rotation or deletion goes unseen here; this process's own changes drop the entry at once.
"""

import threading
import time

from anyio.to_thread import run_sync

from app.store import KeyMaterial, KeyStore

MAX_ENTRIES = 4096


class Keyring:
    def __init__(self, store: KeyStore, cache_seconds: float) -> None:
        self.store = store
        self._cache_seconds = cache_seconds
        self._entries: dict[tuple[str, int | None], tuple[float, KeyMaterial]] = {}
        self._lock = threading.Lock()

    def material(self, name: str, version: int | None = None) -> KeyMaterial:
        """One version of a key (the latest when `version` is None)."""
        now = time.monotonic()
        cached = self.cached(name, version, now)
        if cached is not None:
            return cached
        material = self.store.material(name, version)
        if self._cache_seconds > 0:
            with self._lock:
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
                self._entries[(name, version)] = (now + self._cache_seconds, material)
        return material

    def cached(
        self, name: str, version: int | None = None, now: float | None = None
    ) -> KeyMaterial | None:
        """`material` without touching the store: None when only the store can tell."""
        with self._lock:
            entry = self._entries.get((name, version))
        if entry is None or entry[0] <= (time.monotonic() if now is None else now):
            return None
        return entry[1]

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
