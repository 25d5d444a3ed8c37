"""Vault's auth paths given durations and lists at their edges: an integer duration past what
a float holds, a comma-separated list of millions of items, a large body. Each is Vault's 400
(or the body's answer), never a 500, and none is worked through whole before it is refused."""

import asyncio
import json
import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, field_validator
from starlette.requests import Request

from app.http.vault import read_body
from app.ops.vault_fields import MAX_STRINGS
from app.ops.work import INLINE_BYTES

OUT_OF_RANGE = "Value error, a duration is from 0 to ten years"
# An integer of 310 digits: more than a float holds (float() of it overflowed: a 500).
HUGE = 10**309


@pytest.fixture
def vault(client: TestClient) -> TestClient:
    client.headers["X-Vault-Token"] = client.headers.pop("Authorization").removeprefix("Bearer ")
    return client


def errors_of(answer: Any) -> list[str]:
    assert answer.status_code == 400, answer.text
    return list(answer.json()["errors"])


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/auth/token/create", "ttl"),
        ("/v1/auth/token/create", "period"),
        ("/v1/auth/token/create", "explicit_max_ttl"),
        ("/v1/auth/token/roles/r", "period"),
        ("/v1/auth/token/roles/r", "explicit_max_ttl"),
        ("/v1/auth/token/roles/r", "token_period"),
        ("/v1/auth/token/renew-self", "increment"),
        ("/v1/auth/approle/role/ci", "token_ttl"),
        ("/v1/auth/approle/role/ci", "secret_id_ttl"),
        ("/v1/auth/approle/role/ci", "period"),
    ],
)
def test_an_integer_duration_past_a_float_is_out_of_range(
    vault: TestClient, path: str, field: str
) -> None:
    for value in (HUGE, -HUGE, 10**4000):
        answer = vault.post(path, json={field: value})
        assert errors_of(answer) == [f"body.{field}: {OUT_OF_RANGE}"]


def test_a_comma_separated_list_of_millions_is_refused_before_it_is_split(
    vault: TestClient,
) -> None:
    """30 MB of "a," took 1.5 s and 231 MB to split before the field's limit refused it."""
    long = "a," * 1_000_000
    refused = f"a comma-separated list holds at most {MAX_STRINGS} items"
    answer = vault.post("/v1/auth/token/create", json={"policies": long})
    assert errors_of(answer) == [f"body.policies: Value error, {refused}"]
    for field in ("token_bound_cidrs", "secret_id_bound_cidrs"):
        answer = vault.post("/v1/auth/approle/role/ci", json={field: long})
        assert errors_of(answer) == [f"body.{field}: Value error, {refused}"]


def test_a_comma_separated_list_over_the_limit_is_answered_as_before(vault: TestClient) -> None:
    answer = vault.post("/v1/auth/token/create", json={"policies": "a," * 100})
    assert errors_of(answer) == [
        "body.policies: List should have at most 64 items after validation, not 100"
    ]
    answer = vault.post("/v1/auth/approle/role/ci", json={"token_bound_cidrs": "10.0.0.1," * 65})
    assert errors_of(answer) == ["token_bound_cidrs: at most 64 CIDR blocks"]


class Probe(BaseModel):
    """A body that notes the thread that validates it."""

    model_config = ConfigDict(extra="ignore")

    data: str = ""

    @field_validator("data")
    @classmethod
    def _noted(cls, data: str) -> str:
        THREADS.append(threading.get_ident())
        return data


THREADS: list[int] = []


def test_a_large_vault_body_is_parsed_off_the_event_loop() -> None:
    """As `read_json` parses a native body: 32 MB of JSON takes the better part of a second."""

    async def read(size: int) -> tuple[str, int]:
        body = json.dumps({"data": "x" * size}).encode()
        sent = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            return sent.pop(0)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/x",
            "headers": [],
            "query_string": b"",
        }
        read = await read_body(Request(scope, receive), Probe)
        return read.data, threading.get_ident()

    THREADS.clear()
    small, loop = asyncio.run(read(100))
    large, _ = asyncio.run(read(INLINE_BYTES * 2))
    assert (len(small), len(large)) == (100, INLINE_BYTES * 2)
    assert THREADS[0] == loop  # a small body is parsed inline
    assert THREADS[1] != threading.get_ident()
