"""Whether this process can serve, and its metrics page."""

import asyncio
import logging
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

from app.server.metrics import render_metrics
from app.store import KeyStore

log = logging.getLogger("cipherd.health")
# How long readiness waits for the store's answer before it says no.
READY_SECONDS = 0.8
_checker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="readiness")
_checks: "weakref.WeakKeyDictionary[KeyStore, Future[None]]" = weakref.WeakKeyDictionary()
_checks_lock = threading.Lock()


async def ready(store: KeyStore) -> bool:
    """Whether the key store answers (and, where it checks that, takes writes) and this
    machine's clock agrees with the database's (`app.store.clock`), told within
    READY_SECONDS: the check runs on a thread of its own, one at a time per store, so that a
    store that does not answer, or a thread pool full of requests waiting for it, still gets
    an answer within a second."""
    outcome = asyncio.wrap_future(_check_of(store))
    outcome.add_done_callback(_retrieve)
    done, _ = await asyncio.wait([outcome], timeout=READY_SECONDS)
    failure = outcome.exception() if done else TimeoutError()
    if failure is not None:  # any failure to reach the store means not ready
        log.warning("key store not ready: %s", type(failure).__name__)
        return False
    # The check measured this machine's clock against the database's: one too far off is not
    # to serve (its log and metrics say why).
    return store.clock.agrees


def _check_of(store: KeyStore) -> "Future[None]":
    """The check of `store` under way, or a new one."""
    with _checks_lock:
        check = _checks.get(store)
        if check is None or check.done():
            check = _checks[store] = _checker.submit(store.ping)
        return check


def _retrieve(outcome: "asyncio.Future[None]") -> None:
    """Take the outcome of a check answered for elsewhere, so that asyncio does not log it as
    never retrieved."""
    if not outcome.cancelled():
        outcome.exception()


def metrics_page() -> tuple[bytes, str]:
    """The Prometheus page of this process (of every worker, with several) and its media type."""
    return render_metrics()
