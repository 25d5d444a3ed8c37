"""Prometheus metrics: requests and latency per route, crypto durations, cache figures.

With several worker processes, `cipherd serve` points PROMETHEUS_MULTIPROC_DIR at a directory of
its own, in memory and off the data directory's file system (`app.cli`), so that /metrics on any
worker reports the sum over all of them.
"""

import asyncio
import bisect
import collections
import os
import threading
import time
from types import TracebackType

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

REQUESTS = Counter(
    "cipherd_http_requests",
    "HTTP requests by route, method and status",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "cipherd_http_request_duration_seconds",
    "HTTP request latency by route and method",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
CRYPTO_SECONDS = Histogram(
    "cipherd_crypto_operation_duration_seconds",
    "time spent in one cryptographic operation",
    ["family", "operation"],
    buckets=LATENCY_BUCKETS,
)
REFUSED = Counter(
    "cipherd_refused",
    "connections and requests refused by a bound, by reason: connection-limit, head-timeout, "
    "head-too-large, body-timeout, body-memory, auth-throttle, token-rate",
    ["reason"],
)
CACHE_EVENTS = Counter(
    "cipherd_cache_events",
    "cache hits and misses by cache",
    ["cache", "event"],
)
CACHE_ENTRIES = Gauge(
    "cipherd_cache_entries",
    "entries held in a cache of this process",
    ["cache"],
    multiprocess_mode="livesum",
)
CACHE_BYTES = Gauge(
    "cipherd_cache_bytes",
    "memory held by a cache of this process",
    ["cache"],
    multiprocess_mode="livesum",
)
CACHE_BUILD_SECONDS = Histogram(
    "cipherd_cache_build_seconds",
    "time to build one cache entry",
    ["cache"],
    buckets=LATENCY_BUCKETS,
)

KEYRING_TERM = Gauge(
    "cipherd_keyring_term",
    "the keyring's newest term, which new key versions are wrapped under",
    multiprocess_mode="livemax",
)
KEYRING_VERSIONS = Gauge(
    "cipherd_keyring_versions",
    "key versions in the store, by whether they are wrapped under the newest term",
    ["term"],
    multiprocess_mode="livemostrecent",
)
CLOCK_SKEW = Gauge(
    "cipherd_clock_skew_seconds",
    "this machine's clock minus the database's, when last measured; beyond "
    "CIPHERD_MAX_CLOCK_SKEW_SECONDS the replica is not ready and makes no change by the time",
    multiprocess_mode="livemostrecent",
)
MAINTENANCE_PASSES = Counter(
    "cipherd_maintenance_passes",
    "passes of the key maintenance (due deletions, automatic rotations) by outcome: done, "
    "skipped (this machine's clock too far from the database's), failed",
    ["outcome"],
)
KEYRING_REWRAPPED = Counter(
    "cipherd_keyring_rewrapped_versions",
    "key versions this service moved to the newest keyring term",
)

# Label children by label values, so that a request does not look them up under the metric's
# lock each time. Bounded: the route and method of an unmatched request come from the client.
_MAX_CHILDREN = 1024
_request_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
_crypto_children: dict[tuple[str, str], Histogram] = {}


def count_request(route: str, method: str, status: int, seconds: float) -> None:
    """One request to `route`, answered `status` after `seconds`."""
    key = (route, method, status)
    children = _request_children.get(key)
    if children is None:
        children = (
            REQUESTS.labels(route, method, str(status)),
            REQUEST_SECONDS.labels(route, method),
        )
        if len(_request_children) < _MAX_CHILDREN:
            _request_children[key] = children
    counter, histogram = children
    pending = _pending_for_turn()
    if pending is None:
        counter.inc()
    else:
        pending.counts[counter] = pending.counts.get(counter, 0) + 1
    _observe(histogram, seconds, pending)


def _observe(histogram: Histogram, seconds: float, pending: "_Pending | None") -> None:
    """`histogram.observe(seconds)`, at the end of the turn when there is one."""
    if pending is None:
        histogram.observe(seconds)
    else:
        pending.observed.setdefault(histogram, []).append(seconds)


class _Pending(threading.local):
    """What the requests of the current turn of this thread's event loop added, not yet written.

    Shared across worker processes, every `inc` or `observe` takes a lock and writes the file
    that holds its value: some 17 µs a request for its counter and two histograms on the
    development machine. One turn of the event loop answers many requests, and one addition
    per label set and bucket, at the turn's end, serves them all.
    """

    def __init__(self) -> None:
        self.counts: dict[Counter, int] = {}
        self.observed: dict[Histogram, list[float]] = {}
        # The event loop whose turn writes them at its end, once one is scheduled to.
        self.loop: asyncio.AbstractEventLoop | None = None


_pending = _Pending()


def _pending_for_turn() -> _Pending | None:
    """This turn's additions, written at its end; None outside an event loop (a worker
    thread's), where they are written at once."""
    pending = _pending
    loop = pending.loop
    if loop is not None and loop.is_running():  # in a turn that writes at its end
        return pending
    try:
        loop = asyncio.get_running_loop()  # a getpid system call each, on Python 3.11
    except RuntimeError:
        return None
    pending.loop = loop
    loop.call_soon(_write_pending, pending)
    return pending


def _write_pending(pending: _Pending) -> None:
    pending.loop = None
    counts, pending.counts = pending.counts, {}
    observed, pending.observed = pending.observed, {}
    for counter, count in counts.items():
        counter.inc(count)
    for histogram, amounts in observed.items():
        _observe_all(histogram, amounts)


def _observe_all(histogram: Histogram, amounts: list[float]) -> None:
    """`histogram.observe(amount)` for each of `amounts`, as one addition to its sum and one to
    each bucket that gets any. prometheus_client has no call for it: this uses its histogram's
    `_sum`, `_buckets` and `_upper_bounds` (the module's test checks the result against
    `observe`)."""
    histogram._sum.inc(sum(amounts))
    per_bucket = collections.Counter(
        bisect.bisect_left(histogram._upper_bounds, amount) for amount in amounts
    )
    for index, count in per_bucket.items():
        histogram._buckets[index].inc(count)


class timed:  # lower case: it reads as a function, `with timed(...)`
    """Record how long the block takes as one crypto operation."""

    __slots__ = ("_histogram", "_start")

    def __init__(self, family: str, operation: str) -> None:
        histogram = _crypto_children.get((family, operation))
        if histogram is None:
            histogram = _crypto_children[family, operation] = CRYPTO_SECONDS.labels(
                family, operation
            )
        self._histogram = histogram
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _observe(self._histogram, time.perf_counter() - self._start, _pending_for_turn())


def render_metrics() -> tuple[bytes, str]:
    """The metrics page of this process, or of all workers when they share a directory."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def forget_process(pid: int) -> None:
    """Drop a worker that has exited from the shared cache gauges: their sum is over live
    workers, and a dead worker's last figures would otherwise stay in it for good."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        mark_process_dead(pid)


def process_metrics_only() -> None:
    """From now on, metrics made in this process stay in it: for the FE pool's processes,
    whose figures /metrics does not report."""
    values.ValueClass = values.MutexValue
