"""Vault's hash and random bytes, at Transit's paths (`transit/hash`, `transit/random`, added to
its router by `add_tools`) and at the system's (`sys/tools/hash`, `sys/tools/random`), for any
valid token: neither uses a key. Both take their algorithm, source or count in the body or the
path, as Vault does."""

import re

from fastapi import APIRouter, Request, Response

from app.http.body import JsonAnswer
from app.http.framework import route_path
from app.http.transit import transit_call
from app.http.vault import envelope, read_body, vault_body, vault_router
from app.ops.transit import crypto
from app.ops.vault_fields import VaultBody, VaultInt

SOURCES = ("platform", "seal", "all")
# A count in the path as Go's strconv.Atoi reads one: ASCII digits, a sign (not `int`'s `1_0`,
# spaces or other scripts' digits).
_ATOI = re.compile(r"[+-]?[0-9]{1,18}")


class TransitHashRequest(VaultBody):
    input: str | None = None
    algorithm: str | None = None
    format: str = "hex"


async def _hash(request: Request, algorithm: str | None) -> Response:
    await transit_call(request, "transit_hash", ())  # any valid token
    body = await read_body(request, TransitHashRequest)
    chosen = crypto.algorithm_of(algorithm or body.algorithm)
    # Transit's refuses a body without `input`; the system's hashes nothing, as Vault does.
    if body.input is None and not route_path(request.scope).startswith(router.prefix):
        raise crypto.user_error("input missing")
    data = crypto.decoded(body.input or "", "input")
    return JsonAnswer(envelope(request, {"sum": crypto.hash_sum(data, chosen, body.format)}))


async def hash_data(request: Request) -> Response:
    return await _hash(request, None)


async def hash_with(request: Request, algorithm: str) -> Response:
    return await _hash(request, algorithm)


class TransitRandomRequest(VaultBody):
    bytes: VaultInt = 32
    format: str = "base64"
    source: str = "platform"


async def _random(request: Request, source: str | None, count: str | None) -> Response:
    await transit_call(request, "random_random", ())  # any valid token
    body = await read_body(request, TransitRandomRequest)
    chosen = source or body.source
    if chosen not in SOURCES:
        raise crypto.user_error(f"unsupported entropy source {chosen}")
    if count is not None and not _ATOI.fullmatch(count):
        raise crypto.user_error(f"error parsing bytes from path: {count!r}")
    size = int(count) if count is not None else body.bytes
    data = {"random_bytes": crypto.random_bytes(size, body.format)}
    return JsonAnswer(envelope(request, data))


async def random(request: Request) -> Response:
    return await _random(request, None, None)


async def random_one(request: Request, part: str) -> Response:
    if part in SOURCES:
        return await _random(request, part, None)
    return await _random(request, None, part)


async def random_two(request: Request, source: str, count: str) -> Response:
    return await _random(request, source, count)


def add_tools(router: APIRouter, label: str) -> None:
    """Hash and random bytes at `router`'s prefix, their summaries naming `label`."""
    hashing, drawing = vault_body(TransitHashRequest), vault_body(TransitRandomRequest)
    for path, endpoint, summary, body in (
        ("/hash", hash_data, "A hash", hashing),
        ("/hash/{algorithm}", hash_with, "A hash named in the path", hashing),
        ("/random", random, "Random bytes", drawing),
        ("/random/{part}", random_one, "Random bytes: a source or a count in the path", drawing),
        (
            "/random/{source}/{count}",
            random_two,
            "Random bytes of a source, a count in the path",
            drawing,
        ),
    ):
        router.add_api_route(
            path, endpoint, methods=["POST"], summary=f"{summary} ({label})", openapi_extra=body
        )


router = vault_router("/v1/sys/tools", "sys-tools")
add_tools(router, "sys/tools")
