"""Process-memory caches that make repeated FE decryptions cheap.

* Discrete-log tables, per (base, table size), bounded in bytes (each curve's gT is a base of
  its own): a table takes a while to build (docs/performance/choices.md) and then answers at
  once. The size follows the width of the range, not where it lies, so moving a range reuses its
  table.
* Functional keys, per digest of their bytes, bounded in bytes and entries: decoding checks
  every point's subgroup, so a key seen before skips that; a key seen twice is prepared (its
  pairing lines precomputed), which takes about a third off each later decryption. A caller may
  send any number of distinct keys: a prepared tao key of n = 128 holds about 4 MB.
* Decoded master and public keys, per key version, bounded in bytes and entries, so keygen and
  QFE encryption skip decoding.

The memory of a decoded or prepared key lives in RELIC's and mcl's objects, out of Python's
sight: it is weighed from its encoding's length, by factors measured as the growth of the
process's RSS over many keys (decoded: 1.1-1.5 times the encoding on BLS12-381, 5-6 times on
BN254; prepared: 123-171 times on BLS12-381, nothing more on BN254), rounded up.

Each cache reports hits, misses, entries, bytes and build times to /metrics.
"""

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from app.server.metrics import CACHE_BUILD_SECONDS, CACHE_BYTES, CACHE_ENTRIES, CACHE_EVENTS
from core.fe.dlog import DlogTable, baby_steps_for
from core.fe.schemes import Scheme, TableBase

# The longest search the event loop makes: a full sweep of this many giant steps, a small
# fraction of a millisecond. A table of the widest ranges (2^32 values over 2^20 baby steps)
# may need 2048, which is work for a thread.
INLINE_GIANT_STEPS = 16


# Memory of a decoded and of a prepared key per byte of its encoding (see above).
DECODED_BYTES_PER_BYTE = 6
PREPARED_BYTES_PER_BYTE = 180


class LruCache:
    """A least-recently-used map bounded by a total weight in bytes (reported as
    cipherd_cache_bytes) and, if given, a number of entries; built on demand.

    Concurrent requests for the same missing key build it once: the others wait for the first.
    """

    def __init__(self, name: str, budget: int, max_entries: int | None = None) -> None:
        self.name = name
        self.budget = budget
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, build: Callable[[], Any], weigh: Callable[[Any], int]) -> Any:
        value = self._lookup(key)
        if value is not None:
            return value
        with self._lock:
            build_lock = self._building.setdefault(key, threading.Lock())
        try:
            with build_lock:
                value = self._lookup(key, count=False)
                if value is not None:
                    return value
                CACHE_EVENTS.labels(self.name, "miss").inc()
                started = time.perf_counter()
                value = build()
                CACHE_BUILD_SECONDS.labels(self.name).observe(time.perf_counter() - started)
                self.put(key, value, weigh(value))
        finally:  # also when the build fails (a malformed key): else one lock per bad request
            with self._lock:
                self._building.pop(key, None)
        return value

    def cached(self, key: Hashable) -> Any:
        """The entry if present (counted as a hit), else None; never builds."""
        return self._lookup(key)

    def _lookup(self, key: Hashable, count: bool = True) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
        if count:
            CACHE_EVENTS.labels(self.name, "hit").inc()
        return entry[0]

    def put(self, key: Hashable, value: Any, weight: int) -> None:
        if weight > self.budget:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._entries[key] = (value, weight)
            self._weight += weight
            while self._weight > self.budget or (
                self.max_entries is not None and len(self._entries) > self.max_entries
            ):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._weight -= dropped
            CACHE_ENTRIES.labels(self.name).set(len(self._entries))
            CACHE_BYTES.labels(self.name).set(self._weight)


@dataclass(frozen=True)
class CacheBudgets:
    """What the FE caches of one process may hold."""

    table_bytes: int
    key_bytes: int
    key_entries: int
    master_bytes: int


# Decoded master and public keys kept, whatever their size.
MASTER_ENTRIES = 32


class FeCaches:
    """The FE caches of one process. As a `core.fe.schemes.DecryptionCache` it builds what is
    missing; `warm` is the same caches for the event loop, which only reads them."""

    def __init__(self, budgets: CacheBudgets) -> None:
        self.tables = LruCache("dlog_tables", budgets.table_bytes)
        self.keys = LruCache("functional_keys", budgets.key_bytes, budgets.key_entries)
        self.decoded_keys = LruCache("decoded_master_keys", budgets.master_bytes, MASTER_ENTRIES)
        self._uses: dict[bytes, int] = {}
        self.warm = WarmCaches(self)

    def table(self, base: TableBase, lo: int, hi: int) -> DlogTable:
        """A table over [lo, hi], built if missing.

        Keyed by the table size, not by lo and hi: else every shifted range builds a new table.
        """
        table: DlogTable = self.tables.get(
            table_key(base, lo, hi), lambda: DlogTable(base.element(), lo, hi), lambda t: t.nbytes
        )
        return table.over(lo, hi)

    def prepared_key(self, scheme: Scheme, data: bytes) -> Any:
        """The decoded key, decoded if missing; prepared once it has been used before."""
        digest = key_digest(scheme, data)
        key = self.keys.get(
            digest,
            lambda: scheme.functional_key(data),
            lambda _: DECODED_BYTES_PER_BYTE * len(data),
        )
        if isinstance(key, scheme.module.Key):
            uses = self._uses.get(digest, 0) + 1
            self._uses[digest] = uses
            if uses >= 2:
                key = scheme.prepare(key)
                self.keys.put(digest, key, PREPARED_BYTES_PER_BYTE * len(data))
                self._uses.pop(digest, None)
            elif len(self._uses) > 4 * max(self.keys.max_entries or 0, 1):
                self._uses.clear()
        return key

    def decoded(
        self,
        kind: str,
        scheme: Scheme,
        name: str,
        version: int,
        blob: bytes,
        decode: Callable[[bytes], Any],
    ) -> Any:
        """A decoded master or public key of one key version."""
        weight = DECODED_BYTES_PER_BYTE * len(blob)
        entry = self.decoded_keys.get(
            (kind, scheme.key_type, name, version), lambda: (blob, decode(blob)), lambda _: weight
        )
        if entry[0] != blob:  # the name was deleted and created again: decode afresh
            entry = (blob, decode(blob))
            self.decoded_keys.put((kind, scheme.key_type, name, version), entry, weight)
        return entry[1]


class WarmCaches:
    """The caches of `FeCaches` as the event loop sees them: a table or key that is there and
    ready, or None where a thread would have to build, decode or prepare, or search long."""

    def __init__(self, caches: FeCaches) -> None:
        self._caches = caches

    def table(self, base: TableBase, lo: int, hi: int) -> DlogTable | None:
        """The cached table over [lo, hi], if a full sweep of it is short."""
        table: DlogTable | None = self._caches.tables.cached(table_key(base, lo, hi))
        if table is None or hi - lo > 2 * table.baby_steps * INLINE_GIANT_STEPS:
            return None
        return table.over(lo, hi)

    def prepared_key(self, scheme: Scheme, data: bytes) -> Any:
        """The key, if it is cached and prepared."""
        key = self._caches.keys.cached(key_digest(scheme, data))
        return None if isinstance(key, scheme.module.Key) else key


def table_key(base: TableBase, lo: int, hi: int) -> tuple[bytes, int]:
    return base.id, baby_steps_for(hi - lo, balanced=False)


def key_digest(scheme: Scheme, data: bytes) -> bytes:
    return hashlib.sha256(scheme.key_type.encode() + data).digest()
