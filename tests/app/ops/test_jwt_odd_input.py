"""JWT logins and JWT mount configurations given odd input: token headers that are JSON but not
an object, issuers whose documents are deeply nested or come a byte at a time, and issuer URLs
holding a password or an access token, which no answer nor audit record may show."""

import base64
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from fastapi.testclient import TestClient
from joserfc import jws, jwt

from app.ops import jwks
from app.ops.jwks import IssuerKeys, IssuerUnreachable, Source, fetch_json, shown_url
from app.ops.jwt_auth import config_of, verify
from app.settings import Settings
from tests.app.ops.test_jwt_auth import ROLE, good, refusal
from tests.e2e.issuer import Issuer, new_key, public_pem
from tests.e2e.server import free_port, http_server

PASSWORD = "pw-" + "s3cret" * 3
ACCESS_TOKEN = "at-" + "t0ken" * 3
# A handler writes the answer to a GET of a path: it is given the path and the socket's file.
Answer = Callable[[str, Any], None]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def json_answer(document: Any) -> Answer:
    return raw_answer(json.dumps(document).encode())


def raw_answer(body: bytes) -> Answer:
    def write(path: str, out: Any) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        out.write(b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)

    return write


@dataclass
class Served:
    """A server on 127.0.0.1: its base URL, the answer it gives (which a test may change), the
    paths asked for, and an event set when it stops."""

    url: str
    answer: Answer
    paths: list[str] = field(default_factory=list)
    stopped: threading.Event = field(default_factory=threading.Event)


@contextmanager
def serving(answer: Answer) -> Iterator[Served]:
    """A server answering every GET with `served.answer`."""
    port = free_port()
    served = Served(f"http://127.0.0.1:{port}", answer)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.paths.append(self.path)
            with suppress(BrokenPipeError, ConnectionResetError):
                served.answer(self.path, self.wfile)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    with http_server(port, Handler):
        try:
            yield served
        finally:
            served.stopped.set()  # before the shutdown, which waits for a dripping answer


def dripping(stopped: threading.Event, in_headers: bool) -> Answer:
    """An answer that comes a byte every 0.1 s (in its headers, or in its body) until the
    server stops: each read gets a byte well within the per-read timeout."""

    def write(path: str, out: Any) -> None:
        out.write(b"HTTP/1.1 200 OK\r\n")
        if not in_headers:
            out.write(b'Content-Length: 100000\r\n\r\n{"keys": [')
        out.flush()
        while not stopped.wait(0.1):
            out.write(b"X" if in_headers else b" ")
            out.flush()

    return write


def unsigned(header: bytes) -> str:
    return f"{b64(header)}.e30.eA"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"jwks_min_refetch_seconds": 0.1})


def mounted(client: TestClient) -> None:
    assert client.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204


def configured(client: TestClient, config: dict[str, Any]) -> None:
    """auth/jwt configured with `config`, and its role `r`."""
    answer = client.post("/v1/auth/jwt/config", json=config)
    assert answer.status_code == 204, answer.text
    role = {"role_type": "jwt", "user_claim": "sub", "bound_audiences": ["cipherd"]}
    assert client.post("/v1/auth/jwt/role/r", json=role).status_code == 204


def test_a_header_that_is_json_but_not_an_object_is_refused(
    client: TestClient, anonymous: TestClient
) -> None:
    key = new_key()
    mounted(client)
    configured(client, {"jwt_validation_pubkeys": [public_pem(key)]})
    config = config_of({"jwt_validation_pubkeys": [public_pem(key)]}, IssuerKeys(1))
    for header in (b'["alg"]', b'"alg"', b"[]", b"true", b"1.5"):
        token = unsigned(header)
        assert "compact" in refusal(partial(verify, token, config, ROLE, IssuerKeys(1), 0))
        answer = anonymous.post("/v1/auth/jwt/login", json={"role": "r", "jwt": token})
        assert answer.status_code == 400, answer.text
        assert "compact JWS" in answer.text
    # A crit header that is not a list of names, under a key the mount holds.
    for crit in (5, [1], [[]], "b64", {}):
        token = unsigned(json.dumps({"alg": "RS256", "kid": key.kid, "crit": crit}).encode())
        answer = anonymous.post("/v1/auth/jwt/login", json={"role": "r", "jwt": token})
        assert answer.status_code == 400 and "crit" in answer.text, answer.text


def test_claims_json_does_not_have_are_refused(client: TestClient, anonymous: TestClient) -> None:
    """NaN, an infinity (`1e400` reads as one) and a lone surrogate, which Python's JSON reader
    takes: the token is refused, rather than a user "nan" or a login that stores a token no
    answer can show (a 500 then on every listing of tokens)."""
    issuer = Issuer("https://issuer.example")
    key = issuer.rotate()
    config = config_of({"jwt_validation_pubkeys": [public_pem(key)]}, IssuerKeys(1))
    mounted(client)
    configured(client, {"jwt_validation_pubkeys": [public_pem(key)]})
    claims = json.dumps(good(issuer, aud="cipherd"))
    for odd in ('"exp": NaN', '"exp": Infinity', '"nbf": 1e400', '"sub": NaN', '"sub": "\\ud800"'):
        payload = (claims[:-1] + ", " + odd + "}").encode()  # the last of a name counts
        token = jws.serialize_compact({"alg": "RS256", "kid": key.kid}, payload, key)
        detail = refusal(partial(verify, token, config, ROLE, IssuerKeys(1), time.time()))
        assert "claims are not a JSON object" in detail, odd
        answer = anonymous.post("/v1/auth/jwt/login", json={"role": "r", "jwt": token})
        assert answer.status_code == 400, (odd, answer.text)
    assert client.get("/v1/tokens").status_code == 200
    huge = jwt.encode({"alg": "RS256"}, good(issuer, exp=10**400), key)
    assert verify(huge, config, ROLE, IssuerKeys(1), time.time()).user


def test_a_deeply_nested_document_is_not_a_json_document(client: TestClient) -> None:
    mounted(client)
    with serving(raw_answer(b"[" * 100_000)) as served:
        with pytest.raises(IssuerUnreachable) as caught:
            fetch_json(f"{served.url}/keys", "")
        assert "not a JSON document" in caught.value.detail
        for field_name in ("jwks_url", "oidc_discovery_url"):
            answer = client.post("/v1/auth/jwt/config", json={field_name: served.url})
            assert answer.status_code == 400 and "not a JSON document" in answer.text


def test_urls_httpx_cannot_parse_are_an_unreachable_issuer(client: TestClient) -> None:
    for url in ("http://host:port/keys", "http://h/\x00"):
        with pytest.raises(IssuerUnreachable):
            fetch_json(url, "")
    mounted(client)
    answer = client.post("/v1/auth/jwt/config", json={"jwks_url": "http://host:port/keys"})
    assert answer.status_code == 400 and "InvalidURL" in answer.text, answer.text
    # A discovery document's jwks_uri is the issuer's to name.
    with serving(json_answer({})) as served:
        served.answer = json_answer({"issuer": served.url, "jwks_uri": "http://h:x/"})
        with pytest.raises(IssuerUnreachable) as caught:
            IssuerKeys(1).load(Source(served.url, discovery=True))
    assert "InvalidURL" in caught.value.detail


@pytest.mark.parametrize("in_headers", [False, True], ids=["body", "headers"])
def test_an_issuer_answering_a_byte_at_a_time_meets_a_deadline(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, in_headers: bool
) -> None:
    monkeypatch.setattr(jwks, "FETCH_DEADLINE_SECONDS", 1.0)
    mounted(client)
    with serving(json_answer({})) as served:
        served.answer = dripping(served.stopped, in_headers)
        started = time.monotonic()
        with pytest.raises(IssuerUnreachable) as caught:
            fetch_json(f"{served.url}/keys", "")
        assert "within 1 s" in caught.value.detail
        assert time.monotonic() - started < 3
        started = time.monotonic()
        answer = client.post("/v1/auth/jwt/config", json={"jwks_url": f"{served.url}/keys"})
        assert answer.status_code == 400 and "within 1 s" in answer.text, answer.text
        assert time.monotonic() - started < 3


def test_a_login_refetching_keys_from_a_dripping_issuer_meets_the_deadline(
    client: TestClient, anonymous: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jwks, "FETCH_DEADLINE_SECONDS", 1.0)
    issuer = Issuer("https://issuer.example")
    issuer.rotate()
    with serving(json_answer(issuer.jwks())) as served:
        mounted(client)
        configured(client, {"jwks_url": f"{served.url}/keys"})
        assert served.paths == ["/keys"]
        served.answer = dripping(served.stopped, in_headers=False)
        time.sleep(0.2)  # past the mount's shortest time between fetches
        token = issuer.sign(good(issuer), key=new_key())  # a kid the cached keys lack
        started = time.monotonic()
        answer = anonymous.post("/v1/auth/jwt/login", json={"role": "r", "jwt": token})
        elapsed = time.monotonic() - started
        assert served.paths == ["/keys", "/keys"]
    assert answer.status_code == 400 and "within 1 s" in answer.text, answer.text
    assert elapsed < 3


def test_shown_urls_hold_no_userinfo_query_or_fragment() -> None:
    secret = f"svc:{PASSWORD}@h:8443/jwks.json?access_token={ACCESS_TOKEN}#x"
    for url, shown in (
        (f"http://{secret}", "http://h:8443/jwks.json"),
        ("https://issuer.example/keys", "https://issuer.example/keys"),
        (f"https://{PASSWORD}@issuer.example", "https://issuer.example"),
        (f"http://svc:pa/{PASSWORD}@h/keys", "http://(hidden)"),
        (f"http://svc:pa?{PASSWORD}@h/keys", "http://(hidden)"),
        (f"svc:{PASSWORD}@h/keys", "svc:(no host)"),
        (f"http://[{PASSWORD}/keys", "(an invalid URL)"),
    ):
        assert shown_url(url) == shown


def test_no_answer_nor_audit_record_shows_an_issuer_urls_secrets(
    client: TestClient, anonymous: TestClient
) -> None:
    issuer = Issuer("https://issuer.example")
    issuer.rotate()
    mounted(client)
    secrets = f"svc:{PASSWORD}@127.0.0.1:{free_port()}/jwks.json?access_token={ACCESS_TOKEN}"
    for field_name in ("jwks_url", "oidc_discovery_url"):
        answer = client.post("/v1/auth/jwt/config", json={field_name: f"http://{secrets}"})
        assert answer.status_code == 400 and "http://127.0.0.1:" in answer.text, answer.text
        assert PASSWORD not in answer.text and ACCESS_TOKEN not in answer.text
    with serving(json_answer(issuer.jwks())) as served:
        url = served.url.replace("//", f"//svc:{PASSWORD}@")
        configured(client, {"jwks_url": f"{url}/jwks.json?access_token={ACCESS_TOKEN}"})
        assert served.paths == [f"/jwks.json?access_token={ACCESS_TOKEN}"]
    time.sleep(0.2)  # past the mount's shortest time between fetches
    token = issuer.sign(good(issuer), key=new_key())  # a kid the cached keys lack: a fetch
    answer = anonymous.post("/v1/auth/jwt/login", json={"role": "r", "jwt": token})
    assert answer.status_code == 400, answer.text
    assert f"{served.url}/jwks.json: ConnectError" in answer.json()["errors"][0]
    assert PASSWORD not in answer.text and ACCESS_TOKEN not in answer.text
    trail = client.get("/v1/audit", params={"limit": 1000})
    assert trail.status_code == 200
    records = trail.json()["records"]
    sources = [record["details"]["source"] for record in records if "source" in record["details"]]
    assert sources == [f"jwks_url={served.url}/jwks.json"]
    assert PASSWORD not in trail.text and ACCESS_TOKEN not in trail.text
