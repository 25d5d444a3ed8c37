"""The one ASGI middleware every request passes: request id, body limit, access log, metrics.

Written against raw ASGI rather than BaseHTTPMiddleware, which would cost a task and a copy per
request on the hot path.
"""

import os
import re
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.logs import access_writer, request_id_var
from app.metrics import request_metrics

_CLIENT_REQUEST_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,64}$")


class BodyTooLarge(Exception):
    """The request body is over CIPHERD_MAX_BODY_BYTES."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over this service's limit of {limit} bytes")
        self.limit = limit


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


class ObserveMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client_id = _header(scope, b"x-request-id")
        request_id = (
            client_id.decode()
            if client_id and _CLIENT_REQUEST_ID.fullmatch(client_id)
            else os.urandom(16).hex()
        )
        scope.setdefault("state", {})["request_id"] = request_id
        context_token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500
        limit = self.max_body_bytes

        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            receive = _refuse(limit)

        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tagging_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        try:
            await self.app(scope, counting_receive, tagging_send)
        finally:
            elapsed = time.perf_counter() - started
            route: Any = scope.get("route")
            path = getattr(route, "path", "unmatched")
            method = scope["method"]
            requests, seconds = request_metrics(path, method, status)
            requests.inc()
            seconds.observe(elapsed)
            access_writer.write(method, path, status, round(elapsed * 1000, 3), request_id)
            request_id_var.reset(context_token)


def _refuse(limit: int) -> Receive:
    async def receive() -> Message:
        raise BodyTooLarge(limit)

    return receive
