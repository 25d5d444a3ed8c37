"""Whether this process can serve, and its metrics page."""

import logging

from app.server.metrics import render_metrics
from app.store import KeyStore

log = logging.getLogger("cipherd.health")


def ready(store: KeyStore) -> bool:
    """Whether the key store answers."""
    try:
        store.ping()
    except Exception as exc:  # any failure to reach the store means not ready
        log.warning("key store not ready: %s", type(exc).__name__)
        return False
    return True


def metrics_page() -> tuple[bytes, str]:
    """The Prometheus page of this process (of every worker, with several) and its media type."""
    return render_metrics()
