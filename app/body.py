"""Request bodies that come as JSON or as raw bytes.

Large ECIES and AEZ payloads are sent as `application/octet-stream` with the parameters in the
query string, which spares the client base64 and the server a JSON parse of hundreds of
megabytes. The same path takes the JSON form; the OpenAPI document lists both media types.
"""

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from app.errors import Problem, invalid_input

OCTET_STREAM = "application/octet-stream"
ModelT = TypeVar("ModelT", bound=BaseModel)

# Models that appear only through `dual_body`, for the OpenAPI document's components.
EXTRA_SCHEMA_MODELS: list[type[BaseModel]] = []


def dual_body(model: type[BaseModel], binary: str) -> dict[str, Any]:
    """`openapi_extra` declaring a JSON body of `model` or raw bytes described by `binary`."""
    EXTRA_SCHEMA_MODELS.append(model)
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}},
                OCTET_STREAM: {
                    "schema": {"type": "string", "format": "binary", "description": binary}
                },
            },
        }
    }


def binary_response(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 200 response that is JSON or, for a raw request, raw bytes."""
    return {
        200: {
            "content": {OCTET_STREAM: {"schema": {"type": "string", "format": "binary"}}},
            "description": description,
            **({"headers": headers} if headers else {}),
        }
    }


def is_raw(request: Request) -> bool:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media_type == OCTET_STREAM


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
    """The body parsed as `model`; 422 with the field that was wrong otherwise."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
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
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise invalid_input(f"{where}: {first['msg']}" if where else first["msg"]) from None
