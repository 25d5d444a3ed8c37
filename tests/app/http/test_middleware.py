"""The parts of the observe middleware, each alone: the request id, the body budget, the audit
gate, the answer on its way out and the access log. (The whole middleware, in the app, is
tested through the app's answers in test_errors.py, test_stack.py and the audit's tests.)"""

import asyncio
import gc
import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from starlette.types import Message, Receive

from app.http.budget import JSON_MEMORY_FACTOR, BodyBudget, BodyMemory
from app.http.middleware import (
    MAX_RECORDED_NAME,
    Answer,
    AuditGate,
    ObserveMiddleware,
    RequestIds,
    log_access,
)
from app.http.problems import BodyMemoryFull, BodyTooLarge
from app.main import create_app
from app.ops.audit import AuditNote
from app.server.logs import access_writer, configure_logging
from app.settings import Settings

# The request id ------------------------------------------------------------------------------


@pytest.mark.parametrize("client_id", ["a", "0123-abcd_EF.gh:ij", "x" * 64])
def test_a_client_request_id_a_log_can_carry_is_kept(client_id: str) -> None:
    scope = {"headers": [(b"x-request-id", client_id.encode())]}
    assert RequestIds().of(scope) == client_id


@pytest.mark.parametrize("client_id", [b"", b"x" * 65, b"a b", b"a\nb", b'a"b', "é".encode()])
def test_any_other_gets_a_new_id(client_id: bytes) -> None:
    ids = RequestIds()
    new = ids.of({"headers": [(b"x-request-id", client_id)]})
    assert re.fullmatch(r"[0-9a-f]{32}", new)


def test_new_ids_are_a_per_instance_prefix_and_a_count() -> None:
    first, second = RequestIds(), RequestIds()
    ids = [first.of({"headers": []}) for _ in range(3)]
    assert len({rid[:16] for rid in ids}) == 1
    assert [int(rid[16:], 16) for rid in ids] == [1, 2, 3]
    assert second.of({"headers": []})[:16] != ids[0][:16]


# The body budget -----------------------------------------------------------------------------

JSON_LIMIT, RAW_LIMIT = 100, 1000


def _messages(*bodies: bytes) -> tuple[Receive, list[int]]:
    """A `receive` handing over `bodies` as one request's body, and the count of its calls."""
    calls: list[int] = []

    async def receive() -> Message:
        calls.append(1)
        index = len(calls) - 1
        if index >= len(bodies):
            return {"type": "http.disconnect"}
        more = index < len(bodies) - 1
        return {"type": "http.request", "body": bodies[index], "more_body": more}

    return receive, calls


def _declaring(length: int) -> dict[str, Any]:
    """A request's scope with a Content-Length of `length` (none for 0: a chunked body)."""
    return {"headers": [(b"content-length", str(length).encode())] if length else []}


def _read_all(budget: BodyBudget) -> bytes:
    async def read() -> bytes:
        data = b""
        while True:
            message = await budget.receive()
            data += message.get("body", b"")
            if not message.get("more_body"):
                return data

    return asyncio.run(read())


def test_a_json_body_holds_its_parsed_share_of_the_memory_until_released() -> None:
    memory = BodyMemory(10_000)
    receive, _ = _messages(b"x" * 30, b"y" * 30)
    budget = BodyBudget(_declaring(60), receive, memory, JSON_LIMIT, RAW_LIMIT)
    assert _read_all(budget) == b"x" * 30 + b"y" * 30
    assert memory.held == 60 * JSON_MEMORY_FACTOR
    budget.release()
    assert memory.held == 0


def test_a_declared_length_over_the_limit_is_refused_before_any_byte_is_read() -> None:
    receive, calls = _messages(b"x" * 101)
    budget = BodyBudget(_declaring(101), receive, BodyMemory(10_000), JSON_LIMIT, RAW_LIMIT)
    with pytest.raises(BodyTooLarge) as refused:
        _read_all(budget)
    assert calls == []
    assert refused.value.status_code == 413 and refused.value.limit == JSON_LIMIT
    assert "larger raw bodies" in str(refused.value.detail)


def test_a_body_longer_than_declared_is_refused_as_it_arrives() -> None:
    memory = BodyMemory(10_000)
    receive, calls = _messages(b"x" * 60, b"y" * 60, b"z")
    budget = BodyBudget(_declaring(0), receive, memory, JSON_LIMIT, RAW_LIMIT)
    with pytest.raises(BodyTooLarge):
        _read_all(budget)
    assert len(calls) == 2  # the chunk that crossed the limit, and no further
    budget.release()
    assert memory.held == 0


def test_a_route_that_reads_raw_bytes_lifts_the_limit_and_the_memory_share() -> None:
    memory = BodyMemory(10_000)
    receive, _ = _messages(b"r" * 500)
    budget = BodyBudget(_declaring(500), receive, memory, JSON_LIMIT, RAW_LIMIT)
    budget.allow_raw()
    assert (budget.limit, budget.raw) == (RAW_LIMIT, True)
    assert _read_all(budget) == b"r" * 500
    assert memory.held == 500
    over = BodyBudget(_declaring(1001), _messages(b"r" * 1001)[0], memory, JSON_LIMIT, RAW_LIMIT)
    over.allow_raw()
    with pytest.raises(BodyTooLarge) as refused:
        _read_all(over)
    assert refused.value.limit == RAW_LIMIT and "raw" not in str(refused.value.detail)


def test_bodies_past_the_workers_memory_are_refused_until_memory_is_released() -> None:
    memory = BodyMemory(1000)
    first = BodyBudget(_declaring(800), _messages(b"r" * 800)[0], memory, JSON_LIMIT, RAW_LIMIT)
    first.allow_raw()
    _read_all(first)
    refused_before = REGISTRY.get_sample_value("cipherd_refused_total", {"reason": "body-memory"})
    receive, calls = _messages(b"x" * 30)
    second = BodyBudget(_declaring(30), receive, memory, JSON_LIMIT, RAW_LIMIT)  # 240 of memory
    with pytest.raises(BodyMemoryFull) as full:
        _read_all(second)
    assert full.value.status_code == 503 and calls == []
    assert memory.held == 800
    refused = REGISTRY.get_sample_value("cipherd_refused_total", {"reason": "body-memory"})
    assert refused == (refused_before or 0) + 1
    first.release()
    again = BodyBudget(_declaring(30), _messages(b"x" * 30)[0], memory, JSON_LIMIT, RAW_LIMIT)
    assert _read_all(again) == b"x" * 30


@pytest.mark.parametrize(
    ("value", "length"), [(b"42", 42), (b"0", 0), (None, 0), (b"-1", 0), (b"4 2", 0), (b"", 0)]
)
def test_the_declared_length_is_content_length_when_it_is_a_number(
    value: bytes | None, length: int
) -> None:
    """What the memory holds before any byte is read: the declared length (raw bytes count
    once), none for a Content-Length that is not a number."""
    memory = BodyMemory(10_000)
    headers = [] if value is None else [(b"content-length", value)]
    receive, _ = _messages(b"")
    budget = BodyBudget({"headers": headers}, receive, memory, JSON_LIMIT, RAW_LIMIT)
    budget.allow_raw()
    _read_all(budget)
    assert memory.held == length


# The audit gate ------------------------------------------------------------------------------


@pytest.fixture
def writable(settings: Settings) -> Iterator[TestClient]:
    """A service whose audit trail takes records."""
    headers = {"Authorization": f"Bearer {settings.admin_token}"}
    with TestClient(create_app(settings), headers=headers) as client:
        yield client


@pytest.fixture
def unwritable(settings: Settings) -> Iterator[TestClient]:
    """A service whose audit trail refuses every record (its file is on a full disk)."""
    full = settings.model_copy(update={"audit_file": Path("/dev/full")})
    with TestClient(create_app(full)) as client:
        yield client


def _trail(client: TestClient) -> Any:
    return client.app.state.services.audit  # type: ignore[attr-defined]


def _gate(client: TestClient) -> AuditGate:
    return AuditGate(_trail(client))


def _route(app: Any, path: str, method: str) -> APIRoute:
    (route,) = [
        r for r in app.routes if isinstance(r, APIRoute) and r.path == path and method in r.methods
    ]
    return route


def _scope(app: Any, path: str, method: str, **params: str) -> dict[str, Any]:
    route = _route(app, path, method)
    return {"type": "http", "route": route, "path_params": params, "client": ("10.0.0.7", 5000)}


def test_a_record_says_who_did_what_to_which_key(writable: TestClient) -> None:
    note = AuditNote(principal="admin", key_version=3, problem="key-not-found")
    note.details["extra"] = 1
    scope = _scope(writable.app, "/v1/keys/{name}", "GET", name="orders")
    record = AuditGate.record(scope, note, "r-1", 1700000000.5, 404)
    assert record is not None
    assert (record.operation, record.key, record.key_version) == ("keys_get_key", "orders", 3)
    assert (record.client, record.principal, record.request_id) == ("10.0.0.7", "admin", "r-1")
    assert (record.status, record.problem, record.time) == (404, "key-not-found", 1700000000.5)
    assert record.details == {"extra": 1} and not record.change


def test_a_name_from_the_path_is_cut_and_escaped_for_its_record(writable: TestClient) -> None:
    name = "a\x00b" + "c" * 300
    scope = _scope(writable.app, "/v1/keys/{name}", "GET", name=name)
    record = AuditGate.record(scope, AuditNote(), "r-1", 0.0, 422)
    assert record is not None and record.key is not None
    assert record.key.startswith("a\\x00b") and len(record.key) == MAX_RECORDED_NAME + 3
    # A token id is kept; anything else a refused request put there (a token itself, sent in
    # place of its id, is a secret) is not.
    for sent, kept in (
        ("0123456789abcdef", "0123456789abcdef"),
        ("cdt_FAKESECRETFAKESECRETFAKESECRETFAKESECRET", "(not a token id)"),
        ("t\x01", "(not a token id)"),
    ):
        token = _scope(writable.app, "/v1/tokens/{token_id}", "DELETE", token_id=sent)
        record = AuditGate.record(token, AuditNote(), "r-2", 0.0, 404)
        assert record is not None and record.details == {"token": kept} and record.key is None


def test_what_is_not_under_v1_or_not_routed_has_no_record(writable: TestClient) -> None:
    health = _scope(writable.app, "/healthz", "GET")
    assert AuditGate.record(health, AuditNote(), "r-1", 0.0, 200) is None
    assert AuditGate.record({"type": "http"}, AuditNote(), "r-1", 0.0, 404) is None


def test_a_written_record_lets_the_answer_go(writable: TestClient) -> None:
    scope = _scope(writable.app, "/v1/keys/{name}", "GET", name="gated")
    gate = _gate(writable)
    assert asyncio.run(gate.admit(scope, AuditNote(), "gate-admits", 0.0, 200)) is None
    _trail(writable).flush()
    records = writable.get("/v1/audit", params={"key": "gated"}).json()["records"]
    assert [(r["request_id"], r["status"]) for r in records] == [("gate-admits", 200)]


def test_an_answer_whose_record_cannot_be_written_is_replaced(unwritable: TestClient) -> None:
    scope = _scope(unwritable.app, "/v1/keys/{name}", "GET", name="k")
    gate = _gate(unwritable)
    problem = asyncio.run(gate.admit(scope, AuditNote(), "r-1", 0.0, 200))
    assert problem is not None and (problem.status, problem.slug) == (503, "audit-unavailable")
    # A 503 says already that nothing was done: it goes as it is.
    assert asyncio.run(gate.admit(scope, AuditNote(), "r-1", 0.0, 503)) is None
    # Nothing to answer: the failure stops here.
    asyncio.run(gate.unanswered(scope, AuditNote(), "r-1", 0.0, 499))


def test_an_unanswered_request_gets_its_record(writable: TestClient) -> None:
    scope = _scope(writable.app, "/v1/keys/{name}", "GET", name="left")
    asyncio.run(_gate(writable).unanswered(scope, AuditNote(), "gone", 0.0, 499))
    _trail(writable).flush()
    records = writable.get("/v1/audit", params={"key": "left"}).json()["records"]
    assert [(r["request_id"], r["status"]) for r in records] == [("gone", 499)]


# The answer ----------------------------------------------------------------------------------


def _answered(
    messages: list[Message], gate: AuditGate | None = None, head: bool = False, **scope: Any
) -> tuple[Answer, list[Message]]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    answer = Answer(send, {"type": "http", **scope}, "r-7", AuditNote(), gate, head)

    async def run() -> None:
        for message in messages:
            await answer.send(message)

    asyncio.run(run())
    return answer, sent


START = {"type": "http.response.start", "status": 201, "headers": [(b"x-own", b"1")]}
BODY = {"type": "http.response.body", "body": b"{}"}


def test_every_answer_gets_its_request_id_and_no_store() -> None:
    answer, sent = _answered([dict(START), dict(BODY)])
    assert sent[0]["headers"] == [
        (b"x-own", b"1"),
        (b"x-request-id", b"r-7"),
        (b"cache-control", b"no-store"),
    ]
    assert sent[1] == BODY
    assert (answer.status, answer.answered) == (201, True)


def test_a_routes_own_cache_control_is_kept() -> None:
    start = {**START, "headers": [(b"Cache-Control", b"max-age=60")]}
    _, sent = _answered([start])
    assert sent[0]["headers"] == [(b"Cache-Control", b"max-age=60"), (b"x-request-id", b"r-7")]


def test_a_head_request_gets_the_head_without_the_body() -> None:
    _, sent = _answered([dict(START), dict(BODY)], head=True)
    assert sent[0]["status"] == 201 and sent[1] == {**BODY, "body": b""}


def test_an_answer_the_gate_refuses_goes_out_as_the_gates_problem(unwritable: TestClient) -> None:
    scope = _scope(unwritable.app, "/v1/keys/{name}", "GET", name="k")
    answer, sent = _answered([dict(START), dict(BODY)], gate=_gate(unwritable), **scope)
    assert (answer.status, answer.answered) == (503, True)
    start, body = sent  # the route's body never leaves
    assert start["status"] == 503
    assert (b"x-request-id", b"r-7") in start["headers"]
    assert json.loads(body["body"])["type"] == "urn:cipherd:problem:audit-unavailable"


def test_an_answer_nobody_records_is_not_held(unwritable: TestClient) -> None:
    health = _scope(unwritable.app, "/healthz", "GET")
    answer, sent = _answered([dict(START), dict(BODY)], gate=_gate(unwritable), **health)
    assert answer.status == 201 and sent[1] == BODY


# The access log ------------------------------------------------------------------------------


@pytest.fixture
def access_lines() -> Iterator[io.StringIO]:
    """What the access writer writes, as the service configures it (tests/app/server/test_logs.py
    has the writer's own tests)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, access_writer.handler
    configure_logging("json", "info")
    (handler,) = root.handlers
    buffer = io.StringIO()
    handler.setStream(buffer)
    yield buffer
    root.handlers[:], root.level, access_writer.handler = saved


def _requests(route: str, method: str, status: int) -> float:
    labels = {"route": route, "method": method, "status": str(status)}
    return REGISTRY.get_sample_value("cipherd_http_requests_total", labels) or 0.0


@pytest.mark.parametrize(
    ("scope", "method", "route", "label"),
    [
        ({"route": APIRoute("/v1/keys/{name}", lambda: None)}, "GET", "/v1/keys/{name}", "GET"),
        ({"endpoint": object(), "path": "/openapi.json"}, "HEAD", "/openapi.json", "HEAD"),
        ({"endpoint": 1, "path": "/x/1", "path_params": {"n": "1"}}, "GET", "unmatched", "GET"),
        ({}, "PROPFIND", "unmatched", "other"),
    ],
)
def test_each_request_has_an_access_line_and_a_count_under_its_routes_template(
    access_lines: io.StringIO, scope: dict[str, Any], method: str, route: str, label: str
) -> None:
    before = _requests(route, label, 404)
    root = logging.getLogger()
    added, root.handlers[1:] = root.handlers[1:], []  # pytest's, added after the fixture ran
    try:
        log_access(scope, method, 404, 0.0123456, "r-9")
    finally:
        root.handlers[1:] = added
    (line,) = [json.loads(text) for text in access_lines.getvalue().splitlines()]
    assert (line["method"], line["route"], line["status"]) == (method, route, 404)
    assert (line["request_id"], line["duration_ms"]) == ("r-9", 12.346)
    assert _requests(route, label, 404) == before + 1


# The whole middleware ------------------------------------------------------------------------


def test_a_finished_request_leaves_no_reference_cycle() -> None:
    """Garbage only the cyclic collector frees would make it run every few hundred requests,
    a cost on the hot path: a request's objects go when it ends. The server's `receive` is a
    method of an object that holds the request's scope, as uvicorn's is."""

    class Connection:
        def __init__(self, scope: dict[str, Any]) -> None:
            self.scope = scope
            self.sent: list[Message] = []

        async def receive(self) -> Message:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(self, message: Message) -> None:
            self.sent.append(message)

    async def app(scope: dict[str, Any], receive: Receive, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    middleware = ObserveMiddleware(
        app, max_body_bytes=100, max_json_body_bytes=100, body_memory=800
    )
    headers = [(b"content-length", b"2")]

    async def requests(count: int) -> int:
        """The objects of cycles `count` requests left behind."""
        gc.collect()
        gc.disable()
        try:
            for _ in range(count):
                scope = {"type": "http", "method": "POST", "path": "/x", "headers": headers}
                connection = Connection(scope)
                await middleware(scope, connection.receive, connection.send)
                assert len(connection.sent) == 2
            return gc.collect()
        finally:
            gc.enable()

    assert asyncio.run(requests(10)) == 0
