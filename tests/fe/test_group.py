"""Group layer: arithmetic, pairings and encodings agree with petrelic's plain operations."""

import pytest

from core.errors import EncodingError, ShapeError
from core.fe import group


def test_pairing_product_small_multiples() -> None:
    g1s = group.g1_gen_mul([2, 3, 2])
    g2s = group.g2_gen_mul([5, 7, 5])
    num = group.pair(g1s[:2], g2s[:2])
    den = group.pair(g1s[2:], g2s[2:])
    with group.LOCK:
        assert num / den == group.gt_generator() ** 21


def test_pair_length_mismatch() -> None:
    with pytest.raises(ShapeError) as info:
        group.pair(group.g1_gen_mul([1, 2]), group.g2_gen_mul([1, 2, 3]))
    assert (info.value.expected, info.value.actual) == (3, 2)


def test_round_trips() -> None:
    p = group.g1_gen_mul([12345])[0]
    q = group.g2_gen_mul([678])[0]
    e = group.pair([p], [q])
    assert group.g1_from_bytes(group.g1_to_bytes(p)) == p
    assert group.g2_from_bytes(group.g2_to_bytes(q)) == q
    assert group.gt_from_bytes(group.gt_to_bytes(e)) == e
    assert group.scalar_from_bytes(group.scalar_to_bytes(-1)) == group.ORDER - 1


def test_truncated_rejected() -> None:
    with pytest.raises(EncodingError):
        group.g1_from_bytes(group.g1_to_bytes(group.g1_generator())[:-1])
