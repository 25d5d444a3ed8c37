"""The one ASGI middleware every request passes (`ObserveMiddleware`), made of named parts:

* `RequestIds`: the request's id, for its answer, its log lines and its audit record;
* `BodyBudget` (`app.http.budget`): its body against the body limits and the worker's body
  memory (`BodyMemory`);
* `AuditGate`: its audit record, written before its answer may go;
* `Answer`: the answer on its way out, with the id, `no-store` and the gate's word;
* `log_access`: its access line and metrics;

and the answer to an unexpected error. Written against raw ASGI rather than
BaseHTTPMiddleware, which would cost a task and a copy per request on the hot path.
"""

import asyncio
import contextlib
import itertools
import logging
import os
import re
import time
from typing import cast

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.body import header
from app.http.budget import MAX_JSON_VALUES, BodyBudget, BodyMemory
from app.http.framework import PATH_PARAMS, ROUTE, route_template
from app.http.operation import operation_id
from app.http.problems import problem_response
from app.ops.audit import FIRST_FAILURE, AuditNote, AuditRecord, AuditTrail
from app.ops.audit.record import audit_unavailable
from app.ops.errors import Problem
from app.ops.token_values import TOKEN_ID_PATTERN
from app.server.logs import access_writer, request_id_var
from app.server.metrics import count_request

log = logging.getLogger("cipherd.errors")

# The status metrics and the access log give a request whose client left before it was answered
# (as nginx logs it).
CLIENT_CLOSED = 499

_CLIENT_REQUEST_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,64}$")
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)


class RequestIds:
    """Each request's id: the client's X-Request-ID when a log line can carry it as it is (1 to
    64 characters of A-Z a-z 0-9 . _ : -), else a new one, 32 hex digits: random per instance
    (so per worker process), then a count; unique without a system call per request."""

    __slots__ = ("_count", "_prefix")

    def __init__(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._count = itertools.count(1)

    def of(self, scope: Scope) -> str:
        client_id = header(scope, b"x-request-id")
        if client_id and _CLIENT_REQUEST_ID.fullmatch(client_id):
            return client_id.decode()
        return f"{self._prefix}{next(self._count):016x}"


class AuditGate:
    """Holds each answer of an audited route until its record is written: what cannot be
    audited is not answered as done. If the record cannot be written, the answer is the
    trail's problem (503 `audit-unavailable`) instead, unless it is a 503 already, which says
    that nothing was done. A request that got no answer (its client left) gets its record all
    the same."""

    __slots__ = ("trail",)

    def __init__(self, trail: AuditTrail) -> None:
        self.trail = trail

    @staticmethod
    def record(
        scope: Scope, note: AuditNote, request_id: str, started_at: float, status: int
    ) -> AuditRecord | None:
        """The record of the request of `scope`, if its route is one that records."""
        operation = _audited_operation(scope)
        if operation is None:
            return None
        operation = note.operation or operation
        client = scope.get("client")
        name = note.key or scope.get(PATH_PARAMS, {}).get("name")
        token_id = scope.get(PATH_PARAMS, {}).get("token_id")
        if token_id is not None:
            # Not what a refused request put there: a token sent in place of its id is a secret.
            shown = token_id if _TOKEN_ID.fullmatch(token_id) else "(not a token id)"
            note.details.setdefault("token", shown)
        return AuditRecord(
            time=started_at,
            request_id=request_id,
            client=client[0] if client else None,
            principal=note.principal,
            operation=operation,
            key=None if name is None else _recordable(name),
            key_version=note.key_version,
            status=status,
            problem=note.problem,
            details=note.details,
            change=note.change,
            room=note.room,
        )

    async def admit(
        self, scope: Scope, note: AuditNote, request_id: str, started_at: float, status: int
    ) -> Problem | None:
        """Write the record of an answer of `status`: None if the answer may go, else the
        problem to answer instead."""
        entry = self.record(scope, note, request_id, started_at, status)
        if entry is None:
            self.trail.release(note.room)
            return None
        try:
            await self.trail.write(entry)
        except Problem as problem:
            if status == 503:
                return None
            if note.change and status < FIRST_FAILURE:
                # Made, with room set aside for its record: only a failing disk (or audit file)
                # gets here, and the client must not make the change again.
                return audit_unavailable(
                    "this change was made, but its audit record could not be written; do not "
                    "repeat it"
                )
            return problem
        if note.answer_after:
            await asyncio.sleep(note.answer_after)
        return None

    async def unanswered(
        self, scope: Scope, note: AuditNote, request_id: str, started_at: float, status: int
    ) -> None:
        """Write the record of a request that got no answer, if the trail takes it."""
        entry = self.record(scope, note, request_id, started_at, status)
        if entry is None:
            self.trail.release(note.room)
        else:
            with contextlib.suppress(Problem):
                await self.trail.write(entry)


# Routes under /v1 name a key or a token or need a token, and so get an audit record; /healthz,
# /readyz, /metrics and the documentation do not. Each route's operation name is its
# operation id (`aez_encrypt`, `keys_delete_key`).
_AUDITED_PREFIX = "/v1/"
_UNSET = object()
# A key name longer than any valid one (a refused request's) is cut to this in its record.
MAX_RECORDED_NAME = 128


def _audited_operation(scope: Scope) -> str | None:
    route = scope.get(ROUTE)
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


def _recordable(text: str) -> str:
    """A name from the path as its record can hold it, whatever a refused request sent: cut to
    MAX_RECORDED_NAME, with control characters escaped (PostgreSQL text holds no NUL)."""
    text = text[:MAX_RECORDED_NAME]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


# Answers carry secrets and plaintexts (exports, tokens, decryptions, functional keys): no cache
# on the way, nor the client's, may keep one. Every answer gets it unless its route set its own.
_NO_STORE = ((b"cache-control", b"no-store"),)


class Answer:
    """The answer to one request, on its way out through `send`: each response gets its id and,
    unless its route set a Cache-Control of its own, `no-store`, once the audit gate let it
    through (its own problem goes out in its place otherwise); HEAD gets no body."""

    __slots__ = (
        "_gate",
        "_head",
        "_refused",
        "_send",
        "answered",
        "note",
        "request_id",
        "scope",
        "started_at",
        "status",
    )

    def __init__(
        self,
        send: Send,
        scope: Scope,
        request_id: str,
        note: AuditNote,
        gate: AuditGate | None,
        head: bool,
    ) -> None:
        self._send = send
        self.scope = scope
        self.request_id = request_id
        self.note = note
        self._gate = gate
        self._head = head
        self.started_at = 0.0 if gate is None else gate.trail.now()
        self.status = 500
        self.answered = False
        self._refused = False  # the answer the audit gate did not let through

    async def send(self, message: Message) -> None:
        if self._refused:
            return
        if message["type"] == "http.response.start":
            status = message["status"]
            gate = self._gate
            if gate is not None:
                problem = await gate.admit(
                    self.scope, self.note, self.request_id, self.started_at, status
                )
                if problem is not None:
                    self._refused = True
                    await _refuse(problem, self.request_id, self._send)
                    self.status, self.answered = problem.status, True
                    return
            self.status, self.answered = status, True
            headers = message.get("headers", [])
            message["headers"] = [
                *headers,
                (b"x-request-id", self.request_id.encode()),
                *(() if any(k.lower() == b"cache-control" for k, _ in headers) else _NO_STORE),
            ]
        elif self._head:
            message = {**message, "body": b""}
        await self._send(message)

    async def unanswered(self) -> None:
        """The request ends without an answer (its client left, say): it still gets its audit
        record."""
        if self._gate is not None:
            await self._gate.unanswered(
                self.scope, self.note, self.request_id, self.started_at, self.status
            )


async def _refuse(problem: Problem, request_id: str, send: Send) -> None:
    """Answer `problem` in place of a response whose audit record could not be written."""

    async def tagged(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
        await send(message)

    await problem_response(problem)({"type": "http"}, _no_body, tagged)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


# The methods metrics name; any other (PROPFIND, MKCOL, ...) counts as "other", so that a client
# cannot add label sets at will.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def log_access(scope: Scope, method: str, status: int, seconds: float, request_id: str) -> None:
    """The request's access line and its metrics, under its route's template (a method other
    than the usual ones counts as "other", so that a client cannot add label sets at will)."""
    route = route_template(scope)
    count_request(route, method if method in _METHODS else "other", status, seconds)
    access_writer.write(method, route, status, round(seconds * 1000, 3), request_id)


class ObserveMiddleware:
    """The parts above, around every HTTP request, and the answer to an unexpected error."""

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        max_json_body_bytes: int,
        body_memory: int,
        audit: AuditTrail | None = None,
        max_json_values: int = MAX_JSON_VALUES,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_body_bytes = max_json_body_bytes
        self.max_json_values = max_json_values
        self.body_memory = BodyMemory(body_memory)
        self.request_ids = RequestIds()
        self.audit_gate = None if audit is None else AuditGate(audit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = self.request_ids.of(scope)
        note = AuditNote()
        budget = BodyBudget(
            scope,
            receive,
            self.body_memory,
            self.max_json_body_bytes,
            self.max_body_bytes,
            self.max_json_values,
        )
        state = scope.setdefault("state", {})
        state["request_id"], state["audit"], state["body_budget"] = request_id, note, budget
        context_token = request_id_var.set(request_id)
        started = time.perf_counter()
        # HEAD is GET without the body (RFC 9110, 9.3.2): routed as GET, answered without it.
        head = scope["method"] == "HEAD"
        routed = {**scope, "method": "GET"} if head else scope
        answer = Answer(send, routed, request_id, note, self.audit_gate, head)
        try:
            await self.app(routed, budget.receive, answer.send)
        except ClientDisconnect:
            # The client went away mid-body: nothing to answer, and no error of ours.
            answer.status = CLIENT_CLOSED
        except asyncio.CancelledError:
            # uvicorn cancels what still runs when its shutdown grace ends. A 503 the client can
            # retry elsewhere, with the request id, rather than uvicorn's plain 500; the task
            # then ends as the shutdown wants, so the cancellation goes no further.
            if answer.answered:
                raise
            await _answer_problem(answer, _SHUTTING_DOWN, receive, {"Connection": "close"})
        except Exception as exc:
            # Answered here rather than by Starlette's outermost handler, so that the 500 carries
            # the request id like any other answer and the error is logged once, with it.
            log.error("unhandled %s", type(exc).__name__, exc_info=exc)
            if answer.answered:  # all that is left is to drop the connection
                raise
            problem = Problem(500, "internal", "Internal error", f"request {request_id} failed")
            await _answer_problem(answer, problem, receive)
        finally:
            if not answer.answered:
                await answer.unanswered()
            budget.release()
            elapsed = time.perf_counter() - started
            log_access(routed, scope["method"], answer.status, elapsed, request_id)
            request_id_var.reset(context_token)


_SHUTTING_DOWN = Problem(
    503,
    "shutting-down",
    "Shutting down",
    "the service stopped before this request finished; a write may or may not have been applied",
)


async def _answer_problem(
    answer: Answer, problem: Problem, receive: Receive, headers: dict[str, str] | None = None
) -> None:
    """Answer `problem` for a request whose route did not answer."""
    answer.note.problem = problem.slug
    await problem_response(problem, headers=headers)(answer.scope, receive, answer.send)
