"""Key operations, declared once.

A key operation (`POST /v1/ecies/{name}/encrypt`, `/v1/aez/{name}/decrypt/batch`, ...) says in
one declaration what it is: its path, the operation a token needs for it, its JSON request and
answer, whether it also takes raw bytes (and which query parameters go with them) and whether it
has a batch form. That declaration builds its handler, its OpenAPI entry and its place in the
route table (`install_routes`); the hot single calls are reached without the router
(`app.http.stack`).

The handler makes FastAPI's checks itself, in FastAPI's order and with its errors: the name
against its pattern (422), then the bearer token and its scope (401/403), and only then reads the
body, so a caller without a valid token cannot make the service read or parse one. It runs as an
ASGI app of its own: FastAPI's generic handler solves the dependency graph afresh for every
request and wraps it in exit stacks and a second exception layer, which cost more than the AEZ
or AES-GCM work of a small message (bench/README.md has the figures). An exception raised here
is answered one layer out, by the app's ExceptionMiddleware, with the same handlers.
"""

import re
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.datastructures import QueryParams
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.batch import check_batch_size
from app.http.body import (
    binary_response,
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
)
from app.http.openapi import install_openapi
from app.http.problems import ERROR_RESPONSES
from app.http.schemas import RequestBody
from app.ops import Services
from app.ops.audit import AuditNote
from app.ops.auth import Principal
from app.ops.keys import KEY_NAME_PATTERN
from app.ops.work import in_thread

BodyT = TypeVar("BodyT", bound=BaseModel)
AnswerT = TypeVar("AnswerT", bound=BaseModel)
Handler = Callable[[Request], Coroutine[Any, Any, Response]]

_KEY_NAME = re.compile(KEY_NAME_PATTERN)
_KEY_NAME_ADAPTER: TypeAdapter[str] = TypeAdapter(KeyName)


@dataclass(slots=True)  # not frozen: made on every request, and a frozen one costs more to build
class KeyCall:
    """What a key operation's handler is given: the key's name, the caller and the services of
    this process."""

    name: str
    principal: Principal
    services: Services
    audit: AuditNote


class RawQuery(RequestBody):
    """The query parameters of an operation's raw (application/octet-stream) form."""

    def request(self, data: bytes) -> BaseModel:
        """The JSON form's request for these parameters and the raw body `data`."""
        raise NotImplementedError


class RawAnswer(Protocol):
    """An answer that a raw request gets as its bytes, with the key version in a header."""

    def raw(self) -> tuple[bytes, int]: ...


@dataclass(frozen=True)
class RawForm:
    """An operation's raw form: what its query parameters are, and what its bytes in and out."""

    query: type[RawQuery]
    body: str
    answer: str


@dataclass(frozen=True)
class BatchForm(Generic[BodyT, AnswerT]):
    """A batch form: `{"items": [...]}` in, `{"results": [...]}` out, `run` in a worker thread
    with one result per item. The answer leaves out empty fields (a result has `error` or the
    outcome, not both) unless null means something (`keep_nulls`: an FE result outside the
    bounds is null)."""

    summary: str
    body: type[BodyT]
    response: type[AnswerT]
    run: Callable[[KeyCall, BodyT], AnswerT]
    keep_nulls: bool = False


class _Items(Protocol):
    @property
    def items(self) -> Sequence[Any]: ...


def _check_key_name(name: str) -> None:
    """FastAPI's 422 for a path name outside the pattern, from the same pydantic validator."""
    if _KEY_NAME.fullmatch(name):  # not `match`: its `$` would admit a trailing newline
        return
    try:
        _KEY_NAME_ADAPTER.validate_python(name)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("path", "name")} for error in exc.errors()]
        ) from None


async def _key_call(request: Request, access: Access) -> KeyCall:
    """The checks before any body is read: the name (422), the token and its scope."""
    name = request.path_params["name"]
    _check_key_name(name)
    services: Services = request.app.state.services
    principal = await check_key_access(
        request.scope, services.auth, access, name, bearer_token(request.scope)
    )
    return KeyCall(name, principal, services, audit_note(request.scope))


def _single(
    access: Access,
    body: type[BodyT],
    handler: Callable[[KeyCall, BodyT], Coroutine[Any, Any, AnswerT]],
    raw: RawForm | None,
    raw_only: bool = False,
) -> Handler:
    """One call: the JSON form, or the raw form when the body is application/octet-stream;
    `raw_only` (the raw form's own path) refuses any other body (415)."""
    raw_query = raw.query if raw is not None else None

    async def handle(request: Request) -> Response:
        call = await _key_call(request, access)
        if raw_only:
            require_raw(request)
        if raw_query is not None and is_raw(request):
            query = read_query(request, raw_query)
            # The buffer as it arrived stands for bytes: the crypto reads any buffer, and a copy
            # into bytes would double the memory of a large request.
            data = cast(bytes, await read_raw(request))
            answer: Any = await handler(call, query.request(data))  # type: ignore[arg-type]  # the raw query builds this operation's body type
            audit_note(request.scope).key_version = answer.key_version
            return raw_response(*answer.raw())
        parsed = await read_json(request, body, raw_query)
        answer = await handler(call, parsed)
        audit_note(request.scope).key_version = getattr(answer, "key_version", None)
        return json_response(answer)

    return handle


def _batch(access: Access, form: BatchForm[Any, Any]) -> Handler:
    async def handle(request: Request) -> Response:
        call = await _key_call(request, access)
        parsed: _Items = await read_json(request, form.body)
        check_batch_size(len(parsed.items), call.services.settings.max_batch_items)
        answer = await in_thread(form.run, call, parsed)
        results = getattr(answer, "results", ())
        audit_note(request.scope).versions([getattr(r, "key_version", None) for r in results])
        return json_response(answer, exclude_none=not form.keep_nulls)

    return handle


def _asgi(handler: Handler) -> Callable[[Scope, Receive, Send], Coroutine[Any, Any, None]]:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await handler(Request(scope, receive, send))
        await response(scope, receive, send)

    return app


class KeyOperationRoute(APIRoute):
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
        super().__init__(path, endpoint, dependencies=[key_access(access)], **kwargs)
        self.access = access
        self.hot = hot
        self.app = _asgi(handler)
        # The raw form's parameters (`install_routes` refuses any other name).
        self.query_names: frozenset[str] = frozenset()


# The endpoint FastAPI documents for a key operation (the key name in the path); never called:
# the route's own handler serves it. No docstring: it would become every operation's description.
async def _declared(name: KeyName) -> None:
    pass


def operation_id(route: APIRoute) -> str:
    """Stable, readable names for generated clients: `ecies_encrypt`, `keys_create_key`."""
    return f"{route.tags[0]}_{route.name}" if route.tags else route.name


class Family:
    """The routes of one crypto family (`/v1/ecies`, `/v1/aez`, `/v1/fe`)."""

    def __init__(self, name: str) -> None:
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
        self,
        path: str,
        *,
        access: Access,
        summary: str,
        body: type[BodyT],
        response: type[AnswerT],
        raw: RawForm | None = None,
        batch: BatchForm[Any, Any] | None = None,
        hot: bool = False,
    ) -> Callable[
        [Callable[[KeyCall, BodyT], Coroutine[Any, Any, AnswerT]]],
        Callable[[KeyCall, BodyT], Coroutine[Any, Any, AnswerT]],
    ]:
        """Declare `async def handler(call, body) -> answer` as the operation at `path` (and
        `path + "/raw"` for its raw form, `path + "/batch"` for its batch form). `hot` sends its
        requests straight to it (`app.http.stack.HotOperations`): single calls whose work is a
        few microseconds, where the router's search and FastAPI's layers would be a measurable
        share.

        `path` takes raw bytes too, as it always has; the document lists them under the raw
        form's path only, where generated clients type them as bytes (`raw_body`)."""

        def declare(
            handler: Callable[[KeyCall, BodyT], Coroutine[Any, Any, AnswerT]],
        ) -> Callable[[KeyCall, BodyT], Coroutine[Any, Any, AnswerT]]:
            route = self._add(
                path,
                handler.__name__,
                access,
                summary,
                response,
                _single(access, body, handler, raw),
                json_body(body),
                hot=hot,
            )
            if raw is not None:
                raw_route = self._add(
                    f"{path}/raw",
                    f"{handler.__name__}_raw",
                    access,
                    f"{summary}: raw bytes",
                    None,
                    _single(access, body, handler, raw, raw_only=True),
                    raw_body(raw.body, raw.query),
                    binary_response(raw.answer),
                )
                route.query_names = raw_route.query_names = frozenset(raw.query.model_fields)
            if batch is not None:
                self.batch(f"{path}/batch", f"{handler.__name__}_batch", access, batch)
            return handler

        return declare

    def batch(self, path: str, name: str, access: Access, form: BatchForm[Any, Any]) -> None:
        """Declare a batch-shaped operation: one request of many items, run in a thread."""
        self._add(
            path,
            name,
            access,
            form.summary,
            form.response,
            _batch(access, form),
            json_body(form.body),
        )


def install_routes(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """The app's route table: every route in the order of `routers`, then the documentation
    routes FastAPI put in the table (/openapi.json, /docs, /redoc); the OpenAPI document in the
    same order.

    Routes join the app's own table: `include_router` would keep each router as a node that
    FastAPI searches on every request.
    """
    documentation: list[BaseRoute] = list(app.router.routes)
    routes: list[BaseRoute] = [route for router in routers for route in router.routes]
    for route in routes + documentation:
        if isinstance(route, Route):
            route.app = _known_query_only(route.app, _query_names(route))
    app.router.routes[:] = routes + documentation
    install_openapi(app, routes + documentation)


def _query_names(route: Route) -> frozenset[str]:
    """The query parameters `route` declares: its dependencies' (a model's fields for a query
    model), or a key operation's raw form's."""
    if isinstance(route, KeyOperationRoute):
        return route.query_names
    if not isinstance(route, APIRoute):
        return frozenset()
    names: set[str] = set()
    dependants = [route.dependant]
    while dependants:
        dependant = dependants.pop()
        dependants.extend(dependant.dependencies)
        for param in dependant.query_params:
            annotation = param.field_info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                names.update(f.alias or n for n, f in annotation.model_fields.items())
            else:
                names.add(param.alias)
    return frozenset(names)


def _known_query_only(app: ASGIApp, known: frozenset[str]) -> ASGIApp:
    """`app`, refusing a request whose query names a parameter the route does not take (422):
    a misspelt or invented option (`DELETE /v1/keys/k?version=1`) must not be silently ignored
    while the request goes on to do something else."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["query_string"]:
            unknown = sorted(set(QueryParams(scope["query_string"]).keys()) - known)
            if unknown:
                raise RequestValidationError(
                    [
                        {
                            "type": "extra_forbidden",
                            "loc": ("query", name),
                            "msg": "Extra inputs are not permitted"
                            + (f"; this route takes {', '.join(sorted(known))}" if known else ""),
                            "input": None,
                        }
                        for name in unknown
                    ]
                )
        await app(scope, receive, send)

    return checked
