"""Problems as HTTP answers: `application/problem+json` documents (RFC 9457).

The problems themselves are `app.ops.errors`; this module gives them their schema for the
OpenAPI document and their answers, and answers FastAPI's and Starlette's own errors (a body
that fails validation, an unknown path, a method not allowed) the same way. Unexpected
exceptions become a bare 500 whose detail names only the request id (`app.http.middleware`).
"""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.http.body import OCTET_STREAM, JsonAnswer
from app.http.deps import audit_note
from app.http.framework import methods_at
from app.http.vault import speaks_vault, vault_error
from app.ops.errors import (
    KNOWN_ERRORS,
    RETRY_AFTER_SECONDS,
    Problem,
    error_text,
    invalid_input,
    problem_for,
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
        (429, "too many requests: retry after the seconds of Retry-After"),
        (503, "overloaded or the store unavailable: retry after the seconds of Retry-After"),
    )
}


class BodyTooLarge(StarletteHTTPException):
    """The request body is over CIPHERD_MAX_JSON_BODY_BYTES, or, for a route that reads raw
    bytes (`BodyBudget.allow_raw` in `app.http.budget`), over CIPHERD_MAX_BODY_BYTES; or a
    JSON body holds more members and arrays, or more values, than `app.http.budget` allows.

    An HTTPException, so that FastAPI lets it through when it reads a body parameter (it turns
    any other exception raised there into a 400 "error parsing the body").
    """

    def __init__(self, limit: int, hint: bool, unit: str = "bytes") -> None:
        """`hint`: say that raw bodies have a larger limit (not to a raw or login body)."""
        hint_text = f" (routes that take {OCTET_STREAM} take larger raw bodies)" if hint else ""
        super().__init__(
            413, f"the request body is over this service's limit of {limit} {unit}{hint_text}"
        )
        self.limit = limit


class BodyMemoryFull(StarletteHTTPException):
    """The request bodies in progress on this worker fill CIPHERD_BODY_MEMORY_BYTES: an
    HTTPException for the reason BodyTooLarge is."""

    def __init__(self) -> None:
        super().__init__(
            503,
            "the request bodies in progress on this worker fill its memory budget "
            "(CIPHERD_BODY_MEMORY_BYTES); retry shortly",
        )


def problem_response(
    problem: Problem,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    request: Request | None = None,
) -> JsonAnswer:
    """The answer to `problem`; its type is noted for the audit record of `request`. At Vault's
    paths it is Vault's error answer instead (`app.http.vault`)."""
    if request is not None:
        audit_note(request.scope).problem = problem.slug
        if speaks_vault(request.scope):
            return vault_error(problem, headers)
    body = problem.body() | (extra or {})
    headers = {
        **(headers or {}),
        **{
            401: {"WWW-Authenticate": "Bearer"},
            429: {"Retry-After": str(problem.retry_after or RETRY_AFTER_SECONDS)},
            503: {"Retry-After": str(problem.retry_after or RETRY_AFTER_SECONDS)},
        }.get(problem.status, {}),
    }
    return JsonAnswer(body, status_code=problem.status, media_type=PROBLEM_JSON, headers=headers)


def problem_detail(exc: Exception) -> ProblemDetail:
    """A known error as the problem document a batch item carries under `error`."""
    problem = problem_for(exc)
    assert problem is not None, "only KNOWN_ERRORS are answered per item"
    return ProblemDetail(**problem.body())


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    # Keep location, message and type; drop the offending input, which may be secret.
    return [
        {"loc": list(error.get("loc", ())), "msg": error.get("msg", ""), "type": error.get("type")}
        for error in exc.errors()
    ]


def _allowed_methods(request: Request) -> str:
    """Every method some route takes at this path. Starlette's 405 names only the first route
    that matched the path (`PUT /v1/keys` got `Allow: POST`, though GET lists the keys); HEAD
    goes wherever GET does (`app.http.middleware`)."""
    methods = methods_at(request.app.routes, request.scope["path"])
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def install_handlers(app: FastAPI) -> None:
    """Answer every known error, and FastAPI's and Starlette's own, as a problem document."""

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JsonAnswer:
        errors = _validation_errors(exc)
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        return problem_response(
            invalid_input(error_text(first)),
            {"errors": errors},
            request=request,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JsonAnswer:
        titles = {404: "Not found", 405: "Method not allowed", 413: "Body too large"}
        problem = Problem(
            exc.status_code,
            f"http-{exc.status_code}",
            titles.get(exc.status_code, "HTTP error"),
            str(exc.detail),
        )
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request)
        return problem_response(problem, headers=headers, request=request)

    @app.exception_handler(BodyTooLarge)
    async def _too_large(request: Request, exc: BodyTooLarge) -> JsonAnswer:
        problem = Problem(413, "body-too-large", "Body too large", exc.detail)
        return problem_response(problem, request=request)

    @app.exception_handler(BodyMemoryFull)
    async def _memory_full(request: Request, exc: BodyMemoryFull) -> JsonAnswer:
        problem = Problem(503, "overloaded", "Overloaded", exc.detail)
        return problem_response(problem, request=request)

    async def _known(request: Request, exc: Exception) -> JsonAnswer:
        problem = problem_for(exc)
        assert problem is not None
        return problem_response(problem, request=request)

    for known in KNOWN_ERRORS:
        app.add_exception_handler(known, _known)
