"""The rank behind FE function policies, checked against an independent elimination over the
rationals (fractions), on random and on crafted vectors; and the basis's bounds."""

import json
import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ops.errors import Problem
from app.ops.fe_policy import FunctionPolicy, SpanBasis, decide, flatten
from app.store import FunctionLedger


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


def in_span(basis: SpanBasis, vector: list[int]) -> bool:
    return not any(basis.residual(vector))


@settings(max_examples=200, deadline=None)
@given(vectors)
def test_the_rank_is_exact(rows: list[list[int]]) -> None:
    basis = SpanBasis(len(rows[0]) if rows else 1)
    for count, row in enumerate(rows, start=1):
        grew = basis.add(row)
        assert basis.rank == rank_over_q(rows[:count])
        assert grew == (rank_over_q(rows[:count]) > rank_over_q(rows[: count - 1]))
        assert in_span(basis, row)
    again = SpanBasis.echelon(basis.length, basis.rows)
    assert again.rank == basis.rank
    assert all(in_span(again, row) for row in rows)


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
    assert budget.admitted(basis, [1, 1]) is not None
    basis.add([1, 1])
    assert budget.admitted(basis, [-3, -3]) is None
    with pytest.raises(Problem) as refusal:
        budget.admitted(basis, [1, 0])
    assert (
        refusal.value.slug == "leakage-budget-exceeded" and "max_rank is 1" in refusal.value.detail
    )


class MemoryLedger(FunctionLedger):
    """A ledger as the store keeps it between decisions: the basis through JSON."""

    def __init__(self, params: dict[str, Any], basis: list[list[int]] | None = None) -> None:
        self.params = params
        self.basis = basis or []
        self.ranks: list[int] = []

    def released_since(self, principal: str, since: float) -> int:
        return 0

    def record(self, function: Any, principal: str, time: float, rank: int) -> None:
        self.ranks.append(rank)

    def release(self, function: list[list[int]] | list[int]) -> Exception | None:
        refusal = decide(self, "alice", flatten(function), function, 0.0)
        self.basis = json.loads(json.dumps(self.basis))
        return refusal


def random_matrix(rng: random.Random, n: int) -> list[list[int]]:
    return [[rng.randint(-(2**63), 2**63 - 1) for _ in range(n)] for _ in range(n)]


def test_the_basis_of_many_large_functions_stays_bounded() -> None:
    """Random 64×64 matrices (4,096 entries) without a policy: the basis took one more row of
    ever longer integers at each release, read and written whole; it stops at its capacity, of
    entries under p."""
    n, rng = 64, random.Random(3)
    ledger = MemoryLedger({"dimension": n})
    for _ in range(20):
        assert ledger.release(random_matrix(rng, n)) is None
    capacity = 65_536 // (n * n)
    assert ledger.ranks == [*range(1, capacity + 1), *[capacity] * 4]
    (mark, modulus), *rows = ledger.basis
    assert mark == -1 and modulus.bit_length() == 128
    assert len(rows) == capacity and len(rows) * len(rows[0]) <= 65_536
    assert all(0 <= entry < modulus for row in rows for entry in row)
    assert len(json.dumps(ledger.basis)) < 3_000_000


def test_a_max_rank_over_the_capacity_is_enforced_as_the_capacity() -> None:
    """Stricter than asked, never looser: past its capacity a basis could not tell a function
    in the span of those released from one that is not."""
    n, rng = 64, random.Random(5)
    ledger = MemoryLedger({"dimension": n, "fe_policy": {"max_rank": 20}})
    released = [random_matrix(rng, n) for _ in range(16)]
    assert all(ledger.release(f) is None for f in released)
    refusal = ledger.release(random_matrix(rng, n))
    assert isinstance(refusal, Problem) and refusal.slug == "leakage-budget-exceeded"
    assert "at most 16 functions of 4096 entries" in refusal.detail
    assert "max_rank of 20" in refusal.detail
    first, second = released[:2]
    combined = [
        [a - 2 * b for a, b in zip(r, s, strict=True)] for r, s in zip(first, second, strict=True)
    ]
    assert ledger.release(combined) is None  # in the span: nothing new, served
    assert ledger.ranks == [*range(1, 17), 16]


def test_a_max_rank_of_the_whole_space_bounds_nothing() -> None:
    ledger = MemoryLedger({"dimension": 2, "fe_policy": {"max_rank": 2}})
    for y in ([1, 0], [0, 1], [5, 7]):
        assert ledger.release(y) is None
    assert ledger.ranks == [1, 2, 2]


def test_an_exact_basis_stored_before_is_read_modulo_a_new_prime() -> None:
    exact = [[1, 0, 2], [0, 3, 1]]  # what the exact elimination stored: no modulus row
    ledger = MemoryLedger({"dimension": 3, "fe_policy": {"max_rank": 2}}, exact)
    assert ledger.release([2, 3, 5]) is None  # 2·(1, 0, 2) + (0, 3, 1): in the span
    assert ledger.ranks == [2] and ledger.basis[0][0] == -1
    refusal = ledger.release([0, 0, 1])
    assert isinstance(refusal, Problem) and "max_rank is 2" in refusal.detail
    basis = SpanBasis.echelon(3, ledger.basis)
    assert basis.rank == 2 and all(in_span(basis, row) for row in exact)


def test_each_basis_draws_its_own_secret_prime() -> None:
    from app.ops.fe_policy import _probably_prime

    moduli = {SpanBasis(3).modulus for _ in range(8)}
    assert len(moduli) == 8
    assert all(m.bit_length() == 128 and _probably_prime(m) for m in moduli)
    # Carmichael numbers and a product of two 64-bit primes are found composite.
    composites = (561, 41041, 825265, (2**61 - 1) * (2**64 - 59))
    assert not any(_probably_prime(c) for c in composites)
    assert all(_probably_prime(p) for p in (2, 3, 2**61 - 1, 2**127 - 1))


def test_a_backup_replays_its_ledger_as_the_service_decides() -> None:
    """A ledger made before the capacity counted past it: its ranks are taken once the basis
    is full, never an understated one."""
    from app.ops.backup import LedgerEntry, _replayed_ledger

    n, rng = 64, random.Random(8)
    functions = [random_matrix(rng, n) for _ in range(18)]

    def entries(ranks: list[int]) -> list[LedgerEntry]:
        return [
            LedgerEntry(version=1, function=f, principal="admin", time=1.0, rank=rank)
            for f, rank in zip(functions, ranks, strict=True)
        ]

    exact = list(range(1, 19))
    [(basis, replayed)] = _replayed_ledger(
        "qfe-sgp", {"dimension": n}, [1], entries(exact)
    ).values()
    assert basis[0][0] == -1 and len(basis) == 1 + 16 and len(replayed) == 18
    capped = [*range(1, 17), 16, 16]  # what this service records
    assert _replayed_ledger("qfe-sgp", {"dimension": n}, [1], entries(capped))
    with pytest.raises(Problem, match="span rank 16, not 15"):
        _replayed_ledger("qfe-sgp", {"dimension": n}, [1], entries([*range(1, 16), 15, 15, 15]))
