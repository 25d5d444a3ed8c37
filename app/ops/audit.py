"""The audit trail: who did what with which key, allowed or refused, in hash chains.

Every request that names a key or a token or needs a token gets one record (`app.http` builds it
from what the request's `AuditNote` learned on the way); actions outside a request (the CLI,
scheduled deletions, automatic rotations) are recorded with `AuditTrail.record`. A record holds
time, request id, client address, principal (a token's id or `admin`, never a token), operation,
key name and version(s), status and problem type, and details that are never secret.

Each process writes its own chain: record n carries an HMAC-SHA256, under a key the store keeps
wrapped under the root key's hierarchy, over its content and the MAC of record n - 1, and the
chain's head (its last position) is kept with a tag of its own. Without the root key nobody can
forge a record, change one, reorder or drop records, or cut a chain short without `verify`
finding it.

Records are written to the process's journal on its own disk (`app.store.journal`) and, when
`CIPHERD_AUDIT_FILE` is set, appended to a JSON-lines file; a second thread moves them from the
journal into the store, where every replica's records are read and verified. Writes are
grouped: one thread writes every record that arrived while the previous group was being
written, in one `write` (group commit). A request is answered only once its record is written,
and a change (to keys, tokens, the FE ledger) only once its record is on disk; other records
reach the disk within LAZY_SYNC_SECONDS, or before their answers with `CIPHERD_AUDIT_SYNC=full`.
A record that cannot be written fails its request with 503 `audit-unavailable` (fail closed).
The journal rides out a store that is down or full: requests go on while it holds less than
`CIPHERD_AUDIT_BACKLOG_BYTES` the store has not taken.
"""

import asyncio
import collections
import contextlib
import functools
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app.ops.errors import Problem, invalid_input
from app.settings import Settings
from app.store import AuditHead, AuditQuery, AuditRow, KeyStore, journal
from app.store.journal import Segment

__all__ = ["AuditNote", "AuditQuery", "AuditRecord", "AuditTrail", "verify"]

log = logging.getLogger("cipherd.audit")

_NONE = (0xFFFFFFFF).to_bytes(4, "big")  # the encoding of a missing field: no length is this
_VERIFY_PAGE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

KeyVersion = int | list[int] | None

# The chain that names every chain as it begins; chains named in it begin with "r" (the older,
# unregistered ones were plain hex).
REGISTER = "@chains"
_REGISTERED_CHAIN = "r"
# Who the trail says did what the service does by itself.
SYSTEM = "system"


def audit_unavailable(detail: str) -> Problem:
    return Problem(503, "audit-unavailable", "Audit unavailable", detail)


@dataclass(slots=True)
class AuditNote:
    """What a request learns about itself for its record, filled in as it runs: who called,
    which key and version(s), the problem it ended with, and details (never secret)."""

    principal: str | None = None
    key: str | None = None
    key_version: KeyVersion = None
    problem: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    change: bool = False

    def versions(self, versions: Sequence[int | None]) -> None:
        """The versions a batch used: one version as a number, several as a sorted list."""
        distinct = sorted({v for v in versions if v is not None})
        self.key_version = distinct[0] if len(distinct) == 1 else (distinct or None)


@dataclass(slots=True)  # not frozen: made for every request, and a frozen one costs more
class AuditRecord:
    time: float
    request_id: str
    client: str | None
    principal: str | None
    operation: str
    key: str | None
    key_version: KeyVersion
    status: int
    problem: str | None
    details: dict[str, Any]
    change: bool = False  # a change to keys, tokens or the FE ledger: on disk before its answer


def _canonical(value: object) -> str:
    if not value and isinstance(value, dict):  # most records: no details
        return "{}"
    if type(value) is int:
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _field(value: str | None) -> bytes:
    if value is None:
        return _NONE
    data = value.encode()
    return len(data).to_bytes(4, "big") + data


class KeyedSha256:
    """HMAC-SHA256 under one key, from its inner and outer hash states computed once (RFC 2104).
    The same MAC as `hmac.digest`, which lets go of the interpreter lock at every call: on the
    event loop, that handed it to the audit mover, and the loop waited for the mover's turn."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _SHA256_BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(_SHA256_BLOCK, b"\0")
        self._inner = hashlib.sha256(bytes(byte ^ 0x36 for byte in key))
        self._outer = hashlib.sha256(bytes(byte ^ 0x5C for byte in key))

    def digest(self, message: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


_SHA256_BLOCK = 64
# The MAC key's states, made once per key (a process has one; `verify` may meet another).
_keyed = functools.lru_cache(maxsize=4)(KeyedSha256)


def _mac(key: bytes, columns: bytes, previous: bytes) -> bytes:
    """HMAC-SHA256 over a record's columns but its MAC (`journal.columns`: a JSON array in
    table order, the journal line's own text) and the MAC of the record before it in its
    chain."""
    return _keyed(key).digest(b"record" + columns + previous)


def _record_mac(key: bytes, row: AuditRow, previous: bytes) -> bytes:
    return _mac(key, journal.columns(row[:-1]).encode(), previous)


def _head_tag(key: bytes, chain: str, seq: int, last_mac: bytes) -> bytes:
    message = b"head" + _field(chain) + _field(str(seq)) + _field(last_mac.hex())
    return _keyed(key).digest(message)


def _moment(seconds: float) -> str:
    """ISO 8601 to the microsecond, rounded down: a record is at or after its listed time, so
    `since` set to it finds it and `until` set to it leaves it out."""
    micros = math.floor(seconds * 1_000_000)
    return (_EPOCH + timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")


def record_json(row: AuditRow) -> dict[str, Any]:
    """A stored record as the API, the CLI and the file show it."""
    return {
        "time": _moment(row.time),
        "request_id": row.request_id,
        "client": row.client,
        "principal": row.principal,
        "operation": row.operation,
        "key": row.key,
        "key_version": None if row.key_version is None else json.loads(row.key_version),
        "status": row.status,
        "outcome": "success" if row.status < 400 else "failure",
        "problem": row.problem,
        "details": json.loads(row.details),
        "chain": row.chain,
        "seq": row.seq,
        "mac": row.mac.hex(),
    }


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


Entry = tuple[AuditRecord | None, _Waiter]

# A segment is closed and a new one begun once it has this much in it, all in the store.
SEGMENT_BYTES = 1 << 20
# Records not yet on disk in the "changes" mode are put there at most this much later.
LAZY_SYNC_SECONDS = 0.1
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
    ) -> None:
        self._store = store
        self._key = b""  # read from the store by the writer's first group
        self._directory = journal
        self._file = file
        self._sync_all = sync == "full"
        self._reserve = reserve_bytes
        self._backlog = backlog_bytes
        self._condition = threading.Condition()
        self._pending: list[Entry] = []
        self._thread: threading.Thread | None = None
        # Per event loop: records of the current turn, touched only on that loop's thread.
        self._stages: dict[asyncio.AbstractEventLoop, list[Entry]] = {}
        self._closing = False
        self._dirty_since: float | None = None  # the first record written but not synced
        # The journal, shared by the writer (appends) and the mover (reads, starts segments).
        self._segment_lock = threading.Lock()
        self._segment: Segment | None = None
        # Segments of ended chains, not yet all in the store.
        self._retired: list[Segment] = []
        # What the mover has put in the store: a byte offset in the segment, and the chain
        # position it stands for; waited on by `flush`.
        self._moved = threading.Condition()
        self._moved_bytes = 0
        # The rows of recent writes as the writer made them, so that the mover need not read
        # and decode them again: (segment, start, end, rows), at most WRITES_KEPT of them.
        self._written: collections.deque[tuple[Segment, int, int, list[AuditRow]]] = (
            collections.deque()
        )
        self._moved_seq = 0
        self._mover: threading.Thread | None = None
        self._mover_wake = threading.Event()
        self._store_down = False
        self._new_chain()

    @classmethod
    def for_settings(cls, store: KeyStore, settings: Settings) -> "AuditTrail":
        return cls(
            store,
            settings.audit_journal_dir,
            settings.audit_file,
            settings.audit_sync,
            settings.audit_reserve_bytes,
            settings.audit_backlog_bytes,
        )

    def _new_chain(self) -> None:
        self._chain = _REGISTERED_CHAIN + secrets.token_hex(8)
        self._seq = 0
        self._last_mac = b""

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

    async def ensure_writable(self) -> None:
        """Return once the trail has just taken a write (503 if not): a change to keys or
        tokens checks this before it is made, and its own record follows it."""
        await self._staged(None)

    async def _staged(self, record: AuditRecord | None) -> None:
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

    def ensure_writable_now(self) -> None:
        """`ensure_writable` for a thread."""
        self._wait_now(None)

    def write_now(self, record: AuditRecord) -> None:
        """`write` for a thread: blocks until the record is written."""
        self._wait_now(record)

    def _wait_now(self, record: AuditRecord | None) -> None:
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
    ) -> None:
        """Record an action taken outside an HTTP request (by the CLI, say, or the service
        itself: `principal` "system"), on disk, before the caller goes on."""
        self.write_now(
            AuditRecord(
                time=time.time(),
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
            records = [record for record, _ in group if record is not None]
            error: Exception | None = None
            try:
                if not self._key:
                    self._key = self._store.audit_mac_key()
                self._write(records, self._sync_all or any(r.change for r in records))
            except Exception as exc:  # any failure to write fails every request of the group
                error = _write_failure(exc)
            self._settle(group, error)

    def _settle(self, group: list[Entry], error: Exception | None) -> None:
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
        segment's lock: the event loop goes on writing records meanwhile rather than wait for
        the disk."""
        with self._segment_lock:
            dirty, segment = self._dirty_since, self._segment
            if dirty is None or segment is None:
                return
            self._dirty_since = None
        try:
            segment.sync()
        except OSError:  # tried again LAZY_SYNC_SECONDS on; a durable write fails meanwhile
            with self._segment_lock:
                if self._segment is segment:
                    self._dirty_since = min(dirty, self._dirty_since or dirty)

    def _write(self, records: Sequence[AuditRecord], durable: bool) -> None:
        """Append `records` to the chain in the journal (and the file), on disk if `durable`
        (the writer thread puts the others there within LAZY_SYNC_SECONDS). With no records, a
        check that both take writes."""
        with self._segment_lock:
            segment = self._writable_segment()
            dirty = self._dirty_since
            if not records:
                if self._file is not None:
                    self._append_to_file([], sync=False)
                return
            rows: list[AuditRow] = []
            lines: list[str] = []
            seq, last_mac = self._seq, self._last_mac
            for record in records:
                seq += 1
                values = (
                    self._chain,
                    seq,
                    record.time,
                    record.request_id,
                    record.client,
                    record.principal,
                    record.operation,
                    record.key,
                    None if record.key_version is None else _canonical(record.key_version),
                    record.status,
                    record.problem,
                    _canonical(record.details),
                )
                columns = journal.columns(values)
                last_mac = _mac(self._key, columns.encode(), last_mac)
                rows.append(AuditRow(*values, mac=last_mac))
                lines.append(journal.line(columns, last_mac))
            data = "".join(lines).encode()
            try:
                segment.append(data, sync=durable)
            except OSError:
                if os.fstat(segment.fd).st_size != segment.size:
                    # Not cut back: what the segment holds is unknown. Its whole lines go to
                    # the store; this process goes on in a fresh chain.
                    self._retired.append(segment)
                    self._segment = None
                    self._new_chain()
                raise
            if len(self._written) < WRITES_KEPT:
                self._written.append((segment, segment.size - len(data), segment.size, rows))
            if self._file is not None:
                self._append_to_file(rows, durable)
            self._seq, self._last_mac = seq, last_mac
            self._dirty_since = None if durable else (dirty or time.monotonic())
        if dirty is None and not durable:  # the writer puts these on disk if nothing else does
            with self._condition:
                self._condition.notify()
        if not self._mover_wake.is_set():  # set already: the mover is on its way
            self._mover_wake.set()

    def _writable_segment(self) -> Segment:
        """The segment records go to, begun if there is none; 503 while the store is so far
        behind that the journal holds `backlog_bytes` it has not taken."""
        if self._mover is None:
            self._mover = threading.Thread(target=self._move, name="cipherd-audit-mover")
            self._mover.daemon = True
            self._mover.start()
        if self._segment is None:  # a new chain
            self._segment = Segment(
                journal.open_directory(self._directory), self._chain, self._seq + 1, self._reserve
            )
            self._moved_bytes = self._moved_seq = 0
        if self._segment.size - self._moved_bytes > self._backlog:
            raise audit_unavailable(
                "the key store has not taken this process's audit records for a while and its "
                "journal is full, so this request was not carried out; retry shortly"
            )
        return self._segment

    def _append_to_file(self, rows: Sequence[AuditRow], sync: bool) -> None:
        assert self._file is not None
        data = "".join(_canonical(record_json(row)) + "\n" for row in rows).encode()
        fd = os.open(self._file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while data:
                data = data[os.write(fd, data) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    # The mover: journal to store.

    def _move(self) -> None:
        next_orphans = time.monotonic()
        while True:
            self._mover_wake.wait(ORPHAN_SECONDS)
            time.sleep(MOVE_DELAY_SECONDS)
            self._mover_wake.clear()
            try:
                self._move_retired()
                self._move_own()
                if time.monotonic() >= next_orphans:
                    adopt_orphans(self._store, self._directory, self._key)
                    next_orphans = time.monotonic() + ORPHAN_SECONDS
            except Exception as exc:
                if not self._store_down:
                    log.error(
                        "audit records not moved to the store (kept in the journal): %s",
                        " ".join(str(exc).split()),
                    )
                self._store_down = True
                time.sleep(STORE_RETRY_SECONDS)
                self._mover_wake.set()
                continue
            if self._store_down:
                log.info("audit records reach the store again")
                self._store_down = False
            with self._condition:
                if self._closing and self._thread is None and not self._unmoved():
                    self._mover = None
                    return

    def _unmoved(self) -> bool:
        segment = self._segment
        return bool(self._retired) or (segment is not None and segment.size > self._moved_bytes)

    def _move_retired(self) -> None:
        while self._retired:
            segment = self._retired[0]
            _store_rows(self._store, self._key, journal.decode(journal.read_all(segment.fd)))
            segment.remove()
            self._retired.pop(0)

    def _move_own(self) -> None:
        segment = self._segment
        if segment is None:
            return
        end = segment.size
        while self._moved_bytes < end:
            rows, upto = self._kept_rows(segment, self._moved_bytes, end)
            if not rows:
                data = segment.read(self._moved_bytes, MOVE_CHUNK_BYTES)
                cut = data.rfind(b"\n") + 1
                if not cut:  # one record longer than a piece (an FE keygen's function, say)
                    data = segment.read(self._moved_bytes, end - self._moved_bytes)
                    cut = data.find(b"\n") + 1
                rows, upto = journal.decode(data[:cut]), self._moved_bytes + cut
            last = _store_rows(self._store, self._key, rows)
            with self._moved:
                self._moved_bytes = upto
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
        """Close a segment whose records are all in the store and begin the next, if the disk
        has room for its reserve (else go on in this one)."""
        with self._segment_lock:
            if self._segment is not segment or segment.size != self._moved_bytes:
                return
            try:
                fresh = Segment(self._directory, self._chain, self._seq + 1, self._reserve)
            except OSError:
                return
            segment.remove()
            self._segment, self._moved_bytes = fresh, 0

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until every record this process has written is in the store (a reader of the
        store then finds them), or `timeout` has passed."""
        target = self._seq
        self._mover_wake.set()
        with self._moved:
            self._moved.wait_for(lambda: self._moved_seq >= target, timeout)

    def close(self) -> None:
        """Write what is pending, move the journal into the store, and stop both threads (a
        later record starts them again). A journal the store would not take stays for the
        next process to move."""
        with self._condition:
            self._closing = True
            self._condition.notify()
            threads = [t for t in (self._thread, self._mover) if t is not None]
        self._mover_wake.set()
        for thread in threads:
            thread.join(timeout=10)
        with self._segment_lock:
            segment = self._segment
            if segment is not None and segment.size == self._moved_bytes and not self._retired:
                segment.remove()
                self._written.clear()
                self._segment = None
                self._new_chain()


def _write_failure(exc: Exception) -> Problem:
    """The 503 that a failure to write records gives their requests."""
    if isinstance(exc, Problem):
        return exc
    log.error("audit records not written: %s", " ".join(str(exc).split()))
    return audit_unavailable(
        "the audit record of this request could not be written, so it was not carried out; "
        "retry shortly"
    )


def _store_rows(store: KeyStore, key: bytes, rows: Sequence[AuditRow]) -> int:
    """Put `rows` (of one chain, in order) into the store; the last position."""
    if not rows:
        return 0
    if rows[0].seq == 1:
        _register(store, key, rows[0].chain)
    last = rows[-1]
    head = AuditHead(last.chain, last.seq, _head_tag(key, last.chain, last.seq, last.mac))
    store.append_audit(rows, head)
    return last.seq


def adopt_orphans(store: KeyStore, directory: Path, key: bytes | None = None) -> int:
    """Move into the store the journals of processes that have ended; how many segments."""
    if not directory.is_dir():
        return 0
    key = key or store.audit_mac_key()
    moved = 0
    for path, fd in journal.orphans(directory):
        try:
            _store_rows(store, key, journal.decode(journal.read_all(fd)))
            path.unlink(missing_ok=True)
            moved += 1
        finally:
            os.close(fd)
    return moved


@dataclass(frozen=True)
class ChainFault:
    """The first record of a chain that does not verify, and why."""

    chain: str
    seq: int
    reason: str

    def __str__(self) -> str:
        return f"chain {self.chain} record {self.seq}: {self.reason}"


def verify(store: KeyStore) -> tuple[int, list[ChainFault]]:
    """Check every chain, and that every chain the register names is there and every
    registered kind of chain is named in it: the number of records read, and each chain's first
    fault."""
    key = store.audit_mac_key()
    count, faults = 0, []
    heads = store.audit_heads()
    for head in heads:
        checked, fault = _verify_chain(store, key, head)
        if head.chain != REGISTER:  # records of what was done, not of the trail's bookkeeping
            count += checked
        if fault is not None:
            faults.append(fault)
    registered = {json.loads(row.details)["chain"] for row in _chain_rows(store, REGISTER)}
    present = {head.chain for head in heads}
    for chain in sorted(registered - present):
        faults.append(ChainFault(chain, 1, "registered when it began, but gone: it was removed"))
    for chain in sorted(present - registered):
        if chain.startswith(_REGISTERED_CHAIN):
            faults.append(ChainFault(chain, 1, "not in the register of chains"))
    return count, faults


def _register(store: KeyStore, key: bytes, chain: str) -> None:
    """Name `chain` in the register of chains (once), before its first records reach the store:
    a chain removed whole, head and all, is then still found missing."""

    def extend(register: Sequence[AuditRow]) -> tuple[list[AuditRow], AuditHead | None]:
        if any(json.loads(row.details)["chain"] == chain for row in register):
            return [], None
        seq = len(register) + 1
        values = (
            REGISTER,
            seq,
            time.time(),
            secrets.token_hex(16),
            None,
            SYSTEM,
            "audit_chain_begun",
            None,
            None,
            200,
            None,
            _canonical({"chain": chain}),
        )
        mac = _mac(key, journal.columns(values).encode(), register[-1].mac if register else b"")
        head = AuditHead(REGISTER, seq, _head_tag(key, REGISTER, seq, mac))
        return [AuditRow(*values, mac=mac)], head

    store.extend_audit_chain(REGISTER, extend)


def _verify_chain(store: KeyStore, key: bytes, head: AuditHead) -> tuple[int, ChainFault | None]:
    expected, last_mac = 1, b""
    for row in _chain_rows(store, head.chain):
        if row.seq != expected:
            return expected - 1, ChainFault(
                head.chain, expected, f"missing (the chain goes on at record {row.seq})"
            )
        if not hmac.compare_digest(row.mac, _record_mac(key, row, last_mac)):
            return expected - 1, ChainFault(
                head.chain, row.seq, "its MAC does not verify: the record was changed or moved"
            )
        expected, last_mac = expected + 1, row.mac
    last = expected - 1
    if head.seq == 0 and not head.tag:
        return last, ChainFault(head.chain, 1, "the chain has no head: it was tampered with")
    if head.seq > last:
        return last, ChainFault(
            head.chain, last + 1, f"missing (the chain's head says {head.seq} records)"
        )
    if head.seq < last or not hmac.compare_digest(
        head.tag, _head_tag(key, head.chain, last, last_mac)
    ):
        return last, ChainFault(head.chain, head.seq, "the chain's head does not verify")
    return last, None


def _chain_rows(store: KeyStore, chain: str) -> Iterator[AuditRow]:
    after = 0
    while True:
        page = store.audit_chain(chain, after, _VERIFY_PAGE)
        yield from page
        if len(page) < _VERIFY_PAGE:
            return
        after = page[-1].seq


def listing(store: KeyStore, query: AuditQuery) -> tuple[list[dict[str, Any]], str | None]:
    """A page of records and the `after` of the next one (None on the last page)."""
    # The register of chains is the trail's own bookkeeping, not a record of what was done.
    rows = store.audit_records(
        AuditQuery(**{**query.__dict__, "limit": query.limit + 1, "other_than_chain": REGISTER})
    )
    next_after = None
    if len(rows) > query.limit:
        rows = rows[: query.limit]
        next_after = f"{rows[-1].chain}.{rows[-1].seq}"
    return [record_json(row) for row in rows], next_after


def page_start(store: KeyStore, after: str) -> tuple[float, str, int]:
    """The (time, chain, seq) a page's `next` stands for; 422 if it names no record."""
    chain, _, seq = after.partition(".")
    row = store.audit_record(chain, int(seq)) if seq.isdecimal() else None
    if row is None:
        raise invalid_input(f"after: {after!r} is not the `next` of a page")
    return row.time, row.chain, row.seq
