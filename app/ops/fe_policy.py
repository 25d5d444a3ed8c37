"""FE function policies: what the holders of an FE key's functional keys can learn, bounded.

A functional key for y reveals ⟨x, y⟩ of every ciphertext x of its master key version; keys for
y₁ … y_k together reveal the projection of x onto their span, and keys for n independent vectors
reveal x whole. The quadratic schemes reveal xᵀFy, which is linear in the n² entries of x·yᵀ, so
the same holds for the matrices F read as vectors of n² entries. What a set of released functions
reveals is therefore fixed by the rank of their span over the rationals, and a policy bounds it:

* `max_rank`: the rank of all functions released under one master key version may not exceed
  it. A function already in the span of those released reveals nothing new and is always served.
* `allowed_functions`: only these functions (or, with `allow_multiples`, their non-zero
  multiples) get keys.
* `keygen_quota`: at most `count` keys per token per `period_seconds`.
* `max_abs_entry`: no entry of y or F larger than this in absolute value.

The rank is computed exactly, over the integers: a rank taken modulo a prime can be made to drop
by vectors crafted to be dependent modulo that prime. `SpanBasis` keeps the released functions
in echelon form with integer entries (fraction-free elimination, each row divided by the gcd of
its entries), so that deciding one more function costs one reduction against at most `max_rank`
rows, not a fresh elimination.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from math import gcd
from typing import Any

from app.ops.errors import KNOWN_ERRORS, Problem
from app.store import FunctionLedger

Function = Sequence[int] | Sequence[Sequence[int]]


def flatten(function: Function) -> list[int]:
    """y as it is, or F row by row: the vector whose span is what the function reveals."""
    if function and isinstance(function[0], Sequence):
        return [int(entry) for row in function for entry in row]  # type: ignore[union-attr]  # rows of F
    return [int(entry) for entry in function]  # type: ignore[arg-type]  # entries of y


def _primitive(vector: list[int]) -> list[int]:
    """`vector` divided by the gcd of its entries, its first non-zero entry made positive."""
    divisor = 0
    for entry in vector:
        divisor = gcd(divisor, entry)
    if divisor == 0:
        return vector
    first = next(entry for entry in vector if entry)
    if first < 0:
        divisor = -divisor
    return [entry // divisor for entry in vector]


class SpanBasis:
    """Integer vectors of one length in echelon form: a basis of the span of those added."""

    def __init__(self, length: int) -> None:
        self.length = length
        # (pivot column, row), pivots increasing; each row is zero before its pivot.
        self._rows: list[tuple[int, list[int]]] = []

    @classmethod
    def echelon(cls, length: int, rows: Sequence[Sequence[int]]) -> "SpanBasis":
        """The basis whose rows are `rows`, already in echelon form (as `rows` gives them)."""
        basis = cls(length)
        for row in rows:
            pivot = next(column for column, entry in enumerate(row) if entry)
            basis._rows.append((pivot, [int(entry) for entry in row]))
        return basis

    @property
    def rank(self) -> int:
        return len(self._rows)

    @property
    def rows(self) -> list[list[int]]:
        return [list(row) for _, row in self._rows]

    def residual(self, vector: Sequence[int]) -> list[int]:
        """`vector` with every pivot column eliminated: zero exactly when it is in the span."""
        if len(vector) != self.length:
            raise ValueError(f"a vector of {len(vector)} entries where {self.length} are needed")
        reduced = [int(entry) for entry in vector]
        for pivot, row in self._rows:
            factor = reduced[pivot]
            if factor:
                lead = row[pivot]
                reduced = _primitive(
                    [lead * a - factor * b for a, b in zip(reduced, row, strict=True)]
                )
        return reduced

    def in_span(self, vector: Sequence[int]) -> bool:
        return not any(self.residual(vector))

    def add(self, vector: Sequence[int]) -> bool:
        """Add `vector`; whether the rank grew."""
        reduced = self.residual(vector)
        pivot = next((column for column, entry in enumerate(reduced) if entry), None)
        if pivot is None:
            return False
        at = next((i for i, (p, _) in enumerate(self._rows) if p > pivot), len(self._rows))
        self._rows.insert(at, (pivot, _primitive(reduced)))
        return True


@dataclass(frozen=True)
class Quota:
    count: int
    period_seconds: int


@dataclass(frozen=True)
class FunctionPolicy:
    """An FE key's function policy (every part optional)."""

    max_rank: int | None = None
    allowed_functions: tuple[tuple[int, ...], ...] | None = None
    allow_multiples: bool = False
    keygen_quota: Quota | None = None
    max_abs_entry: int | None = None

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> "FunctionPolicy":
        if not value:
            return cls()
        quota = value.get("keygen_quota")
        allowed = value.get("allowed_functions")
        return cls(
            max_rank=value.get("max_rank"),
            allowed_functions=None
            if allowed is None
            else tuple(tuple(flatten(function)) for function in allowed),
            allow_multiples=bool(value.get("allow_multiples", False)),
            keygen_quota=None if quota is None else Quota(quota["count"], quota["period_seconds"]),
            max_abs_entry=value.get("max_abs_entry"),
        )

    @property
    def empty(self) -> bool:
        return self == FunctionPolicy()

    def check_function(self, vector: Sequence[int]) -> None:
        """The checks that need no ledger: entry bounds and the allowlist (403s)."""
        if self.max_abs_entry is not None:
            largest = max((abs(entry) for entry in vector), default=0)
            if largest > self.max_abs_entry:
                raise Problem(
                    403,
                    "function-not-allowed",
                    "Function not allowed",
                    f"an entry of absolute value {largest} is over the key's max_abs_entry "
                    f"of {self.max_abs_entry}",
                )
        if self.allowed_functions is not None and not any(
            _allows(allowed, vector, self.allow_multiples) for allowed in self.allowed_functions
        ):
            raise Problem(
                403,
                "function-not-allowed",
                "Function not allowed",
                "the key's policy releases keys only for its allowed_functions"
                + (" and their multiples" if self.allow_multiples else ""),
            )

    def check_rank(self, basis: SpanBasis, vector: Sequence[int]) -> bool:
        """Whether releasing `vector` raises the rank; 403 if it would pass `max_rank`."""
        grows = not basis.in_span(vector)
        if grows and self.max_rank is not None and basis.rank + 1 > self.max_rank:
            raise Problem(
                403,
                "leakage-budget-exceeded",
                "Leakage budget exceeded",
                f"this function is independent of the {basis.rank} released under this key "
                f"version, and the key's max_rank is {self.max_rank}: a functional key for it "
                "would reveal more than the policy allows",
            )
        return grows


def _allows(allowed: Sequence[int], vector: Sequence[int], multiples: bool) -> bool:
    if len(allowed) != len(vector):
        return False
    if not multiples:
        return list(allowed) == list(vector)
    if not any(vector):
        return False
    # vector = c·allowed for a non-zero rational c: every 2×2 minor vanishes.
    pivot = next(i for i, entry in enumerate(allowed) if entry) if any(allowed) else None
    if pivot is None:
        return False
    return all(
        a * vector[pivot] == v * allowed[pivot] for a, v in zip(allowed, vector, strict=True)
    )


@dataclass(frozen=True)
class KeygenRequest:
    """One functional key asked for: y (inner product) or f (quadratic) under a key version."""

    name: str
    y: Sequence[int] | None
    f: Sequence[Sequence[int]] | None
    version: int | None


def decide(
    ledger: FunctionLedger, principal: str, vector: list[int], function: Any, now: float
) -> Exception | None:
    """The policy's decision on a made functional key of one key version: None for a release
    (recorded in the ledger with the rank it leaves), or the refusal. Runs inside the store
    transaction that serialises the decisions on that version."""
    policy = FunctionPolicy.from_json(ledger.params.get("fe_policy"))
    basis = SpanBasis.echelon(len(vector), ledger.basis)
    try:
        policy.check_function(vector)
        quota = policy.keygen_quota
        if quota is not None and (
            ledger.released_since(principal, now - quota.period_seconds) >= quota.count
        ):
            raise Problem(
                429,
                "keygen-quota-exceeded",
                "Keygen quota exceeded",
                f"this token has had {quota.count} functional keys of this key in the last "
                f"{quota.period_seconds} s, the key's keygen_quota",
            )
        if policy.check_rank(basis, vector):
            basis.add(vector)
    except KNOWN_ERRORS as exc:
        return exc
    ledger.record(function, principal, now, basis.rank)
    ledger.basis = basis.rows
    return None
