"""Property-based fuzzing of every operation in `openapi.yaml` against a live server.

schemathesis generates valid and invalid requests from the document; the server must never
answer 5xx, and every answer must match the document: its status code, its media type and its
schema. Path parameters that name a key are pointed at real keys of the right family (unless
the generated name is itself invalid), so the fuzzing reaches the crypto code and not only the
404 path. Bounded per operation so the whole module stays within a couple of minutes.
"""

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.server import Server, start

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
ADMIN_TOKEN = "fuzz-admin-" + secrets.token_urlsafe(16)
KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# The key each family's paths use; FE paths use an inner-product key of a small dimension,
# signatures are made with a secp256k1 key and verified with an ed25519 one.
KEYS = {
    "/v1/ecies/": ("fuzz-ecies", {"type": "ecies-secp256k1"}),
    "/v1/aez/": ("fuzz-aez", {"type": "aez"}),
    "/v1/fe/": ("fuzz-fe", {"type": "ipfe-opt", "dimension": 3}),
    "/v1/keys/": ("fuzz-keys", {"type": "ecies-x25519", "exportable": True}),
    "/v1/sign/": ("fuzz-sign", {"type": "ecdsa-secp256k1"}),
    "/v1/verify/": ("fuzz-verify", {"type": "ed25519"}),
    "/v1/hmac/": ("fuzz-hmac", {"type": "hmac"}),
}

schema = schemathesis.openapi.from_path(OPENAPI)


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
            for name, body in KEYS.values():
                created = client.post("/v1/keys", json={"name": name, **body})
                assert created.status_code == 201, created.text
        yield server
    finally:
        server.stop()


def _aim(case: schemathesis.Case, client: httpx.Client) -> None:
    """Point a valid generated key name (or token id) at something that exists."""
    path = case.operation.path
    name = (case.path_parameters or {}).get("name")
    if isinstance(name, str) and KEY_NAME.match(name):
        for prefix, (real, _) in KEYS.items():
            if path.startswith(prefix):
                if case.method.upper() == "DELETE":  # delete a key of its own, not the shared one
                    real = f"fuzz-doomed-{secrets.token_hex(4)}"
                    client.post("/v1/keys", json={"name": real, "type": "aez"})
                case.path_parameters["name"] = real
    if path == "/v1/tokens/{token_id}" and case.method.upper() == "DELETE":
        token_id = case.path_parameters.get("token_id")
        if isinstance(token_id, str) and re.fullmatch(r"[0-9a-f]{16}", token_id):
            issued = client.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]})
            case.path_parameters["token_id"] = issued.json()["id"]


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_every_operation_answers_as_documented(case: schemathesis.Case, live: Server) -> None:
    with live.client() as client:
        _aim(case, client)
    case.call_and_validate(
        base_url=live.url,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        checks=CHECKS,
        timeout=30,
    )
