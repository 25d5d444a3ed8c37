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

The rank is computed modulo a prime p drawn at random (128 bits, `secrets`) for each key version
and kept with its ledger, never shown. A rank modulo p is never above the rank over the
rationals, and falls below it only if p divides a non-zero minor of the functions: with a
*known* prime (the group order, say) a caller could craft functions dependent modulo it and
independent over the rationals, and pass the budget. A secret random p cannot be aimed at: every
decision is the exact one until the first that differs, so the answers tell nothing of p, and a
decision differs only if p divides a minor fixed beforehand. Its entries have 64 bits (keygen's
bound) and it has at most 256 rows (the basis's capacity below and the functions' length bound
each other), so by Hadamard's bound it has at most 17,152 bits, hence at most 135 prime factors
of 127 bits or more, among the ~2^120 primes p is drawn from: under 2^-113 per decision.

Exact rational elimination makes the entries of the basis grow with its rank, hundreds of
digits each after a few dozen random 128×128 matrices, read, reduced and written back whole at
every release: quadratic in the number of releases, and past Python's 4,300-digit limit in the
end. Modulo p an entry has 39 digits at most, and the basis holds at
most `MAX_BASIS_ENTRIES` of them, so a decision reads, reduces and writes a bounded basis
(about 2.6 MB and 50 ms at most). That holds every IPFE basis to full rank (n ≤ 128: n² ≤ 16,384
entries) and every QFE basis up to n = 16; a longer function space keeps `capacity` rows of
basis (4 for QFE at n = 128). Past its capacity a version's basis takes no more rows: a key with
no rank bound (or a `max_rank` of the whole space, which bounds nothing) goes on releasing, its
ledger's rank then a lower bound. A `max_rank` above the capacity (short of the whole space)
is refused when the policy is written; one stored before is enforced as the capacity, stricter
than asked, never looser. Every release is still recorded.
"""

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationInfo,
    field_validator,
)

from app.ops.errors import KNOWN_ERRORS, Problem, invalid_input
from app.store import FunctionLedger

Function = Sequence[int] | Sequence[Sequence[int]]

# The most entries a version's basis holds (rows × the functions' length). 2^16: ~2.6 MB as
# stored, ~50 ms of a decision (reading and one reduction), and every IPFE key's basis whole.
MAX_BASIS_ENTRIES = 1 << 16
# The stored basis's first row: [MODULUS_MARK, p]. The exact bases stored before the modulus
# have primitive rows, their first non-zero entry positive: none of them starts with -1.
MODULUS_MARK = -1
MODULUS_BITS = 128
_SMALL_PRIMES = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73)


def flatten(function: Function) -> list[int]:
    """y as it is, or F row by row: the vector whose span is what the function reveals."""
    if function and isinstance(function[0], Sequence):
        return [int(entry) for row in function for entry in row]  # type: ignore[union-attr]  # rows of F
    return [int(entry) for entry in function]  # type: ignore[arg-type]  # entries of y


def basis_capacity(length: int) -> int:
    """The most rows a basis of functions of `length` entries holds."""
    return max(1, MAX_BASIS_ENTRIES // length)


def _probably_prime(candidate: int, rounds: int = 64) -> bool:
    """Miller-Rabin with random bases: a composite passes with probability below 4^-rounds."""
    if candidate < 2 or candidate % 2 == 0:
        return candidate == 2
    for small in _SMALL_PRIMES:
        if candidate % small == 0:
            return candidate == small
    d, s = candidate - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(2 + secrets.randbelow(candidate - 3), d, candidate)
        if x in (1, candidate - 1):
            continue
        for _ in range(s - 1):
            x = x * x % candidate
            if x == candidate - 1:
                break
        else:
            return False
    return True


def random_prime(bits: int = MODULUS_BITS) -> int:
    """A prime of exactly `bits` bits, uniform among them (odd numbers drawn until one is)."""
    while True:
        candidate = secrets.randbits(bits) | (1 << (bits - 1)) | 1
        if _probably_prime(candidate):
            return candidate


class SpanBasis:
    """Vectors of one length in echelon form modulo a secret prime: a basis of the span of
    those added, up to `capacity` rows (the module's docstring says why it is sound)."""

    def __init__(self, length: int, modulus: int | None = None) -> None:
        self.length = length
        self.modulus = random_prime() if modulus is None else modulus
        self.capacity = basis_capacity(length)
        # (pivot column, row), pivots increasing; each row is zero before its pivot and 1 at it.
        self._rows: list[tuple[int, list[int]]] = []
        # Whether the rows differ from those it was read from (to be stored again).
        self.changed = False

    @classmethod
    def echelon(cls, length: int, rows: Sequence[Sequence[int]]) -> "SpanBasis":
        """The basis as `rows` stores it (`rows` below). An exact basis stored before the
        modulus (integer rows, no modulus row) is reduced modulo a new prime, up to capacity."""
        if rows and len(rows[0]) == 2 and rows[0][0] == MODULUS_MARK:
            basis = cls(length, int(rows[0][1]))
            for row in islice(rows, 1, None):
                pivot = next(column for column, entry in enumerate(row) if entry)
                basis._rows.append((pivot, [int(entry) for entry in row]))
            return basis
        basis = cls(length)
        for row in rows:
            if basis.full:
                break
            basis.add(row)
        return basis

    @property
    def rank(self) -> int:
        return len(self._rows)

    @property
    def full(self) -> bool:
        """Whether the basis takes no more rows: at its capacity, or spanning everything."""
        return self.rank >= min(self.capacity, self.length)

    @property
    def rows(self) -> list[list[int]]:
        """The basis as the ledger stores it: [MODULUS_MARK, p], then the echelon rows."""
        return [[MODULUS_MARK, self.modulus], *(list(row) for _, row in self._rows)]

    def residual(self, vector: Sequence[int]) -> list[int]:
        """`vector` modulo p with every pivot column eliminated: zero exactly when it is in
        the span (modulo p)."""
        if len(vector) != self.length:
            raise ValueError(f"a vector of {len(vector)} entries where {self.length} are needed")
        p = self.modulus
        reduced = [int(entry) % p for entry in vector]
        for pivot, row in self._rows:
            factor = reduced[pivot] % p
            if factor:
                # Reduced modulo p once at the end: entries stay under rank·p² meanwhile.
                tail = zip(islice(reduced, pivot, None), islice(row, pivot, None), strict=True)
                reduced[pivot:] = [a - factor * b for a, b in tail]
        return [entry % p for entry in reduced]

    def insert(self, residual: list[int]) -> bool:
        """Add a non-zero `residual` of this basis as a row; whether the rank grew (not once
        the basis is full)."""
        pivot = next((column for column, entry in enumerate(residual) if entry), None)
        if pivot is None or self.full:
            return False
        p = self.modulus
        inverse = pow(residual[pivot], -1, p)
        row = [entry * inverse % p for entry in residual]
        at = next((i for i, (q, _) in enumerate(self._rows) if q > pivot), len(self._rows))
        self._rows.insert(at, (pivot, row))
        self.changed = True
        return True

    def add(self, vector: Sequence[int]) -> bool:
        """Add `vector`; whether the rank grew (never once the basis is full)."""
        if self.full:
            return False
        return self.insert(self.residual(vector))


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

    def rank_limit(self, basis: SpanBasis) -> int | None:
        """The rank this policy lets `basis` reach: `max_rank`, or the basis's capacity when
        that is lower; None when nothing is bounded (no `max_rank`, or one of the whole
        space)."""
        if self.max_rank is None or self.max_rank >= basis.length:
            return None
        return min(self.max_rank, basis.capacity)

    def admitted(self, basis: SpanBasis, vector: Sequence[int]) -> list[int] | None:
        """What releasing `vector` adds to `basis`: its residual when it raises the rank, None
        when it does not (or the basis tracks no more and nothing is bounded); 403 if it would
        pass the rank this policy allows."""
        limit = self.rank_limit(basis)
        if basis.rank == basis.length or (limit is None and basis.full):
            return None
        residual = basis.residual(vector)
        if not any(residual):
            return None
        if limit is not None and basis.rank + 1 > limit:
            assert self.max_rank is not None
            if limit < self.max_rank:
                bound = (
                    f"this service keeps the rank of at most {limit} functions of "
                    f"{basis.length} entries ({MAX_BASIS_ENTRIES:,} basis entries), below the "
                    f"key's max_rank of {self.max_rank}"
                )
            else:
                bound = f"the key's max_rank is {self.max_rank}"
            raise Problem(
                403,
                "leakage-budget-exceeded",
                "Leakage budget exceeded",
                f"this function is independent of the {basis.rank} released under this key "
                f"version, and {bound}: a functional key for it would reveal more than the "
                "policy allows",
            )
        return residual


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
        residual = policy.admitted(basis, vector)
        if residual is not None:
            basis.insert(residual)
    except KNOWN_ERRORS as exc:
        return exc
    ledger.record(function, principal, now, basis.rank)
    if basis.changed:  # stored again only when it grew (or was an exact basis of before)
        ledger.basis = basis.rows
    return None


class KeygenQuota(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: StrictInt = Field(ge=1, description="functional keys per token")
    period_seconds: StrictInt = Field(ge=1, le=10 * 365 * 86400)


# Fail-fast lists: refused at their first bad entry rather than each described (seconds and
# gigabytes for millions of them).
FunctionEntries = Annotated[list[StrictInt], Field(min_length=1, max_length=4096, fail_fast=True)]


class FePolicy(BaseModel):
    """What the holders of an FE key's functional keys may learn (docs/api/fe.md)."""

    model_config = ConfigDict(extra="forbid")

    max_rank: StrictInt | None = Field(
        None,
        ge=0,
        description="the largest rank over the rationals of all functions (y, or F as n² "
        "entries) released under one key version",
    )
    allowed_functions: (
        Annotated[
            list[FunctionEntries | Annotated[list[FunctionEntries], Field(fail_fast=True)]],
            Field(max_length=1024, fail_fast=True),
        ]
        | None
    ) = Field(
        None,
        description="only these functions (y vectors or F matrices) get keys; at most "
        "65,536 entries in all, each a 64-bit signed integer",
    )
    allow_multiples: StrictBool = Field(
        False, description="allowed_functions admits their non-zero multiples too"
    )
    keygen_quota: KeygenQuota | None = Field(
        None, description="functional keys per token per period"
    )
    max_abs_entry: StrictInt | None = Field(
        None, ge=0, description="the largest absolute value of an entry of y or F"
    )

    # The entries of allowed_functions, all together: 4 matrices of 128×128, or 512 vectors
    # of 128. A key's policy is read with its parameters at every fetch of the key and every
    # keygen, and shown whole in its metadata: 900 matrices of 128×128 (30 MB) made each
    # encryption with the key take seconds. The entries are keygen's (64-bit), so the policy
    # stays under about 1.4 MB.
    MAX_ENTRIES: ClassVar[int] = 1 << 16

    @field_validator("allowed_functions", mode="before")
    @classmethod
    def _bounded(cls, value: Any, info: ValidationInfo) -> Any:
        """At most MAX_ENTRIES entries, each 64-bit, counted before the entries are
        validated. Checked on the way in (request bodies and backups are JSON), not on a
        policy stored before the bound, which its key's metadata still shows as it is."""
        if info.mode != "json" or not isinstance(value, list):
            return value
        rows = [
            row
            for f in value
            if isinstance(f, list)
            for row in (f if f and isinstance(f[0], list) else [f])
            if isinstance(row, list)
        ]
        total = sum(len(row) for row in rows)
        if total > cls.MAX_ENTRIES:
            raise ValueError(
                f"{total:,} entries in all, over the {cls.MAX_ENTRIES:,} a policy may hold "
                "(4 matrices of 128×128, or 512 vectors of 128)"
            )
        for row in rows:
            for entry in row:
                if isinstance(entry, int) and not -(2**63) <= entry < 2**63:
                    raise ValueError("entries are 64-bit signed integers, as keygen takes them")
        return value


def checked_fe_policy(policy: FePolicy, key_type: str, dimension: int) -> dict[str, Any]:
    """The policy as stored, once its functions have the key's shape (422 otherwise)."""
    quadratic = key_type.startswith("qfe-")
    for index, function in enumerate(policy.allowed_functions or []):
        if quadratic:
            shaped = len(function) == dimension and all(
                isinstance(row, list) and len(row) == dimension for row in function
            )
        else:
            shaped = len(function) == dimension and all(isinstance(e, int) for e in function)
        if not shaped:
            wanted = f"an {dimension}×{dimension} matrix" if quadratic else f"{dimension} entries"
            raise invalid_input(f"fe_policy.allowed_functions.{index}: needs {wanted}")
    space = dimension * dimension if quadratic else dimension
    capacity = basis_capacity(space)
    if policy.max_rank is not None and capacity < policy.max_rank < space:
        raise invalid_input(
            f"fe_policy.max_rank: a key of this dimension tracks a rank of at most {capacity} "
            f"(or {space}, the whole space, which bounds nothing)"
        )
    return policy.model_dump(exclude_none=True)
