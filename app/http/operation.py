"""Key operations, declared once: one per-item function each, its single call and its batch
derived from it.

A key operation (`POST /v1/ecies/{name}/encrypt`, `/v1/aez/{name}/decrypt/batch`, ...) is a
function of a family's key and one item: `def encrypt(key: AezKey, item: AezEncryptRequest) ->
AezCiphertext`. Its declaration (`Family.operation`) says the rest: its path, the operation a
token needs for it, whether it also takes raw bytes (and which query parameters go with them),
whether it has a batch form. From that come its handlers, its OpenAPI entry and its place in
the route table (`app.http.framework.install_routes`); the hot single calls are reached
without the router (`app.http.stack`). A single call is the function on one item, on the event
loop when the item is small; a batch is the same function over its items, in a worker thread. A
family's key is resolved once per request, before any item: an unknown key or one of another
type fails the whole request.

The handler makes FastAPI's checks itself, in FastAPI's order and with its errors: the name
against its pattern (422), then the bearer token and its scope (401/403), and only then reads the
body, so a caller without a valid token cannot make the service read or parse one. It runs as an
ASGI app of its own: FastAPI's generic handler solves the dependency graph afresh for every
request and wraps it in exit stacks and a second exception layer, which cost more than the AEZ
or AES-GCM work of a small message (docs/performance/choices.md has the figures). An exception
raised here is answered one layer out, by the app's ExceptionMiddleware, with the same handlers.
"""

import inspect
import re
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypedDict, TypeVar, Unpack, cast, get_type_hints

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError

from app.http.batch import BatchResults, batch_request, check_batch_size
from app.http.body import (
    binary_response,
    invalid_request,
    is_raw,
    json_body,
    json_response,
    raw_body,
    raw_response,
    read_json,
    read_query,
    read_raw,
    require_raw,
)
from app.http.deps import (
    Access,
    KeyName,
    audit_note,
    bearer_token,
    check_key_access,
    key_access,
    service_access,
)
from app.http.framework import HandlerRoute
from app.http.problems import ERROR_RESPONSES
from app.http.schemas import RequestBody
from app.ops import Services
from app.ops.audit import AuditNote
from app.ops.grants import Operation, Principal
from app.ops.keys import KEY_NAME_PATTERN
from app.ops.versioned import RequestKey
from app.ops.work import compute, in_thread

KeyT = TypeVar("KeyT", bound=RequestKey)
ItemT = TypeVar("ItemT", bound=BaseModel)
Handler = Callable[[Request], Coroutine[Any, Any, Response]]
# A per-item function: plain (the declaration places its work), or a coroutine function that
# places its own (the FE process pool); its answer is a model (or an awaitable of one).
Verb = Callable[[KeyT, ItemT], Any]

_KEY_NAME = re.compile(KEY_NAME_PATTERN)
_KEY_NAME_ADAPTER: TypeAdapter[str] = TypeAdapter(KeyName)


@dataclass(slots=True)  # not frozen: made on every request, and a frozen one costs more to build
class KeyCall:
    """What resolving a request's key is given: the key's name, the caller and the services of
    this process."""

    name: str
    principal: Principal
    services: Services
    audit: AuditNote
    batch: bool  # a batch's items, or a single call's one


class RawQuery(RequestBody):
    """The query parameters of an operation's raw (application/octet-stream) form: the JSON
    form's fields but the one its raw body stands for."""

    def fields(self) -> dict[str, Any]:
        """The JSON form's fields these parameters give: by default each under its own name."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class RawForm:
    """An operation's raw form: what its query parameters are, the JSON form's field its bytes
    stand for (`field`), and what its bytes in and out are. Its answer model has `raw()`, the
    bytes and the key version."""

    query: type[RawQuery]
    field: str
    body: str
    answer: str

    def request(self, item: type[ItemT], query: RawQuery, data: bytes) -> ItemT:
        """The JSON form's item for the parameters `query` and the raw body `data`."""
        fields = query.fields()
        fields[self.field] = data
        return item.model_construct(**fields)


def _key_version(model: BaseModel) -> Any:
    """The model's `key_version`, None where it has none: read from its fields, as a missing
    attribute costs pydantic 2 µs to report, a measurable share of a small call."""
    return model.__dict__.get("key_version")


def _carried_bytes(item: BaseModel) -> int:
    """How many bytes an item carries (its payload, AD, ...): what decides whether its work is
    small enough for the event loop."""
    size = 0
    for value in item.__dict__.values():
        if isinstance(value, bytes | bytearray):
            size += len(value)
        elif isinstance(value, list):
            size += sum(len(part) for part in value if isinstance(part, bytes))
    return size


@dataclass(frozen=True)
class KeyOperation(Generic[KeyT, ItemT]):
    """A declared per-item function with what running it needs: how its family resolves the
    key, its item and answer models, and `payload`, the item's field whose envelope may name
    the key version (what a single call warms before running on the event loop)."""

    resolve: Callable[[KeyCall], Awaitable[KeyT]]
    verb: Verb[KeyT, ItemT]
    item: type[ItemT]
    answer: type[BaseModel]
    payload: str | None
    awaited: bool = field(init=False)

    def __post_init__(self) -> None:
        # Read once: asking on every request costs a measurable share of a small one.
        object.__setattr__(self, "awaited", inspect.iscoroutinefunction(self.verb))

    async def one(self, call: KeyCall, item: ItemT) -> BaseModel:
        """A single call: the verb on one item, inline when small, else in a thread."""
        key = await self.resolve(call)
        key.admit((item,))
        if self.awaited:
            answer: BaseModel = await self.verb(key, item)
            return answer
        payload = getattr(item, self.payload) if self.payload else None
        version = _key_version(item)
        if payload is not None or version is not None:
            await key.warm(payload, version)
        return await compute(_carried_bytes(item), self.verb, key, item)

    async def many(
        self,
        call: KeyCall,
        items: Sequence[ItemT],
        results: BatchResults,
        shared: Callable[[KeyT], Awaitable[None]] | None = None,
    ) -> BaseModel:
        """A batch: the verb on every item in a worker thread, one result each; `shared` first
        checks what all the items share (a failure there fails the whole request)."""
        key = await self.resolve(call)
        key.admit(items)
        if shared is not None:
            await shared(key)
        run = partial(self.verb, key)
        if self.awaited:
            each = [await results.awaited_outcome(run, item) for item in items]
            return results.response_of(each)
        return await in_thread(
            lambda: results.response_of([results.outcome(run, item) for item in items])
        )


def _check_key_name(name: str) -> None:
    """FastAPI's 422 for a path name outside the pattern, from the same pydantic validator."""
    if _KEY_NAME.fullmatch(name):  # not `match`: its `$` would admit a trailing newline
        return
    try:
        _KEY_NAME_ADAPTER.validate_python(name)
    except ValidationError as exc:
        raise invalid_request(exc, "path", "name") from None


async def _key_call(request: Request, access: Access, batch: bool) -> KeyCall:
    """The checks before any body is read: the name (422), the token and its scope."""
    name = request.path_params["name"]
    _check_key_name(name)
    services: Services = request.app.state.services
    principal = await check_key_access(
        request.scope, services.auth, access, name, bearer_token(request.scope)
    )
    return KeyCall(name, principal, services, audit_note(request.scope), batch)


def _single(
    operation: KeyOperation[Any, Any],
    access: Access,
    raw: RawForm | None,
    raw_only: bool = False,
) -> Handler:
    """One call: the JSON form, or the raw form when the body is application/octet-stream;
    `raw_only` (the raw form's own path) refuses any other body (415)."""
    raw_query = raw.query if raw is not None else None

    async def handle(request: Request) -> Response:
        call = await _key_call(request, access, batch=False)
        if raw_only:
            require_raw(request)
        if raw is not None and is_raw(request):
            query = read_query(request, raw.query)
            # The buffer as it arrived stands for bytes: the crypto reads any buffer, and a copy
            # into bytes would double the memory of a large request.
            data = cast(bytes, await read_raw(request))
            answer: Any = await operation.one(call, raw.request(operation.item, query, data))
            call.audit.key_version = answer.key_version
            return raw_response(*answer.raw())
        answer = await operation.one(call, await read_json(request, operation.item, raw_query))
        call.audit.key_version = _key_version(answer)
        return json_response(answer)

    return handle


def _batch(
    operation: KeyOperation[Any, Any],
    access: Access,
    body: type[BaseModel],
    items: Callable[[Any], Sequence[BaseModel]],
    results: BatchResults,
    keep_nulls: bool,
    shared: Callable[[Any, Any], Awaitable[None]] | None,
) -> Handler:
    """A batch: `body` read, its `items` counted against the limit, then run."""

    async def handle(request: Request) -> Response:
        call = await _key_call(request, access, batch=True)
        parsed_body = await read_json(request, body)
        parsed = items(parsed_body)
        check_batch_size(len(parsed), call.services.settings.max_batch_items)
        call.services.auth.admit_batch(call.principal, len(parsed))
        check = None if shared is None else partial(shared, parsed_body)
        answer = await operation.many(call, parsed, results, check)
        call.audit.versions([_key_version(r) for r in answer.results])  # type: ignore[attr-defined]  # the derived response's list
        return json_response(answer, exclude_none=not keep_nulls)

    return handle


class KeyOperationRoute(HandlerRoute):
    """A declared key operation: FastAPI's route for its OpenAPI entry and path matching, its
    own handler for requests."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Any],
        *,
        access: Access,
        handler: Handler,
        hot: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(path, endpoint, handler, dependencies=[key_access(access)], **kwargs)
        self.access = access
        self.hot = hot


# The endpoint FastAPI documents for a key operation (the key name in the path); never called:
# the route's own handler serves it. No docstring: it would become every operation's description.
async def _declared(name: KeyName) -> None:
    pass


def operation_id(route: APIRoute) -> str:
    """Stable, readable names for generated clients: `ecies_encrypt`, `keys_create_key`."""
    return f"{route.tags[0]}_{route.name}" if route.tags else route.name


class Options(TypedDict, total=False):
    """What a declaration may say beyond its path, scope and summary (`Family.declare`)."""

    raw: RawForm | None
    batch: str | None
    payload: str | None
    keep_nulls: bool
    hot: bool


class Family(Generic[KeyT]):
    """The routes of one family of key operations (`/v1/ecies`, `/v1/aez`, ...), whose verbs run
    on the key `key(call)` resolves (`app.ops.versioned`)."""

    def __init__(self, name: str, key: Callable[[KeyCall], Awaitable[KeyT]]) -> None:
        self.key = key
        self.schema_prefix = name.title()
        self.router = APIRouter(
            prefix=f"/v1/{name}",
            tags=[name],
            responses=ERROR_RESPONSES,
            generate_unique_id_function=operation_id,
        )

    def _add(
        self,
        path: str,
        name: str,
        access: Access,
        summary: str,
        response: type[BaseModel] | None,
        handler: Handler,
        openapi_extra: dict[str, Any],
        responses: dict[int | str, dict[str, Any]] | None = None,
        hot: bool = False,
    ) -> KeyOperationRoute:
        route = KeyOperationRoute(
            self.router.prefix + path,
            _declared,
            access=access,
            handler=handler,
            hot=hot,
            name=name,
            methods=["POST"],
            response_model=response,
            # No JSON 200 for an answer of raw bytes (`binary_response` declares its 200).
            response_class=JSONResponse if response is not None else Response,
            summary=summary,
            tags=self.router.tags,
            responses={**ERROR_RESPONSES, **(responses or {})},
            openapi_extra=openapi_extra,
            generate_unique_id_function=operation_id,
        )
        self.router.routes.append(route)
        return route

    def operation(
        self, path: str, *, access: Access, summary: str, **options: Unpack[Options]
    ) -> Callable[[Verb[KeyT, ItemT]], KeyOperation[KeyT, ItemT]]:
        """Declare `def verb(key, item) -> answer` as the operation at `path` (`declare`), its
        item and answer models read from its annotations."""

        def declare(verb: Verb[KeyT, ItemT]) -> KeyOperation[KeyT, ItemT]:
            hints = get_type_hints(verb)
            item = hints[list(inspect.signature(verb).parameters)[1]]
            return self.declare(
                verb, item, hints["return"], path, access=access, summary=summary, **options
            )

        return declare

    def declare(
        self,
        verb: Verb[KeyT, ItemT],
        item: type[ItemT],
        answer: type[BaseModel],
        path: str,
        *,
        access: Access,
        summary: str,
        raw: RawForm | None = None,
        batch: str | None = None,
        payload: str | None = None,
        keep_nulls: bool = False,
        hot: bool = False,
    ) -> KeyOperation[KeyT, ItemT]:
        """Declare `verb`, on items `item` with answers `answer`, as the operation at `path`;
        and `path + "/raw"` for its raw form, `path + "/batch"` (summary `batch`) for its batch
        form, whose models are derived and named after the operation (`AezEncryptBatch`,
        `AezEncryptResult`, ...). `payload` names the item's field whose envelope may name the
        key version; a batch result keeps its null fields with `keep_nulls` (an FE result
        outside the bounds is null). `hot` sends its requests straight to it
        (`app.http.stack.HotOperations`): single calls whose work is a few microseconds, or
        whose toll over the same work in process is a promise (an FE decryption), where the
        router's search and FastAPI's layers would be a measurable share.

        `path` takes raw bytes too, as it always has; the document lists them under the raw
        form's path only, where generated clients type them as bytes (`raw_body`)."""
        operation = KeyOperation(self.key, verb, item, answer, payload)
        name = verb.__name__
        route = self._add(
            path,
            name,
            access,
            summary,
            operation.answer,
            _single(operation, access, raw),
            json_body(operation.item),
            hot=hot,
        )
        if raw is not None:
            raw_route = self._add(
                f"{path}/raw",
                f"{name}_raw",
                access,
                f"{summary}: raw bytes",
                None,
                _single(operation, access, raw, raw_only=True),
                raw_body(raw.body, raw.query),
                binary_response(raw.answer),
            )
            route.query_names = raw_route.query_names = frozenset(raw.query.model_fields)
        if batch is not None:
            prefix = self.schema_prefix + _verb_title(path)
            body = batch_request(f"{prefix}Batch", operation.item)
            self.batch_of(
                operation,
                f"{path}/batch",
                f"{name}_batch",
                access=access,
                summary=batch,
                body=body,
                items=_items,
                keep_nulls=keep_nulls,
            )
        return operation

    def batch_of(
        self,
        operation: KeyOperation[KeyT, ItemT],
        path: str,
        name: str,
        *,
        access: Access,
        summary: str,
        body: type[BaseModel],
        items: Callable[[Any], Sequence[ItemT]],
        keep_nulls: bool = False,
        shared: Callable[[Any, KeyT], Awaitable[None]] | None = None,
    ) -> None:
        """Declare a batch of `operation` at `path`: `items(body)` are its items, for a batch
        whose request shares fields between its items (one functional key against many
        ciphertexts); `shared(body, key)` checks those once, before any item."""
        prefix = self.schema_prefix + _verb_title(path.removesuffix("/batch"))
        results = BatchResults.of(prefix, operation.answer)
        handler = _batch(operation, access, body, items, results, keep_nulls, shared)
        self._add(path, name, access, summary, results.response, handler, json_body(body))

    def keyless(
        self, path: str, *, access: Operation, summary: str
    ) -> Callable[[Callable[[ItemT], Awaitable[BaseModel]]], Callable[..., Any]]:
        """Declare `async def verb(item) -> answer` as the operation at `path` that uses no
        stored key (a public key given in the request), for a token allowed `access` without
        one; its item and answer models are read from its annotations."""

        def declare(verb: Callable[[ItemT], Awaitable[BaseModel]]) -> Callable[..., Any]:
            hints = get_type_hints(verb)
            item = hints[next(iter(inspect.signature(verb).parameters))]

            async def endpoint(request: Request) -> Response:
                body = await read_json(request, item)  # after the token check
                return json_response(await verb(body))

            endpoint.__name__ = verb.__name__
            self.router.post(
                path,
                response_model=hints["return"],
                summary=summary,
                openapi_extra=json_body(item),
                dependencies=[service_access(access)],
            )(endpoint)
            return endpoint

        return declare


def _verb_title(path: str) -> str:
    """`Encrypt` for `/{name}/encrypt`; nothing for `/{name}` (a family of one verb)."""
    verb = path.rsplit("/", 1)[1]
    return "" if verb == "{name}" else verb.title()


def _items(batch: Any) -> Sequence[Any]:
    items: Sequence[Any] = batch.items
    return items
