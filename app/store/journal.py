"""The audit journal: a process's audit records on its own disk, before they reach the store.

An audit record must be written before its request is answered, and the shared store is the
slowest and least available place to write it: a transaction per group of records costs more
than the request itself, and a database outage or a full disk would refuse every request. So
each process appends its chain to files of its own under the data directory, one `write` (and,
when the record must be on disk, one `fdatasync`) per group, and a thread moves the records
into the store in large transactions (`app.ops.audit`). A record in the journal is as safe as
one in the store; the store is where everyone reads them.

A chain's journal is a run of segments, `<chain>.<first seq>.journal`, each a line of JSON per
record. A segment is locked (`flock`) by the process that writes it for as long as it lives, so
a segment that can be locked belongs to a process that has ended: another process (or
`cipherd audit verify`) moves it into the store and removes it. Moving is idempotent: a record
already in the store is left as it is.

Space is set aside ahead of the records (`fallocate` without changing the file's size), so that
a disk filled by something else still takes the records of about that many bytes of requests;
past the reserve, a full disk refuses them, and so the requests.
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
from pathlib import Path
from typing import Any

from app.store.base import AuditRow

log = logging.getLogger("cipherd.audit")

SUFFIX = ".journal"
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
    (bench/README.md)."""
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
    False where the disk has no room (or the file system cannot)."""
    if _libc.fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) == 0:
        return True
    code = ctypes.get_errno()
    if code not in (errno.ENOSPC, errno.EOPNOTSUPP, errno.EDQUOT):
        raise OSError(code, os.strerror(code))
    return False


def columns(values: Sequence[Any]) -> str:
    """A record's columns but its MAC, in table order, as the JSON array that begins its line
    (and that its MAC covers). JSON writes a float as its shortest exact form, so the time
    reads back as the MAC covers it."""
    return _LINE.encode(values)


def line(columns: str, mac: bytes) -> str:
    """A record's journal line: its `columns`, then its MAC in hex."""
    return f'{columns[:-1]},"{mac.hex()}"]\n'


# One encoder for every line: `json.dumps` with options builds a new one per call.
_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def decode(data: bytes) -> list[AuditRow]:
    """The rows of whole lines in `data` (a last line without its newline was never finished)."""
    rows = []
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        fields = json.loads(line)
        if len(fields) != len(AuditRow._fields):
            raise ValueError(f"a journal line of {len(fields)} fields, not {len(AuditRow._fields)}")
        fields[-1] = bytes.fromhex(fields[-1])  # the MAC
        rows.append(AuditRow._make(fields))
    return rows


class Segment:
    """One journal file, open for appending and locked by this process."""

    def __init__(self, directory: Path, chain: str, first_seq: int, reserve: int) -> None:
        self.path = directory / f"{chain}.{first_seq}{SUFFIX}"
        self.first_seq = first_seq
        self._reserve = reserve
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        self._closing = threading.Lock()
        self.closed = False
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.size = 0
        self.reserved = reserve if _reserve(self.fd, 0, reserve) else 0
        # The directory entry must survive a crash too, or so might the records it names.
        _sync_directory(directory)

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


def _sync_directory(directory: Path) -> None:
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
    for path in sorted(directory.glob(f"*{SUFFIX}"), key=_segment_order):
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


def _segment_order(path: Path) -> tuple[str, int]:
    chain, _, first = path.name.removesuffix(SUFFIX).partition(".")
    return chain, int(first) if first.isdecimal() else 0


def read_all(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)
