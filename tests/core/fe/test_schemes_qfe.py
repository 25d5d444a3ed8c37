"""Conformance of the two quadratic schemes (fe-test-cases.md §3; range [−100, 100]).

F = [[1, 0, 2], [0, −1, 0], [3, 1, 1]] throughout, n = 3, unless stated.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from core.errors import ShapeError

F = [[1, 0, 2], [0, -1, 0], [3, 1, 1]]
Q1 = [
    ([1, -2, 3], [4, 5, -6], 35),
    ([-1, 1, 0], [2, 0, 1], -4),
    ([0, 0, 0], [4, 5, -6], 0),
    ([1, 0, 0], [100, 0, 0], 100),
    ([0, 1, 0], [0, 100, 0], -100),
    ([1, 0, 0], [101, 0, 0], None),
    ([0, 1, 0], [0, 101, 0], None),
]


def test_q1_range_edges_plain_and_prepared(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(3, rng)
    dec = qs.decryptor(-100, 100)
    sk = qs.keygen(msk, F, rng)
    prepared = qs.prepare(sk)
    for x, y, want in Q1:
        ct = qs.encrypt(pk, x, y, rng)
        assert dec(sk, ct) == want, (x, y)
        assert dec(prepared, ct) == want, (x, y)


def test_q2_one_ciphertext_many_keys(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(3, rng)
    dec = qs.decryptor(-100, 100)
    ct = qs.encrypt(pk, [1, -2, 3], [4, 5, -6], rng)
    identity = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    corner = [[0, 0, 0], [0, 0, 0], [0, 0, 1]]
    for f, want in [(F, 35), (identity, -24), (corner, -18)]:
        assert dec(qs.keygen(msk, f, rng), ct) == want


def test_q3_length_one(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(1, rng)
    sk = qs.keygen(msk, [[-3]], rng)
    ct = qs.encrypt(pk, [7], [2], rng)
    dec = qs.decryptor(-100, 100)
    assert dec(sk, ct) == -42
    assert dec(qs.prepare(sk), ct) == -42


def test_q4_wrong_shapes(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(3, rng)
    cases = [
        (lambda: qs.keygen(msk, [[1, 2], [3, 4], [5, 6]], rng), (3, 2)),  # row length
        (lambda: qs.keygen(msk, [[1, 2, 3], [4, 5, 6]], rng), (3, 2)),  # row count first
        (lambda: qs.keygen(msk, [[1, 2, 3], [4, 5, 6], [7, 8]], rng), (3, 2)),
        (lambda: qs.encrypt(pk, [1, 2], [1, 2, 3], rng), (3, 2)),  # x first
        (lambda: qs.encrypt(pk, [1, 2, 3], [1, 2, 3, 4], rng), (3, 4)),
        (lambda: qs.encrypt(pk, [1, 2], [1, 2, 3, 4], rng), (3, 2)),
    ]
    for op, (expected, actual) in cases:
        with pytest.raises(ShapeError) as err:
            op()
        assert (err.value.expected, err.value.actual) == (expected, actual)


def test_inputs_checked_before_randomness(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(2, rng)
    state = rng.getstate()
    with pytest.raises(ValueError, match="64-bit"):
        qs.keygen(msk, [[1, 2], [3, -(2**63) - 1]], rng)
    with pytest.raises(ValueError, match="64-bit"):
        qs.encrypt(pk, [1, 2], [2**63, 0], rng)
    with pytest.raises(ShapeError):
        qs.encrypt(pk, [1], [1, 2], rng)
    assert rng.getstate() == state


def test_extreme_function_entries(qs: Any, rng: random.Random) -> None:
    """i64 extremes in F go through the small-scalar path (negated points) and decrypt."""
    pk, msk = qs.setup(2, rng)
    f = [[-(2**63), 2**63 - 1], [0, 1]]
    sk = qs.keygen(msk, f, rng)
    dec = qs.decryptor(-10, 10)
    assert dec(sk, qs.encrypt(pk, [0, 3], [0, -2], rng)) == -6
    assert type(sk).from_bytes(sk.to_bytes()).f == tuple(map(tuple, f))


@pytest.mark.parametrize("n", [0, -3])
def test_setup_rejects_dimensions_below_one(qs: Any, n: int) -> None:
    with pytest.raises(ShapeError) as err:
        qs.setup(n, random.Random(0))
    assert (err.value.expected, err.value.actual) == (1, n)


def test_zero_function_and_vectors(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(2, rng)
    dec = qs.decryptor(-100, 100)
    zero_f = qs.keygen(msk, [[0, 0], [0, 0]], rng)
    assert dec(zero_f, qs.encrypt(pk, [3, 4], [5, 6], rng)) == 0
    assert dec(qs.prepare(zero_f), qs.encrypt(pk, [0, 0], [0, 0], rng)) == 0


def test_key_and_ciphertext_of_different_dimensions(qs: Any, rng: random.Random) -> None:
    (_, m2), (pk3, _) = qs.setup(2, rng), qs.setup(3, rng)
    sk = qs.keygen(msk := m2, [[1, 0], [0, 1]], rng)
    ct = qs.encrypt(pk3, [1, 2, 3], [1, 2, 3], rng)
    dec = qs.decryptor(-100, 100)
    for key in (sk, qs.prepare(sk)):
        with pytest.raises(ShapeError) as err:
            dec(key, ct)
        assert (err.value.expected, err.value.actual) == (msk.n, 3)


def test_decrypt_rejects_other_types(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(1, rng)
    sk, ct = qs.keygen(msk, [[1]], rng), qs.encrypt(pk, [1], [1], rng)
    dec = qs.decryptor(-1, 1)
    with pytest.raises(TypeError):
        dec(ct, ct)
    with pytest.raises(TypeError):
        dec(sk, pk)


def test_randomness_is_fresh(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(2, rng)
    assert qs.encrypt(pk, [1, 2], [3, 4], rng) != qs.encrypt(pk, [1, 2], [3, 4], rng)
    ct = qs.module.encrypt(pk, [1, 2], [3, 4])  # OS CSPRNG
    assert qs.decryptor(0, 20)(qs.keygen(msk, [[1, 0], [0, 1]], rng), ct) == 11
    assert qs.module.setup(1)[0].n == 1


def test_concurrent_decryption_shares_key_and_table(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(3, rng)
    dec = qs.decryptor(-100, 100)
    sk = qs.keygen(msk, F, rng)
    prepared = qs.prepare(sk)
    cts = [qs.encrypt(pk, [k, 1, 0], [1, k, -1], rng) for k in range(8)]

    def work(k: int) -> tuple[int | None, int | None]:
        return dec(sk, cts[k]), dec(prepared, cts[k])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(8)))
    assert results == [(-2 * k, -2 * k) for k in range(8)]


def test_dimension_ten(qs: Any, rng: random.Random) -> None:
    pk, msk = qs.setup(10, rng)
    f = [[rng.randint(-3, 3) for _ in range(10)] for _ in range(10)]
    x = [rng.randint(-3, 3) for _ in range(10)]
    y = [rng.randint(-3, 3) for _ in range(10)]
    want = sum(x[i] * f[i][j] * y[j] for i in range(10) for j in range(10))
    sk = qs.keygen(msk, f, rng)
    ct = qs.encrypt(pk, x, y, rng)
    dec = qs.decryptor(-3000, 3000)
    assert dec(sk, ct) == want
    assert dec(qs.prepare(sk), ct) == want


def test_sgp_keygen_is_deterministic(rng: random.Random) -> None:
    from core.fe.qfe import sgp

    _, msk = sgp.setup(2, rng)
    assert sgp.keygen(msk, [[1, 2], [3, 4]]) == sgp.keygen(msk, [[1, 2], [3, 4]])
