"""Batch calls: a list in, a list out, one problem per item that failed.

An item's failure (a bad ciphertext, a wrong shape) does not fail its neighbours. Errors that are
not about an item (no token, unknown key) still fail the whole request, before any work.
"""

from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel

from app.errors import KNOWN_ERRORS, ProblemDetail, invalid_input, problem_for

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT", bound=BaseModel)


def check_batch_size(count: int, limit: int) -> None:
    if count > limit:
        raise invalid_input(
            f"items: {count} items where at most {limit} are allowed (CIPHERD_MAX_BATCH_ITEMS)"
        )


def run_each(
    items: Sequence[ItemT], operation: Callable[[ItemT], ResultT], result_type: type[ResultT]
) -> list[ResultT]:
    """`operation` on every item; a failed item becomes `result_type(error=<problem>)`."""
    results: list[ResultT] = []
    for item in items:
        try:
            results.append(operation(item))
        except KNOWN_ERRORS as exc:
            problem = problem_for(exc)
            assert problem is not None
            results.append(result_type(error=ProblemDetail(**problem.body())))
    return results
