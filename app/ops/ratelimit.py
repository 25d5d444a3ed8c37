"""Rate limits of one process: failed authentications per client address, and requests per
scoped token that was given a rate.

Both are token buckets in this process's memory, so they hold per worker process: with W workers
(and R replicas) a caller gets up to W × R times the rate. Failures are throttled without ever
refusing a valid token: only a request whose token fails is answered 429 rather than 401 once
its address has failed too often, so callers with valid tokens behind the same address (a NAT,
a proxy) are still served.
"""

import math
import threading
import time
from collections.abc import Hashable

from app.ops.errors import Problem
from app.server.metrics import REFUSED

# Addresses and tokens tracked at once; past it, those whose bucket is full again are dropped
# (they carry nothing), and if that frees nothing, all of them.
MAX_TRACKED = 65_536


class Buckets:
    """A token bucket per key: `burst` at most, refilled at `rate` a second."""

    def __init__(self) -> None:
        # key -> (tokens left, when they were counted (monotonic), burst, rate)
        self._buckets: dict[Hashable, tuple[float, float, float, float]] = {}
        self._lock = threading.Lock()

    def take(
        self, key: Hashable, burst: float, rate: float, count: int = 1, taken: int = 0
    ) -> float:
        """Take `count` tokens for a request that took `taken` already: 0.0 if the bucket held
        all of them before the request (the whole bucket for a request larger than it, which
        then leaves it owing the rest), else the seconds until it would."""
        now = time.monotonic()
        with self._lock:
            tokens, counted, _, _ = self._buckets.get(key, (burst, now, burst, rate))
            tokens = min(burst, tokens + (now - counted) * rate)
            needed = min(count + taken, burst) - taken
            if tokens < needed:
                self._buckets[key] = (tokens, now, burst, rate)
                return (needed + taken - tokens) / rate
            if len(self._buckets) >= MAX_TRACKED and key not in self._buckets:
                self._drop_full(now)
            self._buckets[key] = (tokens - count, now, burst, rate)
            return 0.0

    def _drop_full(self, now: float) -> None:
        self._buckets = {
            key: bucket
            for key, bucket in self._buckets.items()
            if bucket[0] + (now - bucket[1]) * bucket[3] < bucket[2]
        }
        if len(self._buckets) >= MAX_TRACKED:
            self._buckets.clear()


def _retry(slug: str, title: str, detail: str, seconds: float) -> Problem:
    problem = Problem(429, slug, title, detail)
    problem.retry_after = max(1, math.ceil(seconds))
    return problem


class RateLimits:
    def __init__(self, failures_burst: int, failures_per_second: float) -> None:
        self._failures_burst = failures_burst
        self._failures_per_second = failures_per_second
        self._failures = Buckets()
        self._requests = Buckets()

    def failed(self, address: str | None, refusal: Problem) -> Problem:
        """What to answer a failed authentication from `address`: `refusal` (the 401), or a 429
        once the address has used up its failures."""
        wait = self._failures.take(address, self._failures_burst, self._failures_per_second)
        if not wait:
            return refusal
        REFUSED.labels("auth-throttle").inc()
        return _retry(
            "too-many-failed-authentications",
            "Too many failed authentications",
            f"too many requests with a missing or invalid token from this address; retry in "
            f"{math.ceil(wait)} s (CIPHERD_AUTH_FAILURES_BURST, CIPHERD_AUTH_FAILURES_PER_SECOND)",
            wait,
        )

    def charge(self, token_id: str, rate_per_second: float, items: int = 1, taken: int = 0) -> None:
        """Count `items` requests of a token that has a rate, besides the `taken` its request
        was charged already; 429 past it (a second's worth, and at least one request, may come
        at once; a batch of more items than that needs them all and leaves the token owing the
        rest)."""
        burst = max(1.0, rate_per_second)
        wait = self._requests.take(token_id, burst, rate_per_second, items, taken)
        if wait:
            REFUSED.labels("token-rate").inc()
            raise _retry(
                "rate-limited",
                "Rate limited",
                f"this token may make {rate_per_second:g} requests a second on each worker "
                f"process; retry in {math.ceil(wait)} s",
                wait,
            )
