"""The root of trust's verbs: rotating the keyring and the root key, and the rewrap that moves
every key version onto the keyring's newest term.

The rewrap runs in every process of the service (and in `cipherd keyring rotate`), each at most
`CIPHERD_KEYRING_REWRAP_PER_SECOND` versions a second, in batches of one transaction each: a
crash loses at most the batch in flight, which the next pass does again, and replicas rewrapping
at once take different rows.
"""

import logging
import threading
from collections.abc import Iterator

from pydantic import BaseModel, Field

from app.server.metrics import KEYRING_REWRAPPED, KEYRING_TERM, KEYRING_VERSIONS
from app.store import KeyringStatus, KeyStore, KeyStoreError, RootKey

log = logging.getLogger("cipherd.keyring")

# The most versions one rewrap transaction moves.
MAX_BATCH = 100
# How often an idle process looks for work and for a root key rotated elsewhere.
IDLE_SECONDS = 5.0


class KeyringOut(BaseModel):
    term: int = Field(description="the newest term: new key versions are wrapped under it")
    versions: int = Field(description="key versions in the store")
    versions_behind: int = Field(
        description="versions still wrapped under an older term (the rewrap moves them)"
    )


def _out(status: KeyringStatus) -> KeyringOut:
    KEYRING_TERM.set(status.term)
    KEYRING_VERSIONS.labels("newest").set(status.versions - status.versions_behind)
    KEYRING_VERSIONS.labels("older").set(status.versions_behind)
    return KeyringOut(
        term=status.term, versions=status.versions, versions_behind=status.versions_behind
    )


def keyring_status(store: KeyStore) -> KeyringOut:
    return _out(store.keyring.status())


def rotate_keyring(store: KeyStore) -> KeyringOut:
    """A new term, used by every write from now on; the rewrap moves older versions onto it."""
    return _out(store.keyring.rotate())


def rotate_root(store: KeyStore, new_root: RootKey) -> int:
    """The keyring rewrapped under `new_root`; how many terms."""
    return store.keyring.rotate_root(new_root)


class Rewrap:
    """Moves key versions onto the newest term, `per_second` at most."""

    def __init__(self, store: KeyStore, per_second: int) -> None:
        self.store = store
        self.per_second = per_second
        self.batch = min(MAX_BATCH, per_second)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self) -> tuple[int, KeyringOut]:
        """One batch: how many versions moved, and the keyring after."""
        moved, status = self.store.keyring.rewrap(self.batch)
        KEYRING_REWRAPPED.inc(moved)
        return moved, _out(status)

    def passes(self) -> Iterator[KeyringOut]:
        """Batches until no version is behind, each followed by the pause that keeps the
        rate; the keyring after each."""
        while True:
            moved, status = self.step()
            yield status
            if status.versions_behind == 0 or moved == 0:
                return
            if self._stop.wait(moved / self.per_second):
                return

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="keyring-rewrap", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Look for work now (after a keyring rotation)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        refused = False
        while not self._stop.is_set():
            try:
                self.store.keyring.refresh_root()
                for _ in self.passes():
                    pass
                refused = False
            except KeyStoreError as exc:  # the store is down, or the root key source is stale
                if not refused:
                    log.warning("keyring rewrap paused: %s", exc)
                refused = True
            except Exception:  # a version that does not unwrap, say: logged, tried again later
                if not refused:
                    log.exception("keyring rewrap failed")
                refused = True
            self._wake.wait(IDLE_SECONDS)
            self._wake.clear()
