"""What the service does to keys by itself: destroy those whose deletion window has ended, and
rotate those whose `auto_rotate_seconds` has passed; and drop wrapped answers, AppRole
secret ids and tokens that have expired.

Every process (each worker of each replica) runs this every `CIPHERD_MAINTENANCE_SECONDS`; the
store makes each action happen once whoever comes first: a destruction decides again under the
key's row lock, and an automatic rotation adds a version only if the latest is still the one
found due. "Due" is by the database's clock, the one clock of every replica. Each action is
recorded in the audit trail with principal `system`.
"""

import logging
import threading

from app.ops import keys
from app.ops.audit import SYSTEM, AuditTrail
from app.ops.imported import RotationRefusedError
from app.ops.keyring import Keyring
from app.server.metrics import MAINTENANCE_PASSES
from app.store import KeyChangedError, KeyStore

log = logging.getLogger("cipherd.lifecycle")
# How many expired rows of each kind (wrapped answers, secret ids, tokens) a pass drops.
EXPIRED_PER_PASS = 1000


class Maintenance:
    def __init__(
        self, store: KeyStore, keyring: Keyring, audit: AuditTrail, interval: float
    ) -> None:
        self._store = store
        self._keyring = keyring
        self._audit = audit
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> None:
        """Destroy what is due, then rotate what is due, by the database's clock; nothing while
        this machine's clock is too far from it (`app.store.clock`), which its log says."""
        clock = self._store.clock
        if not clock.agrees:
            MAINTENANCE_PASSES.labels("skipped").inc()
            return
        for name in self._store.keys.due_for_destruction(clock.now()):
            self._destroy(name, clock.now())
        for name, version in self._store.keys.due_rotations(clock.now()):
            with self._audit.changing() as record:
                try:
                    info = keys.automatic_rotation(self._store, self._keyring, name, version)
                except (KeyChangedError, RotationRefusedError):
                    # Another process rotated it first, or it changed meanwhile; or it is an
                    # imported key that only its owner rotates, as Vault's rotation skips one.
                    continue
                record(
                    "keys_rotate_key",
                    principal=SYSTEM,
                    key=name,
                    key_version=info.latest_version,
                    details={"automatic": True},
                )
        # Expired wrapped answers, secret ids and tokens are refused already: this frees their
        # rows.
        self._store.approle.delete_expired(clock.now(), EXPIRED_PER_PASS)
        self._store.tokens.delete_expired(clock.now(), EXPIRED_PER_PASS)
        self._store.wrapped.delete_expired(clock.now(), EXPIRED_PER_PASS)
        MAINTENANCE_PASSES.labels("done").inc()

    def _destroy(self, name: str, now: float) -> None:
        """Destroy a key that is due, its record written to disk inside the destruction's
        transaction, before it commits: no key is destroyed without its record (a crash between
        the two leaves a record that the next pass writes again, with the destruction)."""
        with self._audit.changing() as record:
            if self._store.keys.destroy_if_due(
                name, now, lambda: record("keys_destroy_key", principal=SYSTEM, key=name)
            ):
                self._keyring.forget(name)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="key-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            try:
                self.run_once()
            except Exception as exc:  # a store or audit failure: the next pass tries again
                MAINTENANCE_PASSES.labels("failed").inc()
                log.warning("key maintenance: %s", " ".join(str(exc).split()))
            if self._stop.wait(self._interval):
                return
