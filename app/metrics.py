"""Prometheus metrics: requests and latency per route, crypto durations, cache figures.

With several worker processes, `cipherd serve` points PROMETHEUS_MULTIPROC_DIR at a directory in
the data directory, so that /metrics on any worker reports the sum over all of them.
"""

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

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


@contextmanager
def timed(family: str, operation: str) -> Iterator[None]:
    """Record how long the block takes as one crypto operation."""
    start = time.perf_counter()
    try:
        yield
    finally:
        CRYPTO_SECONDS.labels(family, operation).observe(time.perf_counter() - start)


def render_metrics() -> tuple[bytes, str]:
    """The metrics page of this process, or of all workers when they share a directory."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
