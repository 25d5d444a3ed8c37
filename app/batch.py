"""Batch calls: a list in, a list out, one problem per item that failed.

An item's failure (a bad ciphertext, a wrong shape) does not fail its neighbours. Errors that are
not about an item (no token, unknown key) still fail the whole request, before any work.
"""

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Protocol, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.body import json_response, read_json
from app.errors import KNOWN_ERRORS, ProblemDetail, invalid_input, problem_for

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT", bound=BaseModel)

# The most items a batch may have whatever CIPHERD_MAX_BATCH_ITEMS says, in the schema. The body
# is still parsed whole before the count is known: a million tiny items (13 MB of JSON) cost
# 0.5-2.2 s of the worker's time, which CIPHERD_MAX_JSON_BODY_BYTES bounds.
MAX_ITEMS = 10_000
Items = Annotated[list[ItemT], Field(min_length=1, max_length=MAX_ITEMS)]


class Batch(Protocol):
    items: Sequence[Any]


BatchT = TypeVar("BatchT", bound=Batch)


async def serve_batch(
    request: Request,
    model: type[BatchT],
    run: Callable[[BatchT], BaseModel],
    exclude_none: bool = True,
) -> Response:
    """A batch route's work: the body read once the route has checked the token
    (`app.routing`), held to CIPHERD_MAX_BATCH_ITEMS, and run off the event loop. The answer
    leaves out empty fields (a result has `error` or the outcome, not both) unless null means
    something (`exclude_none=False`: an FE result outside the bounds is null)."""
    body = await read_json(request, model)  # type: ignore[type-var]
    check_batch_size(len(body.items), request.app.state.settings.max_batch_items)
    return json_response(await run_in_threadpool(run, body), exclude_none=exclude_none)


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
