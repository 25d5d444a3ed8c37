"""The batch envelope: a list in, a list out, one problem per item that failed.

An item's failure (a bad ciphertext, a wrong shape) does not fail its neighbours. Errors that are
not about an item (no token, unknown key) still fail the whole request, before any work.

The models of a batch are derived from its operation's single-call models: `{"items": [...]}`
of the request, `{"results": [...]}` of results that carry the answer's fields or an `error`.
They are named after the operation (`AezEncryptBatch`, `AezEncryptResult`,
`AezEncryptBatchResponse`), so the OpenAPI document and generated clients have stable names.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, create_model

from app.http.problems import ProblemDetail, problem_detail
from app.http.schemas import RequestBody
from app.ops.errors import KNOWN_ERRORS, invalid_input
from app.settings import MAX_BATCH_ITEMS

ItemT = TypeVar("ItemT")

# The most items a batch may have whatever CIPHERD_MAX_BATCH_ITEMS says, in the schema. The body
# is still parsed whole before the count is known: CIPHERD_MAX_JSON_BODY_BYTES bounds what that
# costs (docs/performance/choices.md has the figures).
Items = Annotated[list[ItemT], Field(min_length=1, max_length=MAX_BATCH_ITEMS)]


def check_batch_size(count: int, limit: int) -> None:
    if count > limit:
        raise invalid_input(
            f"items: {count} items where at most {limit} are allowed (CIPHERD_MAX_BATCH_ITEMS)"
        )


def batch_request(name: str, item: type[BaseModel]) -> type[RequestBody]:
    """`{"items": [item, ...]}`."""
    items: Any = Items[item]  # type: ignore[valid-type]  # a model made at run time
    model: type[RequestBody] = create_model(name, __base__=RequestBody, items=(items, ...))
    return model


class BatchResults:
    """The result models of the batches whose items answer `answer`: each result has the
    answer's fields, all optional, and an `error`; the response is their list. Named once, by
    the first operation that answers `answer`, so that operations with the same answer share
    them (a rewrap's results are an encryption's)."""

    _made: dict[type[BaseModel], "BatchResults"] = {}  # noqa: RUF012  # a registry, by design

    def __init__(self, prefix: str, answer: type[BaseModel]) -> None:
        fields: dict[str, Any] = {
            name: (field.rebuild_annotation() | None, None)
            for name, field in answer.model_fields.items()
        }
        result: Any = create_model(f"{prefix}Result", **fields, error=(ProblemDetail | None, None))
        self.result: type[BaseModel] = result
        self.response: type[BaseModel] = create_model(
            f"{prefix}BatchResponse", results=(list[result], ...)
        )

    @classmethod
    def of(cls, prefix: str, answer: type[BaseModel]) -> "BatchResults":
        made = cls._made.get(answer)
        if made is None:
            made = cls._made[answer] = cls(prefix, answer)
        return made

    def response_of(self, results: list[BaseModel]) -> BaseModel:
        return self.response.model_construct(results=results)

    def outcome(self, verb: Callable[[ItemT], BaseModel], item: ItemT) -> BaseModel:
        """`verb(item)` as a result: its answer, or the problem that refused it."""
        try:
            return self.result.model_construct(**dict(verb(item)))
        except KNOWN_ERRORS as exc:
            return self.result.model_construct(error=problem_detail(exc))

    async def awaited_outcome(
        self, verb: Callable[[ItemT], Awaitable[BaseModel]], item: ItemT
    ) -> BaseModel:
        """`outcome` for a verb that places its own work."""
        try:
            return self.result.model_construct(**dict(await verb(item)))
        except KNOWN_ERRORS as exc:
            return self.result.model_construct(error=problem_detail(exc))
