"""One clock for every replica: "now" as the database tells it.

What the service decides by the time (a deletion that has come due, an automatic rotation, a
token's expiry) and the times it records (audit records, a key's dates) must not depend on which
replica's clock was asked: a replica whose clock ran days ahead would otherwise destroy keys
scheduled for next week and date its records in the future. So "now" is the database's time,
read without a query per call: the clock measures the offset between the database's time and
this process's monotonic clock (one query, the offset taken at the middle of its round trip),
then adds that offset to the monotonic clock, and measures again every REFRESH_SECONDS on a
thread of its own. On SQLite the database is on this machine and its time is this machine's.

It also compares this machine's own wall clock with the database's (`skew`): beyond
`max_skew` the replica's clock is not to be trusted, and the replica says so (its log, the
metric `cipherd_clock_skew_seconds`, `/readyz` 503) and makes no change of its own by the time
(`agrees` is False) until it agrees again.
"""

import logging
import threading
import time
from collections.abc import Callable

from app.server.metrics import CLOCK_SKEW

log = logging.getLogger("cipherd.clock")

# How often the offset to the database's clock is measured again. A local oscillator drifts by
# a few parts per million (under 0.1 s a day): refreshing once a minute keeps "now" within
# milliseconds of the database's; it also bounds how long a replica whose wall clock was stepped
# goes unnoticed.
REFRESH_SECONDS = 60.0
# What a replica's clock may differ from the database's by, unless a setting says otherwise.
MAX_SKEW_SECONDS = 5.0


class Clock:
    """The time of the database that `read` asks (seconds since the epoch), kept on this
    process's monotonic clock."""

    def __init__(
        self,
        read: Callable[[], float],
        max_skew: float = MAX_SKEW_SECONDS,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self._read = read
        self.max_skew = max_skew
        self._refresh_seconds = refresh_seconds
        self._offset = time.time() - time.monotonic()  # until the first measurement
        self._refresh_at = 0.0  # monotonic
        self._measuring = threading.Lock()
        self.skew = 0.0  # this machine's wall clock minus the database's, when last measured
        self.agrees = True

    def now(self) -> float:
        """The database's time now, in seconds since the epoch."""
        moment = time.monotonic()
        if moment >= self._refresh_at:
            self._refresh_soon(moment)
        return moment + self._offset

    def measure(self) -> None:
        """Read the database's time now (a store error if it does not answer), and take this
        process's offset and this machine's skew from it."""
        with self._measuring:
            started, wall_started = time.monotonic(), time.time()
            database = self._read()
            ended, wall_ended = time.monotonic(), time.time()
            self._offset = database - (started + ended) / 2
            self._refresh_at = ended + self._refresh_seconds
            self._judge((wall_started + wall_ended) / 2 - database, (ended - started) / 2)

    def _judge(self, skew: float, uncertainty: float) -> None:
        """Take a measured skew, known to within `uncertainty` seconds."""
        self.skew = skew
        CLOCK_SKEW.set(skew)
        agrees = abs(skew) <= self.max_skew + uncertainty
        if agrees == self.agrees:
            return
        self.agrees = agrees
        if agrees:
            log.warning(
                "this machine's clock agrees with the database's again (%+.3f s): ready, and "
                "making changes by the time again",
                skew,
            )
        else:
            log.error(
                "this machine's clock is %.3f s %s the database's, more than the %g s allowed "
                "(CIPHERD_MAX_CLOCK_SKEW_SECONDS): not ready, and no scheduled deletion or "
                "automatic rotation here until it agrees; set the machine's clock right (NTP)",
                abs(skew),
                "ahead of" if skew > 0 else "behind",
                self.max_skew,
            )

    def _refresh_soon(self, moment: float) -> None:
        """Measure again on a thread of its own, unless a measurement is under way."""
        if not self._measuring.acquire(blocking=False):
            return
        try:
            if moment < self._refresh_at:  # measured meanwhile
                return
            # Until this measurement ends (or fails), no other starts.
            self._refresh_at = moment + self._refresh_seconds
        finally:
            self._measuring.release()
        threading.Thread(target=self._refresh, name="cipherd-clock", daemon=True).start()

    def _refresh(self) -> None:
        try:
            self.measure()
        except Exception as exc:  # the store is down: the offset measured last goes on
            log.info("the database's clock was not read: %s", " ".join(str(exc).split()))
