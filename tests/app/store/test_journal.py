"""A journal segment's appends, through the write that keeps the interpreter lock: every byte
lands, in order, and a write the system refuses is an OSError with its errno."""

import errno
import os
from pathlib import Path

import pytest

from app.store import journal


def test_appends_land_whole_and_in_order(tmp_path: Path) -> None:
    segment = journal.Segment(tmp_path, "rtest", 1, reserve=1 << 16)
    pieces = [os.urandom(size) for size in (1, 250, 70_000, 3)]
    for index, piece in enumerate(pieces):
        segment.append(piece, sync=index % 2 == 0)
    assert segment.size == sum(map(len, pieces))
    assert segment.path.read_bytes() == b"".join(pieces)
    assert segment.read(1, 250) == pieces[1]
    segment.remove()


def test_a_refused_write_is_an_oserror_with_its_errno(tmp_path: Path) -> None:
    path = tmp_path / "read-only"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)  # a descriptor write(2) refuses: EBADF
    try:
        with pytest.raises(OSError) as refused:
            journal._write_all(fd, b"record\n")
    finally:
        os.close(fd)
    assert refused.value.errno == errno.EBADF


def test_a_journal_begins_retires_and_follows_segments(tmp_path: Path) -> None:
    directory = tmp_path / "journal"
    kept = journal.Journal(directory, reserve=1 << 16)
    first = kept.begin("rchain", 1)
    assert kept.current is first and first.path == directory / "rchain.1.journal"
    assert directory.stat().st_mode & 0o777 == 0o700
    first.append(b"line\n", sync=True)
    assert kept.follow(first, 2)  # the next of its chain; the first removed
    second = kept.current
    assert second is not None and second.path.name == "rchain.2.journal"
    assert [path.name for path in directory.iterdir()] == ["rchain.2.journal"]
    kept.retire()
    assert (kept.current, kept.retired) == (None, [second])
    second.remove()
