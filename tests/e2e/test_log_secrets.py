"""No secret reaches the log, even at DEBUG, on success and on every error path.

A real server (two workers, JSON logs at DEBUG, all output into one file) serves every family:
keys of every type created, rotated and exported, tokens issued, used, refused and revoked,
ECIES and AEZ in JSON, raw and batch form, and the error paths (bad base64, bad JSON, wrong
media type, oversized body, wrong key type, failed authentication, 401, 403, 404, 409). Then the
whole file is searched for every secret the test saw or made: exported key secrets (base64 and
hex), scoped tokens, refused tokens, the admin token, the root key and the plaintexts.
"""

import base64
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

MAX_BODY_BYTES = 64 * 1024
FE_DIMENSION = 2


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = {
        "CIPHERD_ROOT_KEY": b64(secrets.token_bytes(32)),
        "CIPHERD_LOG_LEVEL": "DEBUG",
        "CIPHERD_LOG_FORMAT": "json",
        "CIPHERD_MAX_BODY_BYTES": str(MAX_BODY_BYTES),
    }
    # No CIPHERD_ADMIN_TOKEN: the server generates one, which must not be logged either.
    with running(tmp_path / "data", workers_count=2, env=env, log_path=tmp_path / "log") as s:
        yield s


class Secrets:
    """Every secret value seen during the run, and every request id sent."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.request_ids: set[str] = set()

    def add_bytes(self, raw: bytes) -> None:
        self.values |= {
            b64(raw),
            base64.urlsafe_b64encode(raw).decode(),
            raw.hex(),
            raw.hex().upper(),
        }

    def add_text(self, text: str) -> None:
        self.values.add(text)


def exercise(server: Server, seen: Secrets) -> None:
    counter = iter(range(1_000_000))

    def request(
        method: str, path: str, token: str | None = server.admin_token, **kwargs: object
    ) -> httpx.Response:
        request_id = f"log-test-{next(counter)}"
        seen.request_ids.add(request_id)
        headers = {"X-Request-ID": request_id, **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.request(method, server.url + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]

    def expect(status: int, response: httpx.Response) -> dict:
        assert response.status_code == status, (response.request.url, response.text)
        return response.json() if response.content else {}

    plaintext = b"PLAINTEXT-MARKER-" + secrets.token_hex(16).encode()
    seen.add_bytes(plaintext)
    seen.add_text(plaintext.decode())

    # Keys of every type, exportable, rotated once, both versions exported.
    document = expect(200, request("GET", "/openapi.json", token=None))
    key_types = document["components"]["schemas"]["KeyCreate"]["properties"]["type"]["enum"]
    for key_type in key_types:
        name = f"k-{key_type}"
        body: dict[str, object] = {"name": name, "type": key_type, "exportable": True}
        if key_type.startswith(("ipfe-", "qfe-")):
            body["dimension"] = FE_DIMENSION
        expect(201, request("POST", "/v1/keys", json=body))
        expect(409, request("POST", "/v1/keys", json=body))
        expect(200, request("POST", f"/v1/keys/{name}/rotate"))
        for version in (1, 2):
            exported = expect(
                200, request("GET", f"/v1/keys/{name}/export", params={"version": version})
            )
            seen.add_bytes(base64.b64decode(exported["secret"]))
        expect(200, request("GET", f"/v1/keys/{name}"))
    expect(201, request("POST", "/v1/keys", json={"name": "sealed", "type": "aez"}))
    expect(403, request("GET", "/v1/keys/sealed/export"))
    expect(200, request("GET", "/v1/keys"))

    # ECIES: JSON, raw, batch, to a public key, and its failures.
    for curve in ("secp256k1", "x25519", "ed25519"):
        name = f"k-ecies-{curve}"
        sealed = expect(
            200, request("POST", f"/v1/ecies/{name}/encrypt", json={"plaintext": b64(plaintext)})
        )
        expect(
            200,
            request("POST", f"/v1/ecies/{name}/decrypt", json={"ciphertext": sealed["ciphertext"]}),
        )
        raw = request(
            "POST",
            f"/v1/ecies/{name}/encrypt",
            content=plaintext,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert raw.status_code == 200
        request(
            "POST",
            f"/v1/ecies/{name}/decrypt",
            content=raw.content,
            headers={"Content-Type": "application/octet-stream"},
        )
        items = [{"plaintext": b64(plaintext)}] * 3
        batch = expect(
            200, request("POST", f"/v1/ecies/{name}/encrypt/batch", json={"items": items})
        )
        opened = [{"ciphertext": r["ciphertext"]} for r in batch["results"]]
        expect(200, request("POST", f"/v1/ecies/{name}/decrypt/batch", json={"items": opened}))
        public = expect(200, request("GET", f"/v1/keys/{name}/public"))
        expect(
            200,
            request(
                "POST",
                "/v1/ecies/encrypt",
                json={
                    "public_key": public["public_key"],
                    "plaintext": b64(plaintext),
                    "config": {"elliptic_curve": curve},
                },
            ),
        )
        expect(
            400, request("POST", f"/v1/ecies/{name}/decrypt", json={"ciphertext": b64(bytes(80))})
        )
    expect(409, request("POST", "/v1/ecies/k-aez/encrypt", json={"plaintext": b64(plaintext)}))

    # AEZ: JSON, raw, batch, and a ciphertext that does not authenticate.
    params = {"nonce": b64(b"nonce"), "ad": [b64(b"header")], "tau": 16}
    sealed = expect(
        200, request("POST", "/v1/aez/k-aez/encrypt", json={"plaintext": b64(plaintext), **params})
    )
    expect(
        200,
        request(
            "POST", "/v1/aez/k-aez/decrypt", json={"ciphertext": sealed["ciphertext"], **params}
        ),
    )
    tampered = bytearray(base64.b64decode(sealed["ciphertext"]))
    tampered[0] ^= 1
    expect(
        400, request("POST", "/v1/aez/k-aez/decrypt", json={"ciphertext": b64(tampered), **params})
    )
    raw_headers = {"Content-Type": "application/octet-stream"}
    raw = request("POST", "/v1/aez/k-aez/encrypt", content=plaintext, headers=raw_headers)
    assert raw.status_code == 200
    request("POST", "/v1/aez/k-aez/decrypt", content=raw.content, headers=raw_headers)
    items = [{"plaintext": b64(plaintext)}, {"plaintext": b64(plaintext), "tau": 0}]
    batch = expect(200, request("POST", "/v1/aez/k-aez/encrypt/batch", json={"items": items}))
    opened = [{"ciphertext": b64(tampered)}] + [
        {"ciphertext": r["ciphertext"]} for r in batch["results"][:1]
    ]
    expect(200, request("POST", "/v1/aez/k-aez/decrypt/batch", json={"items": opened}))

    # Scoped tokens: issued, used inside and outside their scope, revoked, then refused.
    issued = expect(
        201,
        request(
            "POST",
            "/v1/tokens",
            json={"keys": ["k-aez"], "operations": ["encrypt", "read"], "ttl_seconds": 600},
        ),
    )
    scoped = issued["token"]
    seen.add_text(scoped)
    expect(200, request("GET", "/v1/tokens"))
    expect(
        200,
        request("POST", "/v1/aez/k-aez/encrypt", token=scoped, json={"plaintext": b64(plaintext)}),
    )
    expect(403, request("POST", "/v1/aez/k-aez/decrypt", token=scoped, json=sealed))
    expect(403, request("GET", "/v1/keys/k-aez/export", token=scoped))
    expect(403, request("POST", "/v1/keys", token=scoped, json={"name": "x", "type": "aez"}))
    expect(204, request("DELETE", f"/v1/tokens/{issued['id']}"))
    # The revoking process forgets at once; the other worker within the token cache time.
    request("GET", "/v1/keys", token=scoped)

    # 401: no token, a token of the right shape that was never issued, a mangled admin token.
    for refused in ("cdt_" + secrets.token_urlsafe(32), server.admin_token[::-1]):
        seen.add_text(refused)
        expect(401, request("GET", "/v1/keys", token=refused))
    expect(401, request("GET", "/v1/keys", token=None))
    expect(
        401, request("GET", "/v1/keys", token=None, headers={"Authorization": "Basic Zm9vOmJhcg=="})
    )

    # Bad requests that carry secret-looking input.
    secret_looking = b64(secrets.token_bytes(32))
    seen.add_text(secret_looking)
    expect(
        422,
        request("POST", "/v1/aez/k-aez/encrypt", json={"plaintext": secret_looking + "!"}),
    )
    expect(
        422,
        request("POST", "/v1/ecies/encrypt", json={"public_key": secret_looking, "plaintext": ""}),
    )
    expect(
        422,
        request(
            "POST",
            "/v1/keys",
            json={"name": secret_looking, "type": "aez"},
        ),
    )
    expect(
        422,
        request(
            "POST",
            "/v1/aez/k-aez/encrypt",
            content=b'{"plaintext": "' + secret_looking.encode() + b'", "tau": "x"',
            headers={"Content-Type": "application/json"},
        ),
    )
    expect(
        415,
        request(
            "POST",
            "/v1/aez/k-aez/encrypt",
            content=secret_looking.encode(),
            headers={"Content-Type": "text/plain"},
        ),
    )
    expect(
        413,
        request(
            "POST",
            "/v1/aez/k-aez/encrypt",
            content=os.urandom(MAX_BODY_BYTES + 1),
            headers=raw_headers,
        ),
    )
    expect(404, request("POST", "/v1/aez/no-such-key/encrypt", json={"plaintext": b64(plaintext)}))
    expect(404, request("GET", "/v1/no-such-route"))
    expect(202, request("DELETE", "/v1/keys/k-aez"))
    assert request("GET", "/metrics", token=None).status_code == 200


def test_no_secret_in_any_log_line(server: Server) -> None:
    seen = Secrets()
    exercise(server, seen)
    root_key = base64.b64decode(server.env["CIPHERD_ROOT_KEY"])
    seen.add_bytes(root_key)
    seen.add_text(server.admin_token)
    server.stop()  # shutdown messages belong to the log too

    log = server.log_path.read_text()
    lines = log.splitlines()
    assert len(lines) > 100, "the server logged too little for this test to mean anything"
    lower = log.lower()
    leaked = sorted(value for value in seen.values if value.lower() in lower)
    assert leaked == []

    ids_logged = set()
    not_json = [line for line in lines if not line.startswith("{")]
    assert not_json == []
    for line in lines:
        entry = json.loads(line)
        assert isinstance(entry, dict) and "request_id" in entry, line
        ids_logged.add(entry["request_id"])
    # Each request left a line under the id the client sent.
    assert seen.request_ids <= ids_logged
