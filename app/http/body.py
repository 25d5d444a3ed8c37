"""Request bodies that come as JSON or as raw bytes.

Large ECIES and AEZ payloads are sent as `application/octet-stream` with the parameters in the
query string, which spares the client base64 and the server a JSON parse of hundreds of
megabytes. The JSON form's path takes them too; the OpenAPI document lists them under the
raw form's own path (`.../encrypt/raw`), which takes both as well.
"""

from functools import cache
from typing import Any, TypeVar, get_args, get_origin

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json
from starlette.requests import ClientDisconnect
from starlette.types import Scope

from app.http.framework import query_parameters
from app.ops.errors import Problem, first_errors, invalid_input
from app.ops.work import compute

OCTET_STREAM = "application/octet-stream"
# The most errors a 422 lists; more are counted in one last entry.
MAX_LISTED_ERRORS = 100
ModelT = TypeVar("ModelT", bound=BaseModel)

# Models that appear only through `json_body`, for the OpenAPI document's components.
EXTRA_SCHEMA_MODELS: list[type[BaseModel]] = []


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` declaring a JSON body of `model` that the route reads with `read_json`:
    what FastAPI declares for a body parameter of that type, and the 415 `read_json` gives."""
    EXTRA_SCHEMA_MODELS.append(model)
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        "responses": {"415": {"description": "the body is not application/json, or is compressed"}},
    }


def raw_body(binary: str, query: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` declaring raw bytes described by `binary` as the body, with the query
    parameters `query` (read by `read_query`).

    The raw form is an operation of its own in the document (`/raw` after the JSON form's
    path): generators give an operation one body type and one type per status, so raw bytes
    beside JSON on one operation came out typed as JSON. The body's schema is empty (any bytes,
    as OpenAPI 3.1 writes them): openapi-typescript types `format: binary` as a string, which
    no bytes are, and the other generators send what they are given for an empty one.
    """
    return {
        "parameters": query_parameters(query),
        "requestBody": {
            "required": True,
            "content": {OCTET_STREAM: {"schema": {}}},
            "description": binary,
        },
        "responses": {"415": {"description": f"the body is not {OCTET_STREAM}, or is compressed"}},
    }


VERSION_HEADER = "Cipherd-Key-Version"


def binary_response(description: str) -> dict[int | str, dict[str, Any]]:
    """A 200 response of raw bytes with the key version in VERSION_HEADER (`raw_response`)."""
    version = {"description": "the key version used", "schema": {"type": "integer"}}
    return {
        200: {
            "content": {OCTET_STREAM: {"schema": {"type": "string", "format": "binary"}}},
            "description": description,
            "headers": {VERSION_HEADER: version},
        }
    }


def raw_response(payload: bytes, version: int) -> Response:
    """The answer to a raw request: the bytes, and the key version in a header."""
    return Response(payload, media_type=OCTET_STREAM, headers={VERSION_HEADER: str(version)})


def _media_type(request: Request) -> str:
    """The request's Content-Type without parameters, lower case ("" when there is none)."""
    value = header(request.scope, b"content-type") or b""
    return value.decode("latin-1").split(";")[0].strip().lower()


def _is_json_suffix(media_type: str) -> bool:
    """`application/vnd.example+json` and the like (RFC 6839), which FastAPI reads as JSON."""
    return media_type.startswith("application/") and media_type.endswith("+json")


def header(scope: Scope, name: bytes) -> bytes | None:
    """A request header's raw value (`name` in lower case): a scan of the few raw pairs, several
    times cheaper than building Starlette's `Headers` for one lookup on the hot path."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _check_identity_encoding(request: Request) -> None:
    """Refuse a compressed body (415, RFC 9110 8.4.1): read as sent, its compressed bytes would
    be what gets encrypted, or fail to parse."""
    coding = (header(request.scope, b"content-encoding") or b"").decode("latin-1").strip().lower()
    if coding not in ("identity", ""):
        raise Problem(
            415,
            "unsupported-media-type",
            "Unsupported media type",
            f"Content-Encoding {coding} is not supported: send the body uncompressed",
        )


def is_raw(request: Request) -> bool:
    return _media_type(request) == OCTET_STREAM


def require_raw(request: Request) -> None:
    """Refuse (415) a body that is not raw bytes, on a path that takes only those."""
    if not is_raw(request):
        raise Problem(
            415,
            "unsupported-media-type",
            "Unsupported media type",
            f"send {OCTET_STREAM}, not {_media_type(request) or 'a body without Content-Type'}",
        )


async def body_bytes(request: Request) -> bytearray:
    """The whole body, in one buffer grown as the bytes arrive.

    Never sized from Content-Length up front: that is the client's claim, and would let a
    request of a few headers hold the whole body limit in memory. Growing costs no copies here
    (a large bytearray is reallocated in place), and needs no join of chunks at the end. Read
    from `receive` directly: Starlette's `Request.stream` generator costs more than the copy of
    a small body.
    """
    buffer = bytearray()
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        buffer += message.get("body", b"")
        if not message.get("more_body", False):
            return buffer


async def read_raw(request: Request) -> bytearray:
    """The whole body, under the raw body limit (the middleware's, lifted here)."""
    _check_identity_encoding(request)
    request.state.body_budget.allow_raw()
    return await body_bytes(request)


async def read_json(
    request: Request, model: type[ModelT], raw_query: type[BaseModel] | None = None
) -> ModelT:
    """The body parsed as `model`; otherwise the 422 FastAPI gives for a body parameter.

    `raw_query` is, on a route that also takes raw bodies (`raw_body`), the query parameters
    of that form. The JSON carries its own, so with a JSON body a value other than the default
    is refused rather than ignored (a `key_version` in the query would otherwise be silently
    dropped); defaults pass, since generated clients send every parameter.
    """
    media_type = _media_type(request)
    if media_type not in ("application/json", "") and not _is_json_suffix(media_type):
        accepted = f"application/json or {OCTET_STREAM}" if raw_query else "application/json"
        raise Problem(
            415,
            "unsupported-media-type",
            "Unsupported media type",
            f"send {accepted}, not {media_type}",
        )
    if raw_query is not None and request.scope["query_string"]:
        # Only the raw form's parameters: the route refused any other name already.
        query = read_query(request, raw_query, known_only=True)
        fields = raw_query.model_fields
        misplaced = sorted(
            name for name in query.model_fields_set if getattr(query, name) != fields[name].default
        )
        if misplaced:
            raise invalid_input(
                f"query parameters {', '.join(misplaced)} go with an {OCTET_STREAM} body; "
                "a JSON body carries its parameters in the JSON"
            )
    _check_identity_encoding(request)
    body = await body_bytes(request)
    try:
        # A large body is parsed in a thread: 32 MB of JSON takes the better part of a second.
        return await compute(len(body), model.model_validate_json, body)
    except ValidationError as exc:
        raise invalid_request(exc, "body") from None


def invalid_request(exc: ValidationError, *where: str) -> RequestValidationError:
    """FastAPI's 422 for `exc`, its errors located under `where` ("body", "query"): at most
    MAX_LISTED_ERRORS of them, then one that counts the rest, so that a body of a million
    unknown fields costs neither seconds to describe nor a million lines of answer."""
    listed: list[dict[str, Any]] = [
        {**error, "loc": (*where, *error["loc"])} for error in first_errors(exc, MAX_LISTED_ERRORS)
    ]
    unlisted = exc.error_count() - len(listed)
    if unlisted:
        listed.append(
            {"loc": where, "msg": f"{unlisted:,} more errors, not listed", "type": "too_many"}
        )
    return RequestValidationError(listed)


class JsonAnswer(JSONResponse):
    """An answer of plain values (strings, numbers, booleans, None, lists and maps) as JSON,
    serialised by pydantic-core: the same bytes as Starlette's `json.dumps` for such values, in
    a ninth of the time, which a Transit call's answer of a few fields notices."""

    def render(self, content: Any) -> bytes:
        return to_json(content)


def json_response(model: BaseModel, exclude_none: bool = False) -> Response:
    """The model as FastAPI would send it for `response_model`, serialised once: the route built
    it from validated parts, so validating it again against its own type is wasted work."""
    content = model.__pydantic_serializer__.to_json(model, exclude_none=exclude_none)
    return Response(content, media_type="application/json")


@cache
def _list_fields(model: type[BaseModel]) -> dict[str, bool]:
    """Each field of a query model, and whether it takes every value of a repeated name."""
    return {
        name: list in (get_origin(field.annotation), *map(get_origin, get_args(field.annotation)))
        for name, field in model.model_fields.items()
    }


def read_query(request: Request, model: type[ModelT], known_only: bool = False) -> ModelT:
    """The query string parsed as `model`, as FastAPI parses a `Annotated[model, Query()]`
    argument: a list field takes every value of its name, any other field the last one, and
    an invalid value is a 422 naming `query.<field>`, as is a name the model does not take
    (a `RequestBody` refuses it) unless `known_only` leaves such names out."""
    params = request.query_params
    lists = _list_fields(model)
    values = {
        name: params.getlist(name) if lists.get(name) else params[name]
        for name in params
        if not known_only or name in lists
    }
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise invalid_request(exc, "query") from None
