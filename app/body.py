"""Request bodies that come as JSON or as raw bytes.

Large ECIES and AEZ payloads are sent as `application/octet-stream` with the parameters in the
query string, which spares the client base64 and the server a JSON parse of hundreds of
megabytes. The same path takes the JSON form; the OpenAPI document lists both media types.
"""

from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, ParamSpec, TypeVar, get_args, get_origin

from fastapi import FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from app.errors import Problem, invalid_input

OCTET_STREAM = "application/octet-stream"
ModelT = TypeVar("ModelT", bound=BaseModel)
ResultT = TypeVar("ResultT")
ArgsP = ParamSpec("ArgsP")

# Crypto on a payload up to this size runs on the event loop: microseconds of work, where a hop
# to a worker thread and back costs more than the work. Larger payloads go to a thread.
INLINE_BYTES = 64 * 1024

# Models that appear only through `dual_body`, for the OpenAPI document's components.
EXTRA_SCHEMA_MODELS: list[type[BaseModel]] = []


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` declaring a JSON body of `model` that the route reads with `read_json`:
    what FastAPI declares for a body parameter of that type."""
    EXTRA_SCHEMA_MODELS.append(model)
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def dual_body(
    model: type[BaseModel], binary: str, query: type[BaseModel] | None = None
) -> dict[str, Any]:
    """`openapi_extra` declaring a JSON body of `model` or raw bytes described by `binary`, and
    the query parameters `query` that go with raw bytes (read by `read_query`)."""
    declared = json_body(model)
    declared["requestBody"]["content"][OCTET_STREAM] = {
        "schema": {"type": "string", "format": "binary", "description": binary}
    }
    return {**({"parameters": query_parameters(query)} if query else {}), **declared}


def binary_response(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 200 response that is JSON or, for a raw request, raw bytes."""
    return {
        200: {
            "content": {OCTET_STREAM: {"schema": {"type": "string", "format": "binary"}}},
            "description": description,
            **({"headers": headers} if headers else {}),
        }
    }


def _media_type(request: Request) -> str:
    """The request's Content-Type without parameters, lower case ("" when there is none)."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def is_raw(request: Request) -> bool:
    return _media_type(request) == OCTET_STREAM


async def read_raw(request: Request) -> bytes | bytearray:
    """The whole body, read into one buffer of the declared length when there is one."""
    declared = request.headers.get("content-length")
    if declared is None or not declared.isdigit():
        return await request.body()
    size = int(declared)
    limit = request.app.state.settings.max_body_bytes
    if size > limit:
        raise Problem(
            413,
            "body-too-large",
            "Body too large",
            f"the request body is over this service's limit of {limit} bytes",
        )
    buffer = bytearray(size)
    filled = 0
    async for chunk in request.stream():
        end = filled + len(chunk)
        if end > size:
            raise invalid_input("the body is longer than its Content-Length")
        buffer[filled:end] = chunk
        filled = end
    if filled != size:
        raise invalid_input("the body is shorter than its Content-Length")
    return buffer


async def read_json(request: Request, model: type[ModelT]) -> ModelT:
    """The body parsed as `model`; otherwise the 422 FastAPI gives for a body parameter."""
    media_type = _media_type(request)
    if media_type not in ("application/json", ""):
        raise Problem(
            415,
            "unsupported-media-type",
            "Unsupported media type",
            f"send application/json or {OCTET_STREAM}, not {media_type}",
        )
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]
        ) from None


async def compute(
    size: int, function: Callable[ArgsP, ResultT], *args: ArgsP.args, **kwargs: ArgsP.kwargs
) -> ResultT:
    """`function(*args)` for a payload of `size` bytes: inline when small, else in a thread."""
    if size <= INLINE_BYTES:
        return function(*args, **kwargs)
    return await run_in_threadpool(function, *args, **kwargs)


def json_response(model: BaseModel) -> Response:
    """The model as FastAPI would send it for `response_model`, serialised once: the route built
    it from validated parts, so validating it again against its own type is wasted work."""
    return Response(model.__pydantic_serializer__.to_json(model), media_type="application/json")


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The OpenAPI parameters FastAPI declares for a `Annotated[model, Query()]` argument.

    A route whose query matters only for raw bodies reads it with `read_query` rather than
    having FastAPI parse it on every request, and declares it with these.
    """
    probe = FastAPI()

    @probe.get("/")
    def declared(query: Annotated[model, Query()]) -> None:  # type: ignore[valid-type]
        """Never called: it only declares the parameters."""

    return probe.openapi()["paths"]["/"]["get"]["parameters"]


@cache
def _list_fields(model: type[BaseModel]) -> dict[str, bool]:
    """Each field of a query model, and whether it takes every value of a repeated name."""
    return {
        name: list in (get_origin(field.annotation), *map(get_origin, get_args(field.annotation)))
        for name, field in model.model_fields.items()
    }


def read_query(request: Request, model: type[ModelT]) -> ModelT:
    """The query string parsed as `model`, as FastAPI parses a `Annotated[model, Query()]`
    argument: a list field takes every value of its name, any other field the last one, and
    an invalid value is a 422 naming `query.<field>`."""
    params = request.query_params
    values = {
        name: params.getlist(name) if is_list else params[name]
        for name, is_list in _list_fields(model).items()
        if name in params
    }
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("query", *error["loc"])} for error in exc.errors()]
        ) from None
