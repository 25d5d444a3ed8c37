"""The exact rank behind FE function policies, checked against an independent elimination over
the rationals (fractions), on random and on crafted vectors."""

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ops.errors import Problem
from app.ops.fe_policy import FunctionPolicy, SpanBasis, flatten


def rank_over_q(vectors: list[list[int]]) -> int:
    """Gaussian elimination over the rationals: the checker, written without the basis."""
    rows = [[Fraction(entry) for entry in vector] for vector in vectors]
    rank, columns = 0, len(rows[0]) if rows else 0
    for column in range(columns):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][column] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for r in range(len(rows)):
            if r != rank and rows[r][column] != 0:
                factor = rows[r][column] / rows[rank][column]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[rank], strict=True)]
        rank += 1
    return rank


vectors = st.integers(1, 6).flatmap(
    lambda n: st.lists(
        st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n), max_size=8
    )
)


@settings(max_examples=200, deadline=None)
@given(vectors)
def test_the_rank_is_exact(rows: list[list[int]]) -> None:
    basis = SpanBasis(len(rows[0]) if rows else 1)
    for count, row in enumerate(rows, start=1):
        grew = basis.add(row)
        assert basis.rank == rank_over_q(rows[:count])
        assert grew == (rank_over_q(rows[:count]) > rank_over_q(rows[: count - 1]))
        assert basis.in_span(row)
    again = SpanBasis.echelon(basis.length, basis.rows)
    assert again.rank == basis.rank
    assert all(again.in_span(row) for row in rows)


def test_vectors_dependent_modulo_a_prime_are_not_dependent() -> None:
    """Dependent modulo the BLS12-381 group order r, independent over the rationals: a rank
    taken modulo r would let a third key through where only two are independent of it."""
    r = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
    y1, y2 = [1, 0, 0], [0, 1, 0]
    crafted = [r, r, 0]  # ≡ 0 mod r: "dependent" there, but (r, r, 0) ∈ span(y1, y2) anyway
    basis = SpanBasis(3)
    assert basis.add(y1) and basis.add(y2) and not basis.add(crafted)
    tricky = [1, 1, r]  # ≡ y1 + y2 mod r, independent over Q
    assert basis.add(tricky) and basis.rank == 3


def test_large_random_spans() -> None:
    rng = random.Random(7)
    n = 24
    rows = [[rng.randint(-1000, 1000) for _ in range(n)] for _ in range(20)]
    rows += [[a + 3 * b for a, b in zip(rows[0], rows[1], strict=True)] for _ in range(3)]
    basis = SpanBasis(n)
    for row in rows:
        basis.add(row)
    assert basis.rank == rank_over_q(rows) == 20


def test_policy_checks() -> None:
    policy = FunctionPolicy.from_json(
        {"allowed_functions": [[1, 2, 3]], "allow_multiples": True, "max_abs_entry": 10}
    )
    policy.check_function([2, 4, 6])
    policy.check_function([-1, -2, -3])
    for refused in ([1, 2, 4], [0, 0, 0], [4, 8, 12]):  # not a multiple; zero; entry 12 > 10
        with pytest.raises(Problem) as refusal:
            policy.check_function(refused)
        assert (refusal.value.status, refusal.value.slug) == (403, "function-not-allowed")
    exact = FunctionPolicy.from_json({"allowed_functions": [[[1, 0], [0, 1]]]})
    exact.check_function(flatten([[1, 0], [0, 1]]))
    with pytest.raises(Problem, match="allowed_functions"):
        exact.check_function(flatten([[2, 0], [0, 2]]))
    budget = FunctionPolicy.from_json({"max_rank": 1})
    basis = SpanBasis(2)
    assert budget.check_rank(basis, [1, 1])
    basis.add([1, 1])
    assert not budget.check_rank(basis, [-3, -3])
    with pytest.raises(Problem) as refusal:
        budget.check_rank(basis, [1, 0])
    assert (
        refusal.value.slug == "leakage-budget-exceeded" and "max_rank is 1" in refusal.value.detail
    )
