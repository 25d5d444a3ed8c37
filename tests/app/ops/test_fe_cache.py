"""The FE caches of a service process: what they keep, report and refuse to do inline."""

import hashlib

import pytest

from app.ops.fe_cache import (
    INLINE_GIANT_STEPS,
    PREPARED_BYTES_PER_BYTE,
    CacheBudgets,
    Cold,
    FeCaches,
    LruCache,
)
from core.fe import group
from core.fe.dlog import MAX_BABY_STEPS
from core.fe.schemes import SCHEMES


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
    value outside them: warm or not, that search goes to a thread (`Cold`)."""
    curve = group.curve(group.DEFAULT_CURVE)
    caches = FeCaches(CacheBudgets(64 << 20, 64 << 20, 4, 64 << 20))
    short = 2 * MAX_BABY_STEPS * INLINE_GIANT_STEPS
    wide = 2**32
    base_id = f"gT:{curve.name}".encode()
    built = caches.table(base_id, curve.gt_generator, 0, wide)
    assert built.baby_steps == MAX_BABY_STEPS
    warm = caches.table(base_id, curve.gt_generator, 5, 5 + short, warm_only=True)
    assert warm.find(curve.gt_generator() ** 7) == 7
    with pytest.raises(Cold):
        caches.table(base_id, curve.gt_generator, 5, 5 + wide, warm_only=True)


def test_functional_keys_are_bounded_in_bytes() -> None:
    """Distinct tao keys of n = 32, each used twice (so prepared, about 1 MB of RELIC's memory
    each): the cache holds what fits its byte budget, never more, and reports it."""
    scheme = SCHEMES["ipfe-tao"]
    master = scheme.master_key(scheme.setup_bytes(32)[0])
    keys = [scheme.keygen(master, [i + 1] * 32).to_bytes() for i in range(12)]
    budget = 4 * PREPARED_BYTES_PER_BYTE * len(keys[0])
    caches = FeCaches(CacheBudgets(64 << 20, budget, 1000, 64 << 20))
    for data in keys:
        caches.functional_key(scheme, data)
        caches.functional_key(scheme, data)
        assert caches.keys._weight <= budget
    assert len(caches.keys._entries) == 4
    assert caches.keys.cached(hashlib.sha256(b"ipfe-tao" + keys[-1]).digest()) is not None
    assert caches.keys.cached(hashlib.sha256(b"ipfe-tao" + keys[0]).digest()) is None
