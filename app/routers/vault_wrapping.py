"""Vault's `sys/wrapping`: look up, unwrap and rewrap a wrapping token, and wrap data of the
caller's own (`app.ops.wrapping`; any answer is wrapped with `X-Vault-Wrap-TTL`,
`app.http.wrapping`).

The wrapping token is given in the body (`token`), the caller then authenticating with a token
of its own, or as the request's token itself. A wrapping token that is unknown, used or expired
counts, as a failed login does, toward the failed-authentication throttle of the client's
address.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel, ConfigDict, Field

from app.http.deps import audit_note, services
from app.http.identity import auth_refused
from app.http.vault import answer, caller, read_body, vault_body, vault_router, vault_token
from app.http.wrapping import answered_wrapped, wrap_ttl, wrapped_answer
from app.ops.errors import Problem, invalid_input
from app.ops.vault_fields import VaultBody, json_document
from app.ops.work import compute, in_thread
from app.ops.wrapping import is_wrapping_token

router = vault_router("/v1/sys/wrapping", "sys-wrapping")
T = TypeVar("T")


class WrappingToken(VaultBody):
    token: str = Field("", max_length=256, description="the wrapping token")


async def _using(request: Request, use: Callable[[str], T], token: str) -> T:
    """`use(token)` off the event loop; a token it refuses counts toward the throttle."""
    try:
        return await in_thread(use, token)
    except Problem as problem:
        raise auth_refused(request, problem) from None


async def _wrapping_token(request: Request, lookup: bool = False) -> str:
    """The wrapping token a request names: its body's `token` (the caller then needs a valid
    token of its own, but for a lookup), else the request's own token."""
    body = await read_body(request, WrappingToken)
    if body.token:
        if not lookup:
            await caller(request)
        return body.token
    own = vault_token(request.scope)
    if is_wrapping_token(own):
        return str(own)
    if lookup:
        raise invalid_input("missing token")
    raise auth_refused(request, invalid_input("wrapping token is not valid or does not exist"))


@router.post(
    "/lookup",
    summary="What a wrapping token wraps: its creation path, time and TTL (no token needed)",
    openapi_extra=vault_body(WrappingToken),
)
async def lookup(request: Request) -> Response:
    token = await _wrapping_token(request, lookup=True)
    data = await _using(request, services(request).wrapping.lookup, token)
    return await answer(request, data)


@router.post(
    "/unwrap",
    summary="The answer a wrapping token wraps, once: the token is spent",
    openapi_extra=vault_body(WrappingToken),
)
async def unwrap(request: Request) -> Response:
    token = await _wrapping_token(request)
    await services(request).audit.admit_change(audit_note(request.scope))  # the token is spent
    record, wrapped = await _using(request, services(request).wrapping.unwrap, token)
    audit_note(request.scope).details.update(
        wrapping_accessor=record.accessor, creation_path=record.creation_path
    )
    return Response(wrapped, media_type="application/json")


@router.post(
    "/rewrap",
    summary="The same answer behind a new wrapping token with the same TTL; the old is spent",
    openapi_extra=vault_body(WrappingToken),
)
async def rewrap(request: Request) -> Response:
    token = await _wrapping_token(request)
    await services(request).audit.admit_change(audit_note(request.scope))
    info = await _using(request, services(request).wrapping.rewrap, token)
    audit_note(request.scope).details["wrapping_accessor"] = info["accessor"]
    answered_wrapped(request)
    return wrapped_answer(info)


class WrapData(BaseModel):
    """Any JSON object: what the wrapping token will give back as `data`."""

    model_config = ConfigDict(extra="allow")


async def _object(request: Request) -> dict[str, Any]:
    """The body as a JSON object (`{}` if empty)."""
    body = await request.body()
    try:
        # Read as a document inside a request is: unwrapped, the data must be JSON again (no
        # `Infinity` from 1e400), and nesting past the parser's depth is a 400.
        parsed = await compute(len(body), json_document, body) if body.strip() else {}
    except ValueError:
        raise invalid_input("the body is not JSON") from None
    if not isinstance(parsed, dict):
        raise invalid_input("the body is a JSON object of the data to wrap")
    return parsed


@router.post(
    "/wrap",
    summary="Wrap the body's data (X-Vault-Wrap-TTL required)",
    openapi_extra=vault_body(WrapData),
)
async def wrap(request: Request) -> Response:
    await caller(request)
    if not wrap_ttl(request, services(request).wrapping):
        raise invalid_input("endpoint requires response wrapping to be used")
    return await answer(request, await _object(request))
