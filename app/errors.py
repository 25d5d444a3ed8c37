"""Errors as RFC 9457 problem details (`application/problem+json`).

Every error the service returns has a stable `type` (a URN naming the problem), a `title`, the
HTTP `status` and a `detail` that says what was wrong with the request. Details never contain
secret material; unexpected exceptions become a bare 500 whose detail names only the request id
(`app.middleware`).
"""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.keystore import (
    KeyChangedError,
    KeyExistsError,
    KeyMaterial,
    KeyNotFoundError,
    StoreUnavailableError,
    VersionNotFoundError,
)
from core.errors import (
    EncodingError,
    InvalidKeyError,
    KeyMismatchError,
    ShapeError,
)

PROBLEM_JSON = "application/problem+json"


class ProblemDetail(BaseModel):
    """An RFC 9457 problem document."""

    type: str = Field(examples=["urn:cipherd:problem:invalid-input"])
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = Field(
        None, description="per-field validation errors, when the request body was invalid"
    )


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ProblemDetail, "content": {PROBLEM_JSON: {}}, "description": description}
    for status, description in (
        (400, "the ciphertext does not decrypt or authenticate"),
        (401, "missing or invalid token"),
        (403, "the token's scope does not allow this"),
        (404, "no such key or version"),
        (409, "the key exists already, or its type does not fit the operation"),
        (413, "the body is over the size limit"),
        (422, "the request is invalid"),
    )
}


class Problem(Exception):
    """An error to show the client as a problem document."""

    def __init__(self, status: int, slug: str, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail

    def body(self) -> dict[str, Any]:
        return {
            "type": f"urn:cipherd:problem:{self.slug}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }


def invalid_input(detail: str) -> Problem:
    return Problem(422, "invalid-input", "Invalid input", detail)


def unauthorized(detail: str) -> Problem:
    return Problem(401, "unauthorized", "Missing or invalid token", detail)


def forbidden(detail: str) -> Problem:
    return Problem(403, "forbidden", "Outside the token's scope", detail)


def wrong_key_type(name: str, key_type: str, wanted: str) -> Problem:
    return Problem(
        409,
        "wrong-key-type",
        "Wrong key type",
        f"key {name!r} has type {key_type}, which cannot be used for {wanted}",
    )


def failed_with(material: KeyMaterial, slug: str, title: str) -> Problem:
    """A 400 for a payload that does not open under the version used, naming that version:
    payloads do not record theirs, so one made before a rotation needs its key_version."""
    hint = (
        "; a payload made under an earlier version needs that key_version"
        if material.version > 1
        else ""
    )
    detail = f"{title.lower()} with version {material.version} of key {material.name!r}{hint}"
    return Problem(400, slug, title, detail)


def problem_for(exc: Exception) -> Problem | None:
    """The problem a known library or store error stands for, or None for a bug."""
    match exc:
        case Problem():
            return exc
        case ShapeError():
            return Problem(422, "shape-mismatch", "Wrong shape", str(exc))
        case KeyMismatchError():
            return Problem(422, "key-mismatch", "Key mismatch", str(exc))
        case InvalidKeyError() | EncodingError():
            return invalid_input(str(exc))
        case KeyNotFoundError() | VersionNotFoundError():
            return Problem(404, "key-not-found", "Key not found", str(exc))
        case KeyExistsError():
            return Problem(409, "key-exists", "Key exists", str(exc))
        case KeyChangedError():
            return Problem(409, "key-changed", "Key changed", str(exc))
        case StoreUnavailableError():
            return Problem(503, "store-unavailable", "Store unavailable", str(exc))
    return None


KNOWN_ERRORS: tuple[type[Exception], ...] = (
    Problem,
    ShapeError,
    KeyMismatchError,
    InvalidKeyError,
    EncodingError,
    KeyNotFoundError,
    VersionNotFoundError,
    KeyExistsError,
    KeyChangedError,
    StoreUnavailableError,
)

# Seconds a client is asked to wait before retrying after a 503.
RETRY_AFTER_SECONDS = 1


def problem_response(
    problem: Problem, extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = problem.body() | (extra or {})
    headers = {
        **(headers or {}),
        **{
            401: {"WWW-Authenticate": "Bearer"},
            503: {"Retry-After": str(RETRY_AFTER_SECONDS)},
        }.get(problem.status, {}),
    }
    return JSONResponse(body, status_code=problem.status, media_type=PROBLEM_JSON, headers=headers)


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    # Keep location, message and type; drop the offending input, which may be secret.
    return [
        {"loc": list(error.get("loc", ())), "msg": error.get("msg", ""), "type": error.get("type")}
        for error in exc.errors()
    ]


def _allowed_methods(request: Request) -> str:
    """Every method some route takes at this path. Starlette's 405 names only the first route
    that matched the path (`PUT /v1/keys` got `Allow: POST`, though GET lists the keys); HEAD
    goes wherever GET does (`app.middleware`)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        regex, route_methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and route_methods and regex.match(request.scope["path"]):
            methods |= route_methods
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _validation_errors(exc)
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(part) for part in first["loc"])
        return problem_response(
            invalid_input(f"{where}: {first['msg']}" if where else first["msg"]),
            {"errors": errors},
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        titles = {404: "Not found", 405: "Method not allowed", 413: "Body too large"}
        problem = Problem(
            exc.status_code,
            f"http-{exc.status_code}",
            titles.get(exc.status_code, "HTTP error"),
            str(exc.detail),
        )
        headers = exc.headers
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": _allowed_methods(request)}
        return problem_response(problem, headers=headers)

    async def _known(request: Request, exc: Exception) -> JSONResponse:
        problem = problem_for(exc)
        assert problem is not None
        return problem_response(problem)

    for known in KNOWN_ERRORS:
        app.add_exception_handler(known, _known)
