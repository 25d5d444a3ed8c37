"""Property-based fuzzing of every operation in `openapi.yaml` against a live server.

schemathesis generates valid and invalid requests from the document; the server must never
answer 5xx, and every answer must match the document: its status code, its media type and its
schema. Path parameters that name a key are pointed at real keys of the right family (unless
the generated name is itself invalid), so the fuzzing reaches the crypto code and not only the
404 path. The stateful phase then chains the crypto families' operations along the document's
links (a ciphertext into its decryption, a functional key into FE decryption).
Every operation's answers are counted: at least 80 % of the operations must have answered 2xx
at least once. Bounded per operation so the whole module stays within a few minutes: the
fuzzing phase's examples only, not schemathesis's coverage phase, which would send some sixty
boundary cases an operation (over 11,000 for the document) and take a quarter of an hour.
"""

import base64
import re
import secrets
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from app.ops.keys import KEY_NAME_PATTERN
from tests.e2e.server import Server, start

# One process runs the whole module: its last test reads what the fuzzing tests before it saw.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("schemathesis")]

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
ADMIN_TOKEN = "fuzz-admin-" + secrets.token_urlsafe(16)
KEY_NAME = re.compile(KEY_NAME_PATTERN)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# The key each family's paths use; FE paths use an inner-product key of dimension 1, which the
# vectors generated most often fit; signatures are made with a secp256k1 key and verified with
# an ed25519 one.
KEYS = {
    "/v1/ecies/": ("fuzz-ecies", {"type": "ecies-secp256k1"}),
    "/v1/aez/": ("fuzz-aez", {"type": "aez"}),
    "/v1/aead/": ("fuzz-aead", {"type": "aes256-gcm"}),
    "/v1/hpke/": ("fuzz-hpke", {"type": "hpke-x25519"}),
    "/v1/rsa/": ("fuzz-rsa", {"type": "rsa-2048"}),
    "/v1/fe/": ("fuzz-fe", {"type": "ipfe-opt", "dimension": 1}),
    "/v1/keys/{name}/jwks": ("fuzz-jwt", {"type": "ecdsa-p256"}),
    "/v1/keys/": ("fuzz-keys", {"type": "ecies-x25519", "exportable": True, "allow_backup": True}),
    "/v1/sign/": ("fuzz-sign", {"type": "ecdsa-secp256k1"}),
    "/v1/verify/": ("fuzz-verify", {"type": "ed25519"}),
    "/v1/hmac/": ("fuzz-hmac", {"type": "hmac"}),
    "/v1/jwt/": ("fuzz-jwt", {"type": "ecdsa-p256"}),
    "/v1/transit/sign/": ("fuzz-transit-sign", {"type": "ed25519"}),
    "/v1/transit/verify/": ("fuzz-transit-sign", {"type": "ed25519"}),
    "/v1/transit/": (
        "fuzz-transit",
        {"type": "aes256-gcm", "exportable": True, "allow_backup": True},
    ),
}
# The value of each of Transit's and the mounts' other path parameters, when the generated one
# is a plain word: one they accept.
PATH_VALUES = {
    "algorithm": "sha2-256",
    "key_type": "encryption-key",
    "version": "latest",
    "kind": "plaintext",
    "part": "32",
    "source": "platform",
    "count": "32",
    "field_path": "token-ttl",
}
# The role every AppRole and token-role path names, when the generated name is a valid one.
ROLE = "fuzz-role"
# A real ciphertext of each family's key (JSON, raw), put in place of a generated one in
# decryptions and rewraps, so that they reach the decryption and not only its refusal.
CIPHERTEXTS: dict[str, tuple[str, bytes]] = {}

# AWS KMS's JSON protocol (POST /) is JSON under AWS's own media type.
schemathesis.serializer.alias("application/x-amz-json-1.1", "application/json")
schema = schemathesis.openapi.from_path(OPENAPI)
schema.config.phases.coverage.enabled = False
CRYPTO = schema.include(path_regex="^/v1/(ecies|aez|aead|hpke|rsa|fe)/")
# The status codes each operation ("POST /v1/keys") answered, over every test of the module.
ANSWERS: defaultdict[str, set[int]] = defaultdict(set)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"
    env = {
        "CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN,
        "CIPHERD_MAX_BATCH_ITEMS": "50",
        "CIPHERD_FE_MAX_DIMENSION": "8",
        "CIPHERD_FE_MAX_RANGE": str(2**16),
        "CIPHERD_KEY_CACHE_SECONDS": "0",
    }
    server = start(data_dir, env=env)
    try:
        with server.client() as client:
            for name, body in dict(KEYS.values()).items():
                created = client.post("/v1/keys", json={"name": name, **body})
                assert created.status_code == 201, created.text
            for family in ("ecies", "aez", "aead", "hpke", "rsa"):
                CIPHERTEXTS[f"/v1/{family}/"] = _sealed(client, f"/v1/{family}/fuzz-{family}")
            sealed = client.post(
                "/v1/transit/encrypt/fuzz-transit",
                json={"plaintext": base64.b64encode(b"fuzz").decode()},
                headers={"X-Vault-Token": ADMIN_TOKEN},
            )
            CIPHERTEXTS["/v1/transit/"] = (sealed.json()["data"]["ciphertext"], b"")
            for role in ("/v1/auth/approle/role/", "/v1/auth/token/roles/"):
                made = client.post(role + ROLE, json={}, headers={"X-Vault-Token": ADMIN_TOKEN})
                assert made.status_code in (200, 204), made.text
        yield server
    finally:
        server.stop()


def _sealed(client: httpx.Client, key: str) -> tuple[str, bytes]:
    """A ciphertext of `key` as the JSON form and as the raw form carry it."""
    sealed = client.post(f"{key}/encrypt", json={"plaintext": base64.b64encode(b"fuzz").decode()})
    raw = client.post(
        f"{key}/encrypt/raw",
        content=b"fuzz",
        headers={"Content-Type": "application/octet-stream"},
    )
    assert sealed.status_code == raw.status_code == 200, sealed.text + raw.text
    return sealed.json()["ciphertext"], raw.content


def _issued(client: httpx.Client) -> dict[str, Any]:
    """A new renewable scoped token."""
    body = {"keys": ["*"], "operations": ["read"], "renewable": True, "ttl_seconds": 3600}
    issued = client.post("/v1/tokens", json=body)
    assert issued.status_code == 201, issued.text
    return dict(issued.json())


# Transit's paths whose items carry `plaintext` or `input` in base64.
TRANSIT_INPUTS = ("/v1/transit/encrypt/", "/v1/transit/hmac/", "/v1/transit/hash")


def _base64(value: Any) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (TypeError, ValueError):
        return False
    return isinstance(value, str)


def _aim(case: schemathesis.Case, client: httpx.Client) -> dict[str, str] | None:
    """Point a valid generated key name, role name, token or path parameter at something that
    exists, and a decryption at a real ciphertext; the token to call with if not the admin's."""
    path = case.operation.path
    if case.headers:  # a generated X-Vault-Token would stand in for the admin token
        case.headers.pop("X-Vault-Token", None)
    parameters = case.path_parameters or {}
    name = parameters.get("name")
    if isinstance(name, str) and KEY_NAME.match(name):
        for prefix, (real, _) in KEYS.items():
            if path.startswith(prefix):
                if case.method.upper() == "DELETE" or path.endswith("/restore"):
                    # a key of its own to delete or restore, not the shared one
                    real = f"fuzz-doomed-{secrets.token_hex(4)}"
                    client.post("/v1/keys", json={"name": real, "type": "aez"})
                    if path.endswith("/restore"):
                        client.delete(f"/v1/keys/{real}")
                parameters["name"] = real
                break
    if isinstance(case.body, dict) and isinstance(case.body.get("wrapping_key"), str):
        case.body["wrapping_key"] = client.get("/v1/sys/wrapping-key").json()["public_key"]
    role = parameters.get("role_name")
    if isinstance(role, str) and KEY_NAME.match(role) and case.method.upper() != "DELETE":
        parameters["role_name"] = ROLE
    token_id = parameters.get("token_id")
    if path.startswith("/v1/tokens/{token_id}") and re.fullmatch(r"[0-9a-f]{16}", str(token_id)):
        parameters["token_id"] = _issued(client)["id"]
    if path.startswith("/v1/tokens/self"):  # the caller's own token: a scoped one, not the admin's
        return {"Authorization": f"Bearer {_issued(client)['token']}"}
    for parameter, value in PATH_VALUES.items():
        if KEY_NAME.match(str(parameters.get(parameter, "-"))):
            parameters[parameter] = value
    if case.method.upper() == "GET" and path.endswith(("/{path}", "/{path}/tune")):
        parameters["path"] = "approle" if path.startswith("/v1/sys/auth/") else "transit"
    if case.method.upper() == "GET" and path.startswith(("/v1/sys/policy/", "/v1/sys/policies/")):
        parameters["name"] = "default"
    if isinstance(case.body, dict) and path.startswith(TRANSIT_INPUTS):
        for field in ("plaintext", "input"):  # base64, which a generated string seldom is
            if not _base64(case.body.get(field)):
                case.body[field] = "ZnV6eg=="
    if path in ("/v1/auth/token/renew-self", "/v1/auth/token/revoke-self"):
        made = client.post("/v1/auth/token/create", json={"ttl": "1h", "renewable": True})
        return {"X-Vault-Token": made.json()["auth"]["client_token"]}
    if isinstance(case.body, dict) and path.startswith("/v1/auth/approle/"):
        _aim_approle(case.body, client)
    if isinstance(case.body, dict) and path.startswith("/v1/transit/verify/"):
        signed = client.post("/v1/transit/sign/fuzz-transit-sign", json={"input": "ZnV6eg=="})
        case.body = {"input": "ZnV6eg==", "signature": signed.json()["data"]["signature"]}
    if isinstance(case.body, dict) and path.endswith("/{field_path}"):
        case.body["token_ttl"] = 60  # the field the path is aimed at
    if isinstance(case.body, dict) and path.startswith("/v1/sys/capabilities"):
        case.body["paths"] = ["transit/encrypt/fuzz-transit"]  # an empty list is a 400
    if isinstance(case.body, dict) and {"token", "accessor"} & case.body.keys():
        made = client.post("/v1/auth/token/create", json={"ttl": "1h"})
        auth = made.json()["auth"]
        for field, value in (("token", auth["client_token"]), ("accessor", auth["accessor"])):
            if isinstance(case.body.get(field), str):
                case.body[field] = value
    for prefix, (ciphertext, raw) in CIPHERTEXTS.items():
        if not path.startswith(prefix):
            continue
        if path.endswith("/decrypt/raw"):
            case.body = raw
        elif isinstance(case.body, dict) and isinstance(case.body.get("ciphertext"), str):
            case.body["ciphertext"] = ciphertext
            if prefix == "/v1/aez/":  # only with the encryption's own parameters
                case.body = {"ciphertext": ciphertext}
        if (
            path.startswith(("/v1/transit/decrypt/", "/v1/transit/rewrap/"))
            and prefix == "/v1/transit/"
        ):
            case.body = {"ciphertext": ciphertext}
    return None


def _aim_approle(body: dict[str, Any], client: httpx.Client) -> None:
    """A login and a secret id's accessor given as the role's real ones."""
    role = f"/v1/auth/approle/role/{ROLE}"
    if isinstance(body.get("secret_id_accessor"), str) or isinstance(body.get("role_id"), str):
        made = client.post(f"{role}/secret-id", json={}).json()["data"]
        if isinstance(body.get("secret_id_accessor"), str):
            body["secret_id_accessor"] = made["secret_id_accessor"]
        if isinstance(body.get("role_id"), str):
            body["role_id"] = client.get(f"{role}/role-id").json()["data"]["role_id"]
            body["secret_id"] = made["secret_id"]


def _auth(live: Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {live.admin_token}"}


def _count(live: Server, case: schemathesis.Case, response: Any) -> None:
    """Count the answer; follow a rotation of the admin token, which every later call needs."""
    ANSWERS[case.operation.label].add(response.status_code)
    if case.operation.label == "POST /v1/sys/admin-token/rotate" and response.status_code == 200:
        live.admin_token = response.json()["admin_token"]


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_every_operation_answers_as_documented(case: schemathesis.Case, live: Server) -> None:
    with live.client() as client:
        headers = _aim(case, client) or _auth(live)
    response = case.call(base_url=live.url, headers=headers, timeout=30)
    _count(live, case, response)
    # A request the HTTP layer cannot parse (a generated header or path it refuses) is answered
    # by uvicorn itself, before any route: a plain-text 400 the document cannot describe.
    if (response.status_code, response.content) != (400, b"Invalid HTTP request received."):
        case.validate_response(response, checks=CHECKS)


def test_stateful_sequences_follow_the_links(live: Server) -> None:
    """Scenarios of several calls, each fed by an earlier answer through a link: the names
    generated for a first call are pointed at real keys, the links carry the rest (the key's
    name, a ciphertext into its decryption, a functional key into FE decryption).

    The scenarios keep to the crypto families' operations, whose chains (an encryption, then
    its decryption; a keygen and an encryption, then an FE decryption) they then reach often.
    Scenarios over the key and token lifecycle too change what the server holds between
    hypothesis's runs of one scenario, which it then reports as flaky data generation."""

    class Workflow(CRYPTO.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: schemathesis.Case) -> None:
            with live.client() as client:
                _aim(case, client)

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": live.url, "headers": _auth(live), "timeout": 30}

        def after_call(self, response: schemathesis.Response, case: schemathesis.Case) -> None:
            super().after_call(response, case)
            _count(live, case, response)

        def validate_response(
            self, response: schemathesis.Response, case: schemathesis.Case, *args: Any, **kw: Any
        ) -> None:
            case.validate_response(response, checks=CHECKS)

    Workflow.run(
        settings=settings(
            max_examples=40,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
    )


def test_most_operations_answer_2xx_and_none_5xx() -> None:
    """Over the tests above: a 2xx from at least 80 % of the operations, a 5xx from none."""
    if not ANSWERS:
        pytest.skip("runs after the fuzzing tests of this module")
    document = yaml.load(OPENAPI.read_text(), Loader=yaml.CSafeLoader)
    operations = [f"{m.upper()} {p}" for p, ops in document["paths"].items() for m in ops]
    succeeded = [op for op in operations if any(200 <= s < 300 for s in ANSWERS[op])]
    failed = {op: sorted(ANSWERS[op]) for op in operations if op not in succeeded}
    print(f"2xx from {len(succeeded)} of {len(operations)} operations; never 2xx: {failed}")
    assert not [op for op, codes in ANSWERS.items() if any(s >= 500 for s in codes)]
    assert len(succeeded) >= 0.8 * len(operations), failed
