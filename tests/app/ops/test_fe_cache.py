"""The FE caches of a service process: what they keep, report and refuse to do inline."""

import hashlib

import pytest

from app.ops.fe_cache import (
    INLINE_GIANT_STEPS,
    PREPARED_BYTES_PER_BYTE,
    CacheBudgets,
    FeCaches,
    LruCache,
)
from core.fe import group
from core.fe.dlog import MAX_BABY_STEPS
from core.fe.schemes import SCHEMES, TableBase


def test_a_failed_build_leaves_nothing_behind() -> None:
    """A malformed functional key fails to build: its build lock must not stay, one per bad
    request, for good."""
    cache = LruCache("test", 10)

    def fail() -> None:
        raise ValueError("malformed")

    for attempt in range(100):
        with pytest.raises(ValueError):
            cache.get(attempt, fail, lambda _: 1)
    assert cache._building == {}


def test_a_long_search_is_no_work_for_the_event_loop() -> None:
    """A cached table of the widest ranges still needs up to thousands of giant steps for a
    value outside them: warm or not, the event loop's view of the cache has no table for it."""
    curve = group.curve(group.DEFAULT_CURVE)
    caches = FeCaches(CacheBudgets(64 << 20, 64 << 20, 4, 64 << 20))
    short = 2 * MAX_BABY_STEPS * INLINE_GIANT_STEPS
    wide = 2**32
    base = TableBase(f"gT:{curve.name}".encode(), curve.gt_generator)
    assert caches.warm.table(base, 0, wide) is None  # not built yet
    built = caches.table(base, 0, wide)
    assert built.baby_steps == MAX_BABY_STEPS
    warm = caches.warm.table(base, 5, 5 + short)
    assert warm is not None and warm.find(curve.gt_generator() ** 7) == 7
    assert caches.warm.table(base, 5, 5 + wide) is None


def test_functional_keys_are_bounded_in_bytes() -> None:
    """Distinct tao keys of n = 32, each used twice (so prepared, about 1 MB of RELIC's memory
    each): the cache holds what fits its byte budget, never more, and reports it."""
    scheme = SCHEMES["ipfe-tao"]
    master = scheme.master_key(scheme.setup_bytes(32)[0])
    keys = [scheme.keygen(master, [i + 1] * 32).to_bytes() for i in range(12)]
    budget = 4 * PREPARED_BYTES_PER_BYTE * len(keys[0])
    caches = FeCaches(CacheBudgets(64 << 20, budget, 1000, 64 << 20))
    for data in keys:
        assert caches.warm.prepared_key(scheme, data) is None
        assert isinstance(caches.prepared_key(scheme, data), scheme.module.Key)
        assert caches.warm.prepared_key(scheme, data) is None  # decoded, not prepared
        prepared = caches.prepared_key(scheme, data)
        assert isinstance(prepared, scheme.module.PreparedKey)
        assert caches.warm.prepared_key(scheme, data) is prepared
        assert caches.keys._weight <= budget
    assert len(caches.keys._entries) == 4
    assert caches.keys.cached(hashlib.sha256(b"ipfe-tao" + keys[-1]).digest()) is not None
    assert caches.keys.cached(hashlib.sha256(b"ipfe-tao" + keys[0]).digest()) is None
