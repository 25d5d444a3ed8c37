"""The one ASGI middleware every request passes (`ObserveMiddleware`), made of named parts:

* `RequestIds`: the request's id, for its answer, its log lines and its audit record;
* `BodyBudget`: its body against the body limit and the worker's body memory (`BodyMemory`);
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
from app.http.framework import PATH_PARAMS, ROUTE, route_template
from app.http.operation import operation_id
from app.http.problems import BodyMemoryFull, BodyTooLarge, problem_response
from app.ops.audit import AuditNote, AuditRecord, AuditTrail
from app.ops.audit.record import audit_unavailable
from app.ops.auth import TOKEN_ID_PATTERN
from app.ops.errors import Problem
from app.server.logs import access_writer, request_id_var
from app.server.metrics import REFUSED, count_request

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


# A JSON body's share of the body memory budget per byte: parsed, it takes about ten times its
# size (docs/performance/choices.md); raw bytes go to the crypto as they are.
JSON_MEMORY_FACTOR = 8
# A JSON body's object members, counted by its colons (one inside a string counts too): each
# member a model refuses is an error of some 400 bytes, each it keeps a dictionary entry, and
# 2.5 million of them in 31 MB took a worker 1.4 GB. Requests hold far fewer: a batch of
# 10,000 items of a dozen fields, or of 10,000 Transit ciphertexts (two colons each).
MAX_JSON_MEMBERS = 250_000


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


class BodyBudget:
    """One request's body, counted as `receive` hands it over: against its limit (413), and
    against the worker's body memory (503), which holds the whole declared length before any
    of it is read, and what arrives beyond it as it arrives, until `release`.

    The limit is the JSON one unless the route says it reads raw bytes before it reads any
    (`allow_raw`; the budget is in `scope["state"]["body_budget"]`): a client's Content-Type
    alone must not lift it, or a route that parses its body could be made to parse up to the
    raw limit. Raw bytes go straight to the crypto; a JSON body is parsed first, and parsing a
    large one of many small values costs seconds and gigabytes.
    """

    __slots__ = (
        "_declared",
        "_held",
        "_members",
        "_memory",
        "_raw_limit",
        "_receive",
        "_received",
        "_restricted",
        "limit",
        "raw",
    )

    def __init__(
        self, scope: Scope, receive: Receive, memory: BodyMemory, json_limit: int, raw_limit: int
    ) -> None:
        self._receive = receive
        self._memory = memory
        self.limit = json_limit
        self._raw_limit = raw_limit
        self.raw = False
        self._restricted = False
        length = header(scope, b"content-length")  # the client's claim: 0 if not a number
        self._declared = int(length) if length is not None and length.isdigit() else 0
        self._received = 0
        self._members = 0
        self._held = 0

    def allow_raw(self) -> None:
        self.limit, self.raw = self._raw_limit, True

    def _too_large(self, limit: int) -> BodyTooLarge:
        return BodyTooLarge(limit, hint=not (self.raw or self._restricted))

    def restrict(self, limit: int) -> None:
        """Hold this request's body to `limit` bytes, before any of it is read."""
        self.limit, self._restricted = min(self.limit, limit), True

    async def receive(self) -> Message:
        limit = self.limit  # read now: the route may have allowed raw bytes
        if self._declared > limit:
            raise self._too_large(limit)
        factor = 1 if self.raw else JSON_MEMORY_FACTOR
        if self._declared * factor > self._held:  # the whole declared body, before any of it
            self._memory.take(self._declared * factor - self._held)
            self._held = self._declared * factor
        message = await self._receive()
        if message["type"] == "http.request":
            body = message.get("body", b"")
            self._received += len(body)
            if self._received > limit:
                raise self._too_large(limit)
            if not self.raw:
                self._members += body.count(b":")
                if self._members > MAX_JSON_MEMBERS:
                    raise BodyTooLarge(MAX_JSON_MEMBERS, hint=False, unit="JSON object members")
            if self._received * factor > self._held:  # a body longer than declared, or chunked
                self._memory.take(self._received * factor - self._held)
                self._held = self._received * factor
        return message

    def release(self) -> None:
        """Give the memory this body held back to the worker's, and let go of the server's
        `receive`: the server's connection holds the request's scope, which holds this budget,
        and a cycle left behind by every request would have the cyclic garbage collector run
        every few hundred requests."""
        self._memory.held -= self._held
        self._held = 0
        self._receive = _request_over


async def _request_over() -> Message:
    """`receive` once the request is over."""
    return {"type": "http.disconnect"}


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
            if note.change and status < 400:
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
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_body_bytes = max_json_body_bytes
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
            scope, receive, self.body_memory, self.max_json_body_bytes, self.max_body_bytes
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
