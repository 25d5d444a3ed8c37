"""The audit trail: who did what with which key, allowed or refused, in hash chains.

Every request that names a key or a token or needs a token gets one record (`app.http` builds it
from what the request's `AuditNote` learned on the way); actions outside a request (the CLI,
scheduled deletions, automatic rotations) are recorded with `AuditTrail.record`. A record holds
time, request id, client address, principal (a token's id or `admin`, never a token), operation,
key name and version(s), status and problem type, and details that are never secret.

Records are stored in the key store and, when `CIPHERD_AUDIT_FILE` is set, appended to a
JSON-lines file first. Each process writes its own chain: record n carries an HMAC-SHA256, under
a key the store keeps wrapped under the root key's hierarchy, over its content and the MAC of
record n - 1, and the chain's
head (its last position) is kept with a tag of its own. Without the root key nobody can forge a
record, change one, reorder or drop records, or cut a chain short without `verify` finding it.

Writes are grouped: one thread per process writes every record that arrived while the previous
group was being made durable, in one transaction (group commit), so concurrent requests share
one fsync. A request is answered only once its record is durable; a record that cannot be
written fails its request with 503 `audit-unavailable` (fail closed).
"""

import asyncio
import contextlib
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
from app.store import AuditHead, AuditQuery, AuditRow, KeyStore

__all__ = ["AuditNote", "AuditQuery", "AuditRecord", "AuditTrail", "verify"]

log = logging.getLogger("cipherd.audit")

_NONE = (0xFFFFFFFF).to_bytes(4, "big")  # the encoding of a missing field: no length is this
_VERIFY_PAGE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

KeyVersion = int | list[int] | None


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

    def versions(self, versions: Sequence[int | None]) -> None:
        """The versions a batch used: one version as a number, several as a sorted list."""
        distinct = sorted({v for v in versions if v is not None})
        self.key_version = distinct[0] if len(distinct) == 1 else (distinct or None)


@dataclass(frozen=True, slots=True)
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


def _mac(key: bytes, values: tuple[Any, ...], previous: bytes) -> bytes:
    """HMAC-SHA256 over a record's columns but its MAC (in table order), and the MAC of the
    record before it in its chain."""
    parts = [b"record"]
    for value in values:
        if value is None:
            parts.append(_NONE)
        else:
            data = (repr(value) if type(value) is float else str(value)).encode()
            parts.append(len(data).to_bytes(4, "big"))
            parts.append(data)
    parts.append(previous)
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def _record_mac(key: bytes, row: AuditRow, previous: bytes) -> bytes:
    return _mac(key, row.values()[:-1], previous)


def _head_tag(key: bytes, chain: str, seq: int, last_mac: bytes) -> bytes:
    message = b"head" + _field(chain) + _field(str(seq)) + _field(last_mac.hex())
    return hmac.new(key, message, hashlib.sha256).digest()


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


class AuditTrail:
    """This process's chain of audit records, written by group commit."""

    def __init__(self, store: KeyStore, file: Path | None = None, sync: bool = True) -> None:
        self._store = store
        self._key = b""  # read from the store by the writer's first group
        self._file = file
        self._sync = sync
        self._condition = threading.Condition()
        self._pending: list[tuple[AuditRecord | None, _Waiter]] = []
        self._thread: threading.Thread | None = None
        # Per event loop: records of the current turn, touched only on that loop's thread.
        self._stages: dict[asyncio.AbstractEventLoop, list[tuple[AuditRecord | None, _Waiter]]]
        self._stages = {}
        self._closing = False
        self._new_chain()

    def _new_chain(self) -> None:
        self._chain = secrets.token_hex(8)
        self._seq = 0
        self._last_mac = b""

    async def write(self, record: AuditRecord) -> None:
        """Return once `record` is durable; 503 `audit-unavailable` if it cannot be written."""
        await self._staged(record)

    async def ensure_writable(self) -> None:
        """Return once the trail has just taken a durable write (the file opened and synced,
        the chain's head stored; 503 if not): a change to keys or tokens checks this before it
        is made, and its own record follows it."""
        await self._staged(None)

    async def _staged(self, record: AuditRecord | None) -> None:
        """Wait for `record`'s write. Records of one turn of the event loop reach the writer
        together, after that turn: the requests woken by one durable write come back with
        their next records in the same turn, and handing each over at once would wake the
        writer for a group of one while the rest are still being made."""
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

    def _hand_over(self, staged: list[tuple[AuditRecord | None, _Waiter]]) -> None:
        entries = staged[:]
        staged.clear()
        self._submit(entries)

    def ensure_writable_now(self) -> None:
        """`ensure_writable` for a thread."""
        waiter = _Waiter(None)
        self._submit([(None, waiter)])
        assert waiter.thread_future is not None
        waiter.thread_future.result()

    def write_now(self, record: AuditRecord) -> None:
        """`write` for a thread: blocks until the record is durable."""
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
        itself: `principal` "system"), durably, before the caller goes on."""
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
            )
        )

    def _submit(self, entries: list[tuple[AuditRecord | None, _Waiter]]) -> None:
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
                while not self._pending and not self._closing:
                    self._condition.wait()
                if not self._pending:
                    self._thread = None
                    return
                group, self._pending = self._pending, []
            error: Exception | None = None
            try:
                self._commit([record for record, _ in group if record is not None])
            except Exception as exc:  # any failure to store fails every request of the group
                log.error("audit records not written: %s", " ".join(str(exc).split()))
                error = audit_unavailable(
                    "the audit record of this request could not be written, so it was not "
                    "carried out; retry shortly"
                )
            self._settle(group, error)

    def _settle(
        self, group: list[tuple[AuditRecord | None, _Waiter]], error: Exception | None
    ) -> None:
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

    def _commit(self, records: Sequence[AuditRecord]) -> None:
        if not self._key:
            self._key = self._store.audit_mac_key()
        rows: list[AuditRow] = []
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
            last_mac = _mac(self._key, values, last_mac)
            rows.append(AuditRow(*values, mac=last_mac))
        head = AuditHead(self._chain, seq, _head_tag(self._key, self._chain, seq, last_mac))
        try:
            if self._file is not None:
                self._append_to_file(rows)
            self._store.append_audit(rows, head, self._sync)
        except Exception:
            # Whether the store kept any of it is unknown: go on in a fresh chain rather than
            # risk positions that may be taken.
            self._new_chain()
            raise
        self._seq, self._last_mac = seq, last_mac

    def _append_to_file(self, rows: Sequence[AuditRow]) -> None:
        assert self._file is not None
        data = "".join(_canonical(record_json(row)) + "\n" for row in rows).encode()
        fd = os.open(self._file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while data:
                data = data[os.write(fd, data) :]
            if self._sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Write what is pending, then stop the writer (a later record starts it again)."""
        with self._condition:
            self._closing = True
            self._condition.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=10)


@dataclass(frozen=True)
class ChainFault:
    """The first record of a chain that does not verify, and why."""

    chain: str
    seq: int
    reason: str

    def __str__(self) -> str:
        return f"chain {self.chain} record {self.seq}: {self.reason}"


def verify(store: KeyStore) -> tuple[int, list[ChainFault]]:
    """Check every chain: the number of records read, and each chain's first fault."""
    key = store.audit_mac_key()
    count, faults = 0, []
    for head in store.audit_heads():
        checked, fault = _verify_chain(store, key, head)
        count += checked
        if fault is not None:
            faults.append(fault)
    return count, faults


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
    rows = store.audit_records(AuditQuery(**{**query.__dict__, "limit": query.limit + 1}))
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
