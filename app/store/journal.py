"""The audit journal: a process's audit records on its own disk, before they reach the store.

An audit record must be written before its request is answered, and the shared store is the
slowest and least available place to write it: a transaction per group of records costs more
than the request itself, and a database outage or a full disk would refuse every request. So
each process appends its chain to files of its own under the data directory, one `write` (and,
when the record must be on disk, one `fdatasync`) per group, and a thread moves the records
into the store in large transactions (`app.ops.audit.mover`). A record in the journal is as
safe as one in the store; the store is where everyone reads them.

A chain's journal is a run of segments, `<chain>.<first seq>.journal`, each a line of JSON per
record. A segment is locked (`flock`) by the process that writes it for as long as it lives, so
a segment that can be locked belongs to a process that has ended: another process (or
`cipherd local audit verify`) moves it into the store and removes it. Moving is idempotent: a
record already in the store is left as it is.

Space is set aside ahead of the records (`fallocate` without changing the file's size), so that
a disk filled by something else still takes the records of about that many bytes of requests;
past the reserve, a full disk refuses them, and so the requests. A change sets room aside for its
own record before it is made (`Segment.set_aside`), which other records leave to it: once made,
its record does not fail for want of space. Where the file system cannot set space aside, room is
taken to be there.
"""

import ctypes
import ctypes.util
import errno
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from json.encoder import encode_basestring as _text
from pathlib import Path
from typing import Any

from app.store.records import AuditRow

log = logging.getLogger("cipherd.audit")

SUFFIX = ".journal"
# A segment with a line that is not a record, set aside once the records before it are stored.
SET_ASIDE_SUFFIX = ".set-aside"
_FALLOC_FL_KEEP_SIZE = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
# The same library through PyDLL: its calls keep the interpreter lock (see `_write_all`).
_write = ctypes.PyDLL(ctypes.util.find_library("c"), use_errno=True).write
_write.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
_write.restype = ctypes.c_ssize_t


def _write_all(fd: int, data: bytes) -> None:
    """Write `data` to `fd` without letting go of the interpreter lock. `os.write` lets go of it
    for the system call; on the event loop, that hands it to the audit mover, and the loop then
    waits for the mover's turn: a write of a record to the page cache takes about half a
    microsecond, and the hand-overs cost a worker about 5 % of its requests a second
    (docs/performance/choices.md)."""
    done = 0
    while done < len(data):
        written = _write(fd, data[done:] if done else data, len(data) - done)
        if written < 0:
            code = ctypes.get_errno()
            if code != errno.EINTR:
                raise OSError(code, os.strerror(code))
            continue
        done += written


def _reserve(fd: int, offset: int, length: int) -> bool:
    """Allocate disk blocks for [offset, offset + length) without changing the file's size;
    False where the disk has no room (True where the file system cannot allocate ahead)."""
    if _libc.fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) == 0:
        return True
    code = ctypes.get_errno()
    if code == errno.EOPNOTSUPP:
        return True
    if code not in (errno.ENOSPC, errno.EDQUOT):
        raise OSError(code, os.strerror(code))
    return False


def columns(values: Sequence[Any]) -> str:
    """A record's columns but its MAC, in table order, as the JSON array that begins its line
    (and that its MAC covers): compact, text as it is (no ASCII escapes), a float as its
    shortest exact form, so the time reads back as the MAC covers it. Written out column by
    column: it is what writing a record and verifying one cost most, and json's encoder takes
    half as long again."""
    (chain, seq, time, request_id, client, principal) = values[:6]
    (operation, key, version, status, problem, details) = values[6:]
    if type(time) is not float and type(time) is not int:
        raise TypeError(f"an audit record's time of type {type(time).__name__}")
    # encode_basestring refuses what is not text; `d` what is not a whole number.
    return (
        f"[{_text(chain)},{seq:d},{time!r},{_text(request_id)},"
        f"{'null' if client is None else _text(client)},"
        f"{'null' if principal is None else _text(principal)},{_text(operation)},"
        f"{'null' if key is None else _text(key)},{'null' if version is None else _text(version)},"
        f"{status:d},{'null' if problem is None else _text(problem)},{_text(details)}]"
    )


def line(columns: str, mac: bytes) -> str:
    """A record's journal line: its `columns`, then its MAC in hex."""
    return f'{columns[:-1]},"{mac.hex()}"]\n'


class CorruptJournal(ValueError):
    """A journal line that is not a record: `rows`, the records of the lines before it, and
    `line`, its number (from 1)."""

    def __init__(self, rows: list[AuditRow], line: int, reason: str) -> None:
        super().__init__(f"line {line} is not a record ({reason})")
        self.rows = rows
        self.line = line


def decode(data: bytes) -> list[AuditRow]:
    """The rows of whole lines in `data` (a last line without its newline was never finished);
    `CorruptJournal` at the first line that is not a record."""
    rows: list[AuditRow] = []
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            break
        try:
            fields = json.loads(line)
            if not isinstance(fields, list) or len(fields) != len(AuditRow._fields):
                raise ValueError(f"not an array of {len(AuditRow._fields)} fields")
            fields[-1] = bytes.fromhex(fields[-1])  # the MAC
        except (ValueError, TypeError) as exc:
            raise CorruptJournal(rows, number, " ".join(str(exc).split())[:200]) from None
        rows.append(AuditRow._make(fields))
    return rows


class Segment:
    """One journal file, open for appending and locked by this process."""

    def __init__(self, directory: Path, chain: str, first_seq: int, reserve: int) -> None:
        self.path = directory / f"{chain}.{first_seq}{SUFFIX}"
        self.chain = chain
        self.first_seq = first_seq
        self._reserve = reserve
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        self._closing = threading.Lock()
        self.closed = False
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.size = 0
        self.reserved = reserve if reserve and _reserve(self.fd, 0, reserve) else 0
        # The directory entry must survive a crash too, or so might the records it names.
        sync_directory(directory)

    def append(self, data: bytes, sync: bool) -> None:
        """Write `data` at the end (on disk when `sync`); on failure the segment is cut back to
        what it held, or the error says it could not be."""
        try:
            _write_all(self.fd, data)
            if sync:
                os.fdatasync(self.fd)
        except OSError:
            os.ftruncate(self.fd, self.size)
            raise
        self.size += len(data)
        if self.size + self._reserve // 2 > self.reserved and _reserve(
            self.fd, self.size, self._reserve
        ):
            self.reserved = self.size + self._reserve

    def set_aside(self, needed: int) -> bool:
        """Whether `needed` bytes past the end are allocated for the next appends, allocating
        more (a whole reserve if the disk has room, else just `needed`) if they are not."""
        if self.reserved - self.size >= needed:
            return True
        for length in (max(needed, self._reserve), needed):
            if _reserve(self.fd, self.size, length):
                self.reserved = self.size + length
                return True
        return False

    def sync(self) -> None:
        """fdatasync, from any thread: a segment removed meanwhile (its records all in the
        store) needs none, and its descriptor's number may already name another file."""
        with self._closing:
            if not self.closed:
                os.fdatasync(self.fd)

    def read(self, start: int, limit: int) -> bytes:
        return os.pread(self.fd, min(limit, self.size - start), start)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        with self._closing:
            self.closed = True
            os.close(self.fd)


class Journal:
    """A process's journal: the segment its chain is written to, and the segments of the
    chains it ended whose records are not yet all in the store. Its writer appends to the
    current segment and its mover reads them; which segment is current changes under `lock`."""

    def __init__(self, directory: Path, reserve: int) -> None:
        self.directory = directory
        self.reserve = reserve
        self.lock = threading.Lock()
        self.current: Segment | None = None
        self.retired: list[Segment] = []

    def begin(self, chain: str, first_seq: int) -> Segment:
        """Begin the segment of `chain` from `first_seq` on (the directory made first)."""
        self.current = Segment(open_directory(self.directory), chain, first_seq, self.reserve)
        return self.current

    def retire(self) -> None:
        """Set the current segment aside, for its whole lines to reach the store."""
        assert self.current is not None
        self.retired.append(self.current)
        self.current = None

    def follow(self, segment: Segment, first_seq: int) -> bool:
        """Remove `segment`, all of it in the store, and go on in the next of its chain from
        `first_seq` on, if the disk has room for its reserve (else go on in `segment`)."""
        try:
            fresh = Segment(self.directory, segment.chain, first_seq, self.reserve)
        except OSError:
            return False
        if fresh.reserved < self.reserve:  # the room set aside in `segment` would be lost
            fresh.remove()
            return False
        segment.remove()
        self.current = fresh
        return True


def sync_directory(directory: Path) -> None:
    """Put the entries of `directory` on disk (a file's creation in it, a rename or a removal):
    a file's own fsync does not, and a crash could otherwise lose a name while keeping what was
    written under it."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_directory(directory: Path) -> Path:
    """The journal directory, made private (0700) whatever was there."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(directory, 0o700)
    return directory


def orphans(directory: Path) -> Iterator[tuple[Path, int]]:
    """Segments no live process holds, each locked (its descriptor given) while the caller
    moves it; the caller removes and closes it."""
    for path in sorted(directory.glob(f"*{SUFFIX}"), key=lambda path: segment_place(path.name)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # moved by another process meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its process is alive
            os.close(fd)
            continue
        yield path, fd


def segment_place(name: str) -> tuple[str, int]:
    """The chain and first position a segment's file name gives (set aside or not)."""
    chain, _, first = name.removesuffix(SET_ASIDE_SUFFIX).removesuffix(SUFFIX).partition(".")
    return chain, int(first) if first.isdecimal() else 0


def set_aside(path: Path) -> Path:
    """Rename a segment that holds a line that is not a record out of the orphans' way, where
    `audit verify` reports it; its new path."""
    target = path.with_name(path.name + SET_ASIDE_SUFFIX)
    os.rename(path, target)
    sync_directory(path.parent)
    return target


def set_aside_segments(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(directory.glob(f"*{SUFFIX}{SET_ASIDE_SUFFIX}"), key=lambda p: p.name)


def read_all(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)
