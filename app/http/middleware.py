"""The one ASGI middleware every request passes: request id, body limit, access log, metrics,
and the answer to an unexpected error.

Written against raw ASGI rather than BaseHTTPMiddleware, which would cost a task and a copy per
request on the hot path.
"""

import asyncio
import contextlib
import itertools
import logging
import os
import re
import time
from typing import Any, cast

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.body import header
from app.http.operation import operation_id
from app.http.problems import BodyMemoryFull, BodyTooLarge, problem_response
from app.ops.audit import AuditNote, AuditRecord, AuditTrail
from app.ops.errors import Problem
from app.server.logs import access_writer, request_id_var
from app.server.metrics import REFUSED, count_request

log = logging.getLogger("cipherd.errors")

# The status metrics and the access log give a request whose client left before it was answered
# (as nginx logs it).
CLIENT_CLOSED = 499

# A key name longer than any valid one (a refused request's) is cut to this in its record.
MAX_RECORDED_NAME = 128

# Answers carry secrets and plaintexts (exports, tokens, decryptions, functional keys): no cache
# on the way, nor the client's, may keep one. Every answer gets it unless its route set its own.
_NO_STORE = ((b"cache-control", b"no-store"),)

_CLIENT_REQUEST_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,64}$")


class BodyLimit:
    """The body limit of one request, in `scope["state"]["body_limit"]`.

    The JSON limit, unless the route says it reads raw bytes before it reads any: a client's
    Content-Type alone must not lift it, or a route that parses its body could be made to
    parse up to the raw limit.
    """

    __slots__ = ("_raw_limit", "limit", "raw")

    def __init__(self, json_limit: int, raw_limit: int) -> None:
        self.limit = json_limit
        self._raw_limit = raw_limit
        self.raw = False

    def allow_raw(self) -> None:
        self.limit, self.raw = self._raw_limit, True


# A JSON body's share of the body memory budget per byte: parsed, it takes about ten times its
# size (bench/README.md); raw bytes go to the crypto as they are.
JSON_MEMORY_FACTOR = 8


class BodyMemory:
    """The memory the request bodies of this worker hold at once, against a budget: past it a
    request is answered 503 rather than read, so memory does not grow with the number of
    clients. Used only from the event loop."""

    __slots__ = ("budget", "held")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held = 0

    def take(self, amount: int) -> None:
        if self.held + amount > self.budget:
            REFUSED.labels("body-memory").inc()
            raise BodyMemoryFull()
        self.held += amount


class ObserveMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        max_json_body_bytes: int,
        body_memory: int,
        audit: AuditTrail | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_body_bytes = max_json_body_bytes
        self.audit = audit
        self.body_memory = BodyMemory(body_memory)
        # A request's id when the client sent none: random per app (so per worker process), then
        # a count, 32 hex digits in all; unique without a system call per request.
        self._id_prefix = os.urandom(8).hex()
        self._id_count = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client_id = header(scope, b"x-request-id")
        request_id = (
            client_id.decode()
            if client_id and _CLIENT_REQUEST_ID.fullmatch(client_id)
            else f"{self._id_prefix}{next(self._id_count):016x}"
        )
        note = AuditNote()
        state = scope.setdefault("state", {})
        state["request_id"], state["audit"] = request_id, note
        context_token = request_id_var.set(request_id)
        started_at = time.time()
        started = time.perf_counter()
        status = 500
        # Raw bytes go straight to the crypto; any other body is parsed first, and parsing a
        # large JSON body of many small values costs seconds and gigabytes.
        body_limit = BodyLimit(self.max_json_body_bytes, self.max_body_bytes)
        scope["state"]["body_limit"] = body_limit
        length = header(scope, b"content-length")
        declared = int(length) if length is not None and length.isdigit() else 0
        received = 0
        memory = self.body_memory
        held = 0

        async def counting_receive() -> Message:
            nonlocal received, held
            limit = body_limit.limit  # read now: the route may have allowed raw bytes
            if declared > limit:
                raise BodyTooLarge(limit, body_limit.raw)
            factor = 1 if body_limit.raw else JSON_MEMORY_FACTOR
            if declared * factor > held:  # the whole declared body, before any of it is read
                memory.take(declared * factor - held)
                held = declared * factor
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit, body_limit.raw)
                if received * factor > held:  # a body longer than declared, or chunked
                    memory.take(received * factor - held)
                    held = received * factor
            return message

        answered = refused = False
        # HEAD is GET without the body (RFC 9110, 9.3.2): routed as GET, answered without it.
        head = scope["method"] == "HEAD"
        routed = {**scope, "method": "GET"} if head else scope
        audit = self.audit

        def record(answer_status: int) -> AuditRecord | None:
            """This request's audit record, if its route is one that records."""
            operation = _audited_operation(routed)
            if operation is None:
                return None
            client = scope.get("client")
            name = note.key or routed.get("path_params", {}).get("name")
            token_id = routed.get("path_params", {}).get("token_id")
            if token_id is not None:
                note.details.setdefault("token", _recordable(token_id))
            return AuditRecord(
                time=started_at,
                request_id=request_id,
                client=client[0] if client else None,
                principal=note.principal,
                operation=operation,
                key=None if name is None else _recordable(name),
                key_version=note.key_version,
                status=answer_status,
                problem=note.problem,
                details=note.details,
                change=note.change,
            )

        async def tagging_send(message: Message) -> None:
            nonlocal status, answered, refused
            if refused:  # the answer the audit trail did not let through
                return
            if message["type"] == "http.response.start":
                entry = record(message["status"]) if audit is not None else None
                if entry is not None:
                    assert audit is not None
                    try:
                        await audit.write(entry)
                    except Problem as problem:
                        # A 503 already says that nothing was done and when to retry.
                        if entry.status != 503:
                            refused = True
                            await _refuse(problem, request_id, send)
                            status, answered = problem.status, True
                            return
                status, answered = message["status"], True
                headers = message.get("headers", [])
                message["headers"] = [
                    *headers,
                    (b"x-request-id", request_id.encode()),
                    *(() if any(k.lower() == b"cache-control" for k, _ in headers) else _NO_STORE),
                ]
            elif head:
                message = {**message, "body": b""}
            await send(message)

        try:
            await self.app(routed, counting_receive, tagging_send)
        except ClientDisconnect:
            # The client went away mid-body: nothing to answer, and no error of ours.
            status = CLIENT_CLOSED
        except asyncio.CancelledError:
            # uvicorn cancels what still runs when its shutdown grace ends. A 503 the client can
            # retry elsewhere, with the request id, rather than uvicorn's plain 500; the task
            # then ends as the shutdown wants, so the cancellation goes no further.
            if answered:
                raise
            problem = Problem(
                503,
                "shutting-down",
                "Shutting down",
                "the service stopped before this request finished; a write may or may not "
                "have been applied",
            )
            note.problem = problem.slug
            response = problem_response(problem, headers={"Connection": "close"})
            await response(routed, receive, tagging_send)
        except Exception as exc:
            # Answered here rather than by Starlette's outermost handler, so that the 500 carries
            # the request id like any other answer and the error is logged once, with it.
            log.error("unhandled %s", type(exc).__name__, exc_info=exc)
            if answered:  # all that is left is to drop the connection
                raise
            problem = Problem(500, "internal", "Internal error", f"request {request_id} failed")
            note.problem = problem.slug
            await problem_response(problem)(routed, receive, tagging_send)
        finally:
            if not answered and audit is not None:
                entry = record(status)
                if entry is not None:  # a client that left: its request still gets its record
                    with contextlib.suppress(Problem):
                        await audit.write(entry)
            memory.held -= held
            elapsed = time.perf_counter() - started
            path = _route_label(routed)
            method = scope["method"]
            label = method if method in _METHODS else "other"
            count_request(path, label, status, elapsed)
            access_writer.write(method, path, status, round(elapsed * 1000, 3), request_id)
            request_id_var.reset(context_token)


def _recordable(text: str) -> str:
    """A name from the path as its record can hold it, whatever a refused request sent: cut to
    MAX_RECORDED_NAME, with control characters escaped (PostgreSQL text holds no NUL)."""
    text = text[:MAX_RECORDED_NAME]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


async def _refuse(problem: Problem, request_id: str, send: Send) -> None:
    """Answer `problem` in place of a response whose audit record could not be written."""

    async def tagged(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
        await send(message)

    await problem_response(problem)({"type": "http"}, _no_body, tagged)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


# Routes under /v1 name a key or a token or need a token, and so get an audit record; /healthz,
# /readyz, /metrics and the documentation do not. Each route's operation name is its
# operation id (`aez_encrypt`, `keys_delete_key`).
_AUDITED_PREFIX = "/v1/"
_UNSET = object()


def _audited_operation(scope: Scope) -> str | None:
    route: Any = scope.get("route")
    if route is None:
        return None
    # Kept on the route itself: an id-keyed cache could hand a new app's route (tests build
    # many) the name of a freed one that had the same id.
    known = getattr(route, "audit_operation", _UNSET)
    if known is not _UNSET:
        return cast(str | None, known)
    operation = operation_id(route) if str(route.path).startswith(_AUDITED_PREFIX) else None
    route.audit_operation = operation
    return operation


# The methods metrics name; any other (PROPFIND, MKCOL, ...) counts as "other", so that a client
# cannot add label sets at will.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _route_label(scope: Scope) -> str:
    """The matched route's template for metrics and the access log: the route FastAPI noted, or
    the path of a route it did not note (Starlette's own, such as /openapi.json) when that route
    has no parameters and so one fixed path; else "unmatched"."""
    route: Any = scope.get("route")
    if route is not None:
        return str(route.path)
    if "endpoint" in scope and not scope.get("path_params"):
        return str(scope["path"])
    return "unmatched"
