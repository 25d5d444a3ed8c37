"""Response wrapping over HTTP: a request with an `X-Vault-Wrap-TTL` header whose route is one
of Vault's gets, instead of its answer, Vault's envelope with only a `wrap_info`: the answer is
kept in the store behind a single-use wrapping token (`app.ops.wrapping`), which
`sys/wrapping/unwrap` redeems.

`ResponseWrapper` sits before the router (`app.http.stack`), so it serves every Vault route
alike. It reads the header first (a bad or too long TTL is refused before any work), holds the
route's answer back, and wraps it when the route was a Vault route and answered 200 with a body;
anything else (an error, a 204, a native route's answer) goes out as it came. A route that
answers a wrap itself (`sys/wrapping/rewrap`) says so with `answered_wrapped`.
"""

import json
from collections.abc import Callable
from typing import Any

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.body import JsonAnswer, header
from app.http.deps import audit_note
from app.http.framework import ROUTE, route_path
from app.http.vault import VaultRoute
from app.ops import Services
from app.ops.work import in_thread
from app.ops.wrapping import ResponseWrapping

WRAP_TTL = b"x-vault-wrap-ttl"
_ANSWERED_WRAPPED = "answered_wrapped"


def wrap_ttl(request: Request, wrapping: ResponseWrapping) -> int:
    """The TTL the request's `X-Vault-Wrap-TTL` asks for; 0 without one."""
    value = header(request.scope, WRAP_TTL)
    return 0 if value is None else wrapping.ttl(value.decode("latin-1"))


def answered_wrapped(request: Request) -> None:
    """Say that the route's answer is a wrap already, not to be wrapped again."""
    request.scope.setdefault("state", {})[_ANSWERED_WRAPPED] = True


def wrapped_answer(info: dict[str, Any]) -> JsonAnswer:
    """Vault's envelope of a wrapped answer: only its `wrap_info`."""
    return JsonAnswer(
        {
            "request_id": "",
            "lease_id": "",
            "renewable": False,
            "lease_duration": 0,
            "data": None,
            "wrap_info": info,
            "warnings": None,
            "auth": None,
        }
    )


def _wrapped_accessor(answer: dict[str, Any]) -> str:
    """The accessor of what the answer hands out, for `wrap_info` as Vault gives it: a login's
    token, or an AppRole secret id."""
    auth, data = answer.get("auth"), answer.get("data")
    if isinstance(auth, dict) and isinstance(auth.get("accessor"), str):
        return str(auth["accessor"])
    if isinstance(data, dict) and isinstance(data.get("secret_id_accessor"), str):
        return str(data["secret_id_accessor"])
    return ""


class ResponseWrapper:
    """Wraps the answers of Vault routes to requests that ask for it (module docstring)."""

    def __init__(self, app: ASGIApp, services: Callable[[], Services]) -> None:
        self.app = app
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or header(scope, WRAP_TTL) is None:
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        services = self._services()
        wrapping = services.wrapping
        ttl = wrapping.ttl((header(scope, WRAP_TTL) or b"").decode("latin-1"))
        if not ttl or not path.startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, hold)
        start = held[0] if held and held[0]["type"] == "http.response.start" else None
        if (
            start is None
            or start["status"] != 200
            or not isinstance(scope.get(ROUTE), VaultRoute)
            or scope.get("state", {}).get(_ANSWERED_WRAPPED)
        ):
            for message in held:
                await send(message)
            return
        body = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
        answer = json.loads(body) if len(body) <= wrapping.max_bytes else {}
        note = audit_note(scope)
        if not note.change:  # a read's answer: keeping it is a change of its own
            await services.audit.admit_change(note)
        info = await in_thread(
            wrapping.wrap, body, path.removeprefix("/v1/"), ttl, _wrapped_accessor(answer)
        )
        note.details["wrapping_accessor"] = info["accessor"]
        await wrapped_answer(info)(scope, receive, send)
