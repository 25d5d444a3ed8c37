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
