"""The writer: this process's chain of audit records, appended to its journal by group commit.

Records are written to the process's journal on its own disk (`app.store.journal`) and, when
`CIPHERD_AUDIT_FILE` is set, appended to a JSON-lines file; the mover (`app.ops.audit.mover`)
takes them from the journal into the store. Writes are grouped: one thread writes every record
that arrived while the previous group was being written, in one `write` (group commit). A
request is answered only once its record is written, and a change (to keys, tokens, the FE
ledger) only once its record is on disk; other records reach the disk within
LAZY_SYNC_SECONDS, or before their answers with `CIPHERD_AUDIT_SYNC=full`. A record that cannot
be written fails its request with 503 `audit-unavailable` (fail closed). The journal rides out a
store that is down or full: requests go on while it holds less than
`CIPHERD_AUDIT_BACKLOG_BYTES` the store has not taken.
"""

import asyncio
import contextlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from app.ops.audit.anchor import Publisher, default_directory
from app.ops.audit.chain import Chain
from app.ops.audit.mover import Mover
from app.ops.audit.record import (
    AuditNote,
    AuditRecord,
    KeyVersion,
    audit_unavailable,
    canonical,
    record_json,
)
from app.ops.errors import Problem
from app.settings import Settings
from app.store import AuditRow, KeyStore
from app.store.journal import Journal, Segment

log = logging.getLogger("cipherd.audit")

# Records not yet on disk in the "changes" mode are put there at most this much later.
LAZY_SYNC_SECONDS = 0.1
# Journal room set aside for the record of each change in flight, before the change is made:
# well above what a change's record takes (some 300 bytes; an FE key's sets aside its functions'
# size on top).
CHANGE_ROOM_BYTES = 16 << 10


class _Waiter:
    """Whoever waits for a record: a coroutine (woken on its loop) or a thread."""

    __slots__ = ("future", "loop", "thread_future")

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] | None = None
        self.thread_future: Future[None] | None = None
        if loop is not None:
            self.future = loop.create_future()
        else:
            self.thread_future = Future()


def _settle_on_loop(futures: list[asyncio.Future[None]], error: Exception | None) -> None:
    for future in futures:
        if future.done():  # its request was cancelled meanwhile
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


class _Claim:
    """A change's request for journal room, before the change is made."""

    __slots__ = ("room",)

    def __init__(self, room: int) -> None:
        self.room = room


Entry = tuple[AuditRecord | _Claim, _Waiter]


class AuditTrail:
    """This process's chain of audit records: written to its journal by group commit, moved to
    the store by a thread of its own."""

    def __init__(
        self,
        store: KeyStore,
        journal: Path,
        file: Path | None = None,
        sync: str = "changes",
        reserve_bytes: int = 4 << 20,
        backlog_bytes: int = 64 << 20,
        anchors: Publisher | None = None,
    ) -> None:
        self._store = store
        # The time of its records: the database's (`app.store.clock`).
        self.now = store.clock.now
        self._key = b""  # read from the store by the writer's first group
        self._file = file
        self._sync_all = sync == "full"
        self._backlog = backlog_bytes
        self._condition = threading.Condition()
        self._pending: list[Entry] = []
        self._thread: threading.Thread | None = None
        # Per event loop: records of the current turn, touched only on that loop's thread.
        self._stages: dict[asyncio.AbstractEventLoop, list[Entry]] = {}
        self._closing = False
        self._dirty_since: float | None = None  # the first record written but not synced
        # The journal, shared with the mover: the writer appends, the mover reads.
        self._journal = Journal(journal, reserve_bytes)
        self._mover = Mover(
            store, self._journal, anchors or Publisher("file", default_directory(journal))
        )
        self._chain = Chain()
        # Journal room set aside for the records of changes in flight; other records leave it.
        self._claimed = 0

    @classmethod
    def for_settings(cls, store: KeyStore, settings: Settings) -> "AuditTrail":
        return cls(
            store,
            settings.audit_journal_dir,
            settings.audit_file,
            settings.audit_sync,
            settings.audit_reserve_bytes,
            settings.audit_backlog_bytes,
            Publisher.for_settings(settings),
        )

    async def write(self, record: AuditRecord) -> None:
        """Return once `record` is written (and on disk, if it must be); 503
        `audit-unavailable` if it cannot be."""
        if self._sync_all or record.change or not self._key:
            await self._staged(record)
            return
        # A record that need not wait for the disk is written here and now: one `write` to the
        # page cache costs less than handing it to the writer and waiting, which suspends and
        # resumes the request's whole chain of coroutines.
        try:
            self._write([record], durable=False)
        except Exception as exc:
            raise _write_failure(exc) from None

    async def admit_change(self, note: AuditNote, room: int = CHANGE_ROOM_BYTES) -> None:
        """Set aside `room` in the journal for the record of the change `note`'s request is
        about to make, so that once made its record cannot fail for want of space; 503
        `audit-unavailable` if there is none, and the change is not made. The record gives the
        room back."""
        await self._staged(_Claim(room))
        note.change = True
        note.room += room

    def release(self, room: int) -> None:
        """Give back room set aside for a change whose record will not be written."""
        if room:
            with self._journal.lock:
                self._claimed -= room

    async def _staged(self, record: AuditRecord | _Claim) -> None:
        """Wait for `record`'s write. Records of one turn of the event loop reach the writer
        together, after that turn: the requests woken by one write come back with their next
        records in the same turn, and handing each over at once would wake the writer for a
        group of one while the rest are still being made."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(loop)
        staged = self._stages.get(loop)
        if staged is None:
            staged = self._stages.setdefault(loop, [])
        if not staged:
            loop.call_soon(self._hand_over, staged)
        staged.append((record, waiter))
        assert waiter.future is not None
        await waiter.future

    def _hand_over(self, staged: list[Entry]) -> None:
        entries = staged[:]
        staged.clear()
        self._submit(entries)

    def open(self) -> None:
        """Begin this process's journal now, its reserve set aside while the disk has room: at
        start, rather than at the first record, which may come once the disk is full. 503 if
        the trail cannot be written to."""
        self._wait_now(_Claim(0))

    @contextlib.contextmanager
    def changing(self) -> Iterator[Callable[..., None]]:
        """A change made on a thread (by the CLI, the maintenance), with room set aside for its
        record before it: 503, and the block does not run, if there is none. The block makes
        the change, then calls what this yields (as `record`) to write its record there."""
        self._wait_now(_Claim(CHANGE_ROOM_BYTES))
        recorded = False

        def record(operation: str, **fields: Any) -> None:
            nonlocal recorded
            recorded = True  # the write gives the room back, written or not
            self.record(operation, room=CHANGE_ROOM_BYTES, **fields)

        try:
            yield record
        finally:
            if not recorded:
                self.release(CHANGE_ROOM_BYTES)

    def write_now(self, record: AuditRecord) -> None:
        """`write` for a thread: blocks until the record is written."""
        self._wait_now(record)

    def _wait_now(self, record: AuditRecord | _Claim) -> None:
        waiter = _Waiter(None)
        self._submit([(record, waiter)])
        assert waiter.thread_future is not None
        waiter.thread_future.result()

    def record(
        self,
        operation: str,
        *,
        principal: str,
        key: str | None = None,
        key_version: KeyVersion = None,
        status: int = 200,
        problem: str | None = None,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        room: int = 0,
    ) -> None:
        """Record an action taken outside an HTTP request (by the CLI, say, or the service
        itself: `principal` "system"), on disk, before the caller goes on; `room`, what
        `changing` set aside for it."""
        self.write_now(
            AuditRecord(
                time=self.now(),
                request_id=request_id or secrets.token_hex(16),
                client=None,
                principal=principal,
                operation=operation,
                key=key,
                key_version=key_version,
                status=status,
                problem=problem,
                details=details or {},
                change=True,
                room=room,
            )
        )

    def _submit(self, entries: list[Entry]) -> None:
        with self._condition:
            self._pending.extend(entries)
            if self._thread is None:  # the first record, or the first since `close`
                self._closing = False
                self._thread = threading.Thread(target=self._run, name="cipherd-audit", daemon=True)
                self._thread.start()
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                if not self._pending and not self._closing:
                    # Records written but not on disk go there LAZY_SYNC_SECONDS after the first.
                    dirty = self._dirty_since
                    due = None if dirty is None else dirty + LAZY_SYNC_SECONDS - time.monotonic()
                    self._condition.wait(None if due is None else max(due, 0))
                group, self._pending = self._pending, []
                closing = self._closing and not group
                if closing:
                    self._thread = None
            if not group:
                dirty = self._dirty_since
                if closing or (dirty is not None and time.monotonic() - dirty >= LAZY_SYNC_SECONDS):
                    self._sync_dirty()
                if closing:
                    return
                continue
            # Changes first, in a write of their own: a failure of the others (no room past
            # what changes set aside) must not fail records whose changes are made.
            changes: list[tuple[AuditRecord, _Waiter]] = []
            others: list[tuple[AuditRecord, _Waiter]] = []
            claims: list[tuple[_Claim, _Waiter]] = []
            for item, waiter in group:
                if isinstance(item, _Claim):
                    claims.append((item, waiter))
                else:
                    (changes if item.change else others).append((item, waiter))
            for entries, durable in ((changes, True), (others, False)):
                if entries:
                    records = [record for record, _ in entries]
                    self._settle(entries, self._written(records, durable))
            for claim, waiter in claims:
                self._settle([(claim, waiter)], self._claimed_room(claim.room))

    def _written(self, records: list[AuditRecord], durable: bool) -> Exception | None:
        """Write `records` (as `_write`); the failure their requests get, if any."""
        try:
            if not self._key:
                self._key = self._store.audit.mac_key()
            self._write(records, self._sync_all or durable)
        except Exception as exc:  # any failure to write fails every request of the group
            return _write_failure(exc)
        return None

    def _claimed_room(self, room: int) -> Exception | None:
        """Set `room` aside for a change's record (and see that the audit file takes writes):
        the failure the change gets instead, if any."""
        try:
            if not self._key:
                self._key = self._store.audit.mac_key()
            with self._journal.lock:
                segment = self._writable_segment()
                if not segment.set_aside(self._claimed + room):
                    return Problem(
                        503,
                        "storage-full",
                        "Storage full",
                        "the audit journal's disk has no room for the record of this change, so "
                        "it was not made; retry once space is freed",
                    )
                if self._file is not None:
                    self._append_to_file([], sync=False)
                self._claimed += room
        except Exception as exc:
            return _write_failure(exc)
        return None

    def _settle(self, group: Sequence[tuple[object, _Waiter]], error: Exception | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for _, waiter in group:
            if waiter.thread_future is not None:
                if error is None:
                    waiter.thread_future.set_result(None)
                else:
                    waiter.thread_future.set_exception(error)
            elif waiter.loop is not None and waiter.future is not None:
                by_loop.setdefault(waiter.loop, []).append(waiter.future)
        for loop, futures in by_loop.items():  # one wake-up per event loop, not per request
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle_on_loop, futures, error)

    def _sync_dirty(self) -> None:
        """Put the records written since the last sync on disk. The sync runs outside the
        journal's lock: the event loop goes on writing records meanwhile rather than wait for
        the disk."""
        with self._journal.lock:
            dirty, segment = self._dirty_since, self._journal.current
            if dirty is None or segment is None:
                return
            self._dirty_since = None
        try:
            segment.sync()
        except OSError:  # tried again LAZY_SYNC_SECONDS on; a durable write fails meanwhile
            with self._journal.lock:
                if self._journal.current is segment:
                    self._dirty_since = min(dirty, self._dirty_since or dirty)

    def _write(self, records: Sequence[AuditRecord], durable: bool) -> None:
        """Append `records` to the chain in the journal (and the file), on disk if `durable`
        (the writer thread puts the others there within LAZY_SYNC_SECONDS). They may use the
        room their changes set aside, and leave the room of changes still in flight."""
        released = sum(record.room for record in records)
        with self._journal.lock:
            self._claimed -= released  # given back whether or not the write succeeds
            segment = self._writable_segment()
            dirty = self._dirty_since
            rows, data = self._chain.seal(self._key, records)
            # With no change in flight, the disk takes what it can (the reserve, and any room
            # freed since); with some, these records must leave their room.
            if self._claimed and not segment.set_aside(len(data) + self._claimed):
                raise audit_unavailable(
                    "the audit journal's disk is full, so this request was not carried out; "
                    "retry shortly"
                )
            try:
                segment.append(data, sync=durable)
            except OSError:
                if os.fstat(segment.fd).st_size != segment.size:
                    # Not cut back: what the segment holds is unknown. Its whole lines go to
                    # the store; this process goes on in a fresh chain.
                    self._journal.retire()
                    self._chain = Chain()
                raise
            # In the journal: the chain moves on past these rows whatever fails from here on,
            # or the next records would take their positions again.
            self._chain.advance(rows[-1])
            self._mover.kept(segment, len(data), rows)
            self._dirty_since = None if durable else (dirty or time.monotonic())
            file_error: OSError | None = None
            if self._file is not None:
                try:
                    self._append_to_file(rows, durable)
                except OSError as exc:
                    file_error = exc
        if dirty is None and not durable:  # the writer puts these on disk if nothing else does
            with self._condition:
                self._condition.notify()
        self._mover.wake()
        if file_error is not None:
            raise file_error

    def _writable_segment(self) -> Segment:
        """The segment records go to, begun if there is none; 503 while the store is so far
        behind that the journal holds `backlog_bytes` it has not taken."""
        mover = self._mover
        if mover.thread is None:
            mover.start(self._key)
        segment = self._journal.current
        if segment is None:  # a new chain
            segment = self._journal.begin(self._chain.name, self._chain.seq + 1)
            mover.began()
        if segment.size - mover.moved_bytes > self._backlog:
            raise audit_unavailable(
                "the key store has not taken this process's audit records for a while and its "
                "journal is full, so this request was not carried out; retry shortly"
            )
        return segment

    def _append_to_file(self, rows: Sequence[AuditRow], sync: bool) -> None:
        assert self._file is not None
        data = "".join(canonical(record_json(row)) + "\n" for row in rows).encode()
        fd = os.open(self._file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while data:
                data = data[os.write(fd, data) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until every record this process has written is in the store (a reader of the
        store then finds them), or `timeout` has passed."""
        self._mover.flush(self._chain.seq, timeout)

    def close(self) -> None:
        """Write what is pending, move the journal into the store, and stop both threads (a
        later record starts them again). A journal the store would not take stays for the
        next process to move."""
        with self._condition:
            self._closing = True
            self._condition.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=10)
        self._mover.stop()
        with self._journal.lock:
            segment = self._journal.current
            if segment is not None and self._mover.release(segment):
                segment.remove()
                self._journal.current = None
                self._chain = Chain()


def _write_failure(exc: Exception) -> Problem:
    """The 503 that a failure to write records gives their requests."""
    if isinstance(exc, Problem):
        return exc
    log.error("audit records not written: %s", " ".join(str(exc).split()))
    return audit_unavailable(
        "the audit record of this request could not be written, so it was not carried out; "
        "retry shortly"
    )
