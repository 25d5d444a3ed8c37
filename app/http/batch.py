"""The batch envelope: a list in, a list out, one problem per item that failed.

An item's failure (a bad ciphertext, a wrong shape) does not fail its neighbours. Errors that are
not about an item (no token, unknown key) still fail the whole request, before any work.
"""

from collections.abc import Callable, Sequence
from typing import Annotated, TypeVar

from pydantic import BaseModel, Field

from app.http.problems import problem_detail
from app.ops.errors import KNOWN_ERRORS, invalid_input
from app.settings import MAX_BATCH_ITEMS

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT", bound=BaseModel)

# The most items a batch may have whatever CIPHERD_MAX_BATCH_ITEMS says, in the schema. The body
# is still parsed whole before the count is known: CIPHERD_MAX_JSON_BODY_BYTES bounds what that
# costs (bench/README.md has the figures).
Items = Annotated[list[ItemT], Field(min_length=1, max_length=MAX_BATCH_ITEMS)]


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
            results.append(result_type(error=problem_detail(exc)))
    return results
