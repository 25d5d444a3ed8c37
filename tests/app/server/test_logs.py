"""The access line written by hand is the line the JSON formatter writes through `logging`."""

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from app.server.logs import access_writer, configure_logging, request_id_var

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
REQUESTS = [
    ("POST", "/v1/aez/{name}/encrypt", 200, 0.412),
    ("POST", "/v1/aez/{name}/encrypt", 200, 12.5),  # the same fields again, from the cache
    ("GET", "/healthz", 200, 0.05),
    ("PROPFIND", "unmatched", 405, 1.0),
    ("GET", '/a "quoted" \\ path é', 404, 0.001),
]


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """The one handler `configure_logging` installs, writing to a buffer (and, for the test,
    without the handlers pytest adds to the root logger while a test runs)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, access_writer.handler
    configure_logging("json", "info")
    (handler,) = root.handlers
    buffer = io.StringIO()
    handler.setStream(buffer)
    yield buffer
    root.handlers[:], root.level, access_writer.handler = saved


def _write_all(only_handler: bool) -> None:
    root = logging.getLogger()
    added = root.handlers[1:]  # pytest's, added after the fixture ran
    # Any second handler sends the line through `logging`, and so through JsonFormatter.
    root.handlers[1:] = [] if only_handler else [logging.NullHandler()]
    try:
        for method, route, status, duration in REQUESTS:
            access_writer.write(method, route, status, duration, "r-1")
    finally:
        root.handlers[1:] = added


def _taken(buffer: io.StringIO) -> list[dict]:
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    buffer.seek(0)
    buffer.truncate()
    return lines


def test_hand_built_line_is_the_formatters(stream: io.StringIO) -> None:
    token = request_id_var.set("r-1")
    try:
        _write_all(only_handler=True)  # built by hand
        by_hand = _taken(stream)
        _write_all(only_handler=False)
        formatted = _taken(stream)
    finally:
        request_id_var.reset(token)
    assert len(by_hand) == len(formatted) == len(REQUESTS)
    for hand, logged in zip(by_hand, formatted, strict=True):
        assert list(hand) == list(logged)  # same fields, same order
        assert {**hand, "time": None} == {**logged, "time": None}
        assert TIME.fullmatch(hand["time"]) and TIME.fullmatch(logged["time"])


def test_the_lines_of_one_turn_leave_in_one_write_at_its_end(stream: io.StringIO) -> None:
    writes: list[str] = []
    real_write = stream.write

    def noted(text: str) -> int:
        writes.append(text)
        return real_write(text)

    stream.write = noted  # type: ignore[method-assign]

    async def one_turn() -> str:
        _write_all(only_handler=True)
        waiting = stream.getvalue()
        await asyncio.sleep(0)
        return waiting

    assert asyncio.run(one_turn()) == ""  # nothing written during the turn
    assert len(writes) == 1
    lines = _taken(stream)
    assert [(line["method"], line["route"], line["status"]) for line in lines] == [
        (method, route, status) for method, route, status, _ in REQUESTS
    ]
