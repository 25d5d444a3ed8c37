"""The mover: a thread that takes this process's audit records from its journal into the store,
where every replica's records are read and verified, and that adopts the journals of processes
that have ended.

It moves many records per transaction: it waits MOVE_DELAY_SECONDS after a first record (unless
a reader waits for them, `flush`), and
stores the rows the writer made as they are (reading them back from the journal only when the
store has fallen further behind than the writer keeps rows for). A store that refuses records
(an outage, a full disk) leaves them in the journal, and the mover asks again every
STORE_RETRY_SECONDS; the writer refuses requests once the journal holds too much the store has
not taken. A segment whose records are all in the store is replaced by a fresh one once it holds
SEGMENT_BYTES. It also publishes this process's anchors (`app.ops.audit.anchor`) as they fall
due, and at a stop. A segment with a line that is not a record has the records before that line
stored, and is set aside (renamed, logged, and reported by `audit verify`).
"""

import collections
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from app.ops.audit.anchor import Publisher
from app.ops.audit.chain import head_of, register
from app.store import AuditRow, KeyStore, journal
from app.store.journal import CorruptJournal, Journal, Segment

log = logging.getLogger("cipherd.audit")

# A segment is closed and a new one begun once it has this much in it, all in the store.
SEGMENT_BYTES = 1 << 20
# The mover waits this long after a first record, so that it takes many in one transaction.
MOVE_DELAY_SECONDS = 0.05
# Read in pieces below glibc's mmap threshold (128 KiB), some 200 records each: larger reads
# raise the threshold and leave the freed pieces to fragment the heap.
MOVE_CHUNK_BYTES = 64 << 10
# The writes whose rows the mover takes as the writer made them (beyond, while the store lags,
# it reads them back from the journal), and the most rows it puts in one transaction so.
WRITES_KEPT = 4096
MOVE_ROWS = 2048
# How often the mover looks for the segments of processes that have ended.
ORPHAN_SECONDS = 10.0
# How long the mover waits before it asks a store that refused records again.
STORE_RETRY_SECONDS = 1.0


class Mover:
    """Moves one process's journal into the store: what the writer appended to the current
    segment, and the segments of the chains it ended."""

    def __init__(self, store: KeyStore, journal: Journal, anchors: Publisher) -> None:
        self._store = store
        self._journal = journal
        self._anchors = anchors
        self._key = b""
        # What is in the store: a byte offset in the current segment, and the chain position it
        # stands for; waited on by `flush`.
        self._moved = threading.Condition()
        self.moved_bytes = 0
        self._moved_seq = 0
        # The rows of recent writes as the writer made them, so that they need not be read and
        # decoded again: (segment, start, end, rows), at most WRITES_KEPT of them.
        self._written: collections.deque[tuple[Segment, int, int, list[AuditRow]]] = (
            collections.deque()
        )
        self._wake = threading.Event()
        # Set by `flush`: someone waits for the records, the delay is not worth it.
        self._hurry = threading.Event()
        # Changed under the journal's lock: the writer starts the mover there, and the mover
        # ends there only with nothing left to move.
        self.thread: threading.Thread | None = None
        self._stopping = False
        self._store_down = False

    def start(self, key: bytes) -> None:
        """Start moving, with records MAC'd under `key`; called under the journal's lock."""
        self._key = key
        self._stopping = False
        self.thread = threading.Thread(target=self._run, name="cipherd-audit-mover", daemon=True)
        self.thread.start()

    def began(self) -> None:
        """The writer began a segment: nothing of it is in the store yet."""
        self.moved_bytes = self._moved_seq = 0

    def kept(self, segment: Segment, length: int, rows: list[AuditRow]) -> None:
        """The writer appended `rows`, `length` bytes, to `segment`: moved as they are while
        fewer than WRITES_KEPT writes wait."""
        self._anchors.noted(segment, rows[-1])
        if len(self._written) < WRITES_KEPT:
            self._written.append((segment, segment.size - length, segment.size, rows))

    def wake(self) -> None:
        if not self._wake.is_set():  # set already: the mover is on its way
            self._wake.set()

    def flush(self, seq: int, timeout: float) -> None:
        """Wait until the records up to `seq` of the current chain are in the store, or
        `timeout` has passed."""
        self._hurry.set()
        self._wake.set()
        with self._moved:
            self._moved.wait_for(lambda: self._moved_seq >= seq, timeout)

    def stop(self) -> None:
        """Move what is left, then stop (a later `start` goes on). A store that refuses records
        leaves them in the journal, for the next process to adopt."""
        thread = self.thread
        self._stopping = True
        self._wake.set()
        if thread is not None:
            thread.join(timeout=10)

    def release(self, segment: Segment) -> bool:
        """Whether every record written to the journal is in the store, `segment` (current)
        included; if so, its kept rows are dropped with it. Called under the journal's lock."""
        if segment.size != self.moved_bytes or self._journal.retired:
            return False
        self._written.clear()
        return True

    def _run(self) -> None:
        next_orphans = time.monotonic()
        while True:
            self._wake.wait(self._anchors.due_in(ORPHAN_SECONDS))
            self._hurry.wait(MOVE_DELAY_SECONDS)
            self._hurry.clear()
            self._wake.clear()
            try:
                self._move_retired()
                self._move_current()
                if time.monotonic() >= next_orphans:
                    adopt_orphans(self._store, self._journal.directory, self._key)
                    next_orphans = time.monotonic() + ORPHAN_SECONDS
            except Exception as exc:
                self._publish_anchors()
                if not self._store_down:
                    log.error(
                        "audit records not moved to the store (kept in the journal): %s",
                        " ".join(str(exc).split()),
                    )
                self._store_down = True
                time.sleep(STORE_RETRY_SECONDS)
                self._wake.set()
                continue
            if self._store_down:
                log.info("audit records reach the store again")
                self._store_down = False
            # After the move: an anchor is then rarely ahead of what the store holds.
            self._publish_anchors()
            if self._stopping:  # read first: the writer takes the lock for every record
                with self._journal.lock:
                    if not self._unmoved():
                        self._publish_anchors(every=True)
                        self.thread = None
                        return

    def _publish_anchors(self, every: bool = False) -> None:
        """Publish the anchors that are due; one that cannot be is tried again on the next
        pass (the records are in the journal meanwhile)."""
        try:
            self._anchors.publish(self._key, self._store.clock.now, every)
        except OSError as exc:
            log.error("audit anchor not published: %s", " ".join(str(exc).split()))

    def _unmoved(self) -> bool:
        segment = self._journal.current
        return bool(self._journal.retired) or (
            segment is not None and segment.size > self.moved_bytes
        )

    def _move_retired(self) -> None:
        retired = self._journal.retired
        while retired:
            segment = retired[0]
            adopt(self._store, self._key, segment.path, segment.fd)
            segment.remove()
            retired.pop(0)

    def _move_current(self) -> None:
        segment = self._journal.current
        if segment is None:
            return
        end = segment.size
        while self.moved_bytes < end:
            rows, upto = self._kept_rows(segment, self.moved_bytes, end)
            if not rows:
                data = segment.read(self.moved_bytes, MOVE_CHUNK_BYTES)
                cut = data.rfind(b"\n") + 1
                if not cut:  # one record longer than a piece (an FE keygen's function, say)
                    data = segment.read(self.moved_bytes, end - self.moved_bytes)
                    cut = data.find(b"\n") + 1
                rows, upto = journal.decode(data[:cut]), self.moved_bytes + cut
            last = store_rows(self._store, self._key, rows)
            with self._moved:
                self.moved_bytes = upto
                self._moved_seq = last
                self._moved.notify_all()
        if end >= SEGMENT_BYTES:
            self._next_segment(segment)

    def _kept_rows(self, segment: Segment, start: int, end: int) -> tuple[list[AuditRow], int]:
        """The rows the writer kept from `start` on in `segment` (up to MOVE_ROWS of them), and
        where they end; none if it kept none from exactly there, and the journal has them."""
        written = self._written
        while written and (written[0][0] is not segment or written[0][2] <= start):
            written.popleft()  # moved already, or of a segment that is done
        rows: list[AuditRow] = []
        upto = start
        while written and written[0][1] == upto and written[0][2] <= end:
            if rows and len(rows) + len(written[0][3]) > MOVE_ROWS:
                break
            _, _, upto, kept = written.popleft()
            rows += kept
        return rows, upto

    def _next_segment(self, segment: Segment) -> None:
        """Close a segment whose records are all in the store and begin the next of its chain,
        if the disk has room for its reserve (else go on in this one)."""
        with self._journal.lock:
            if self._journal.current is not segment or segment.size != self.moved_bytes:
                return
            # All moved: the chain's next record follows the last one in the store.
            if self._journal.follow(segment, self._moved_seq + 1):
                self.moved_bytes = 0


def store_rows(store: KeyStore, key: bytes, rows: Sequence[AuditRow]) -> int:
    """Put `rows` (of one chain, in order) into the store; the last position."""
    if not rows:
        return 0
    if rows[0].seq == 1:
        register(store, key, rows[0].chain)
    store.audit.append(rows, head_of(key, rows[-1]))
    return rows[-1].seq


def adopt_orphans(store: KeyStore, directory: Path, key: bytes | None = None) -> int:
    """Move into the store the journals of processes that have ended; how many segments."""
    if not directory.is_dir():
        return 0
    key = key or store.audit.mac_key()
    moved = 0
    for path, fd in journal.orphans(directory):
        try:
            adopt(store, key, path, fd)
            moved += 1
        finally:
            os.close(fd)
    return moved


def adopt(store: KeyStore, key: bytes, path: Path, fd: int) -> None:
    """Move the segment at `path` (open at `fd`, locked) into the store and remove it; one with
    a line that is not a record has the records before that line moved, and is set aside."""
    try:
        rows = journal.decode(journal.read_all(fd))
    except CorruptJournal as corrupt:
        store_rows(store, key, corrupt.rows)
        aside = journal.set_aside(path)
        log.error(
            "audit journal segment %s set aside as %s: its %s; the %d records before it were "
            "moved to the store",
            path.name,
            aside.name,
            corrupt,
            len(corrupt.rows),
        )
        return
    store_rows(store, key, rows)
    path.unlink(missing_ok=True)
