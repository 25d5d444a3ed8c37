"""Every Wycheproof case of the OpenSSL signing types through the service: `POST /v1/verify`
with the case's key (SubjectPublicKeyInfo or the raw form), type and options gives the expected
verdict (either, where Wycheproof finds the case acceptable); ML-DSA's seeds brought in as BYOK
give FIPS 204's public keys, and the signatures of the sign files verify with the stored key."""

import asyncio
import base64
import json

from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Message

from tests.app.routers.encryption import byok
from tests.core.sign.wycheproof import (
    ML_DSA_SEEDS,
    ML_DSA_SIGNED,
    OPENSSL_CASES,
    Case,
    agrees,
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def post(app: ASGIApp, path: str, authorization: str, body: bytes) -> tuple[int, bytes]:
    """`POST path` with an Authorization header and a JSON body, handed to the app as an ASGI
    server hands it a request; its status and body."""
    headers = [
        (b"host", b"testserver"),
        (b"authorization", authorization.encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    unread = [{"type": "http.request", "body": body, "more_body": False}]
    answered = asyncio.Event()
    status = 0
    parts = []

    async def receive() -> Message:
        if unread:
            return unread.pop()
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    await app(scope, receive, send)
    assert answered.is_set(), path
    return status, b"".join(parts)


def test_every_case_through_post_verify(client: TestClient) -> None:
    """Each case is its own `POST /v1/verify` through the whole app (middleware, token check,
    validation, answer), handed to the app on its own event loop: through the test client,
    whose every request crosses threads several times, the 8,841 requests cost three times
    as long. The first case of each type also goes through the test client, for the same
    verdict."""

    def body(case: Case) -> dict[str, object]:
        return {
            "type": case.key_type,
            "public_key": b64(case.public_key),
            "message": b64(case.message),
            "signature": b64(case.signature),
            **case.options,
        }

    authorization = client.headers["authorization"]

    async def answers() -> list[tuple[int, bytes]]:
        return [
            await post(client.app, "/v1/verify", authorization, json.dumps(body(case)).encode())
            for case in OPENSSL_CASES
        ]

    assert client.portal is not None  # the client is open: the app runs on the portal's loop
    wrong = []
    firsts = set()
    for case, (status, text) in zip(OPENSSL_CASES, client.portal.call(answers), strict=True):
        assert status == 200, (case.id, text)
        verdict = json.loads(text)
        if not agrees(verdict["valid"], case):
            wrong.append(case.id)
        if case.key_type not in firsts:
            firsts.add(case.key_type)
            assert client.post("/v1/verify", json=body(case)).json() == verdict, case.id
    assert wrong == []
    assert len(firsts) == 9
    assert len(OPENSSL_CASES) == 4608 + 2330 + 788 + 15 + 610 + 490


def test_ml_dsa_seeds_and_their_signatures_with_stored_keys(client: TestClient) -> None:
    names = {}
    for index, seed in enumerate(ML_DSA_SEEDS):
        name = f"seed-{index}"
        answer = byok(client, name, seed.key_type, seed.seed)
        if seed.public_key is None:
            assert answer.status_code == 422, seed.id
            continue
        assert answer.status_code == 201, (seed.id, answer.text)
        public = client.get(f"/v1/keys/{name}/public").json()["public_key"]
        assert base64.b64decode(public) == seed.public_key, seed.id
        names[seed.public_key] = name
    checked = 0
    for case in ML_DSA_SIGNED:
        check = {"message": b64(case.message), "signature": b64(case.signature), **case.options}
        answer = client.post(f"/v1/verify/{names[case.public_key]}", json=check)
        assert answer.json() == {"valid": True}, case.id
        checked += 1
    assert checked == 490 and len(names) == 97
