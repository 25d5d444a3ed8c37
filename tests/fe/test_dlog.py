"""Baby-step giant-step tables (fe-test-cases.md §4)."""

import pytest

from core.fe import group
from core.fe.dlog import DlogTable


def _gt_pow(x: int):
    with group.LOCK:
        return group.gt_generator() ** (x % group.ORDER)


def test_signed_range() -> None:
    table = DlogTable(group.gt_generator(), -5, 10)
    for x in (-5, 0, 7, 10):
        assert table.find(_gt_pow(x)) == x
    assert table.find(_gt_pow(11)) is None
    assert table.find(_gt_pow(-6)) is None


def test_identity_base() -> None:
    table = DlogTable(group.gt_identity(), 3, 9)
    assert table.find(group.gt_identity()) == 3
    assert table.find(group.gt_generator()) is None


def test_lo_above_hi() -> None:
    with pytest.raises(ValueError, match="lo <= hi"):
        DlogTable(group.gt_generator(), 1, 0)
