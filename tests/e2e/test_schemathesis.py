"""Property-based fuzzing of every operation in `openapi.yaml` against a live server.

schemathesis generates valid and invalid requests from the document; the server must never
answer 5xx, and every answer must match the document: its status code, its media type and its
schema. Path parameters that name a key are pointed at real keys of the right family (unless
the generated name is itself invalid), so the fuzzing reaches the crypto code and not only the
404 path. The stateful phase then chains the crypto families' operations along the document's
links (a ciphertext into its decryption, a functional key into FE decryption).
Every operation's answers are counted: at least 80 % of the operations must have answered 2xx
at least once. Bounded per operation so the whole module stays within a few minutes.
"""

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
# The key each family's paths use; FE paths use an inner-product key of dimension 1, which the
# vectors generated most often fit; signatures are made with a secp256k1 key and verified with
# an ed25519 one.
KEYS = {
    "/v1/ecies/": ("fuzz-ecies", {"type": "ecies-secp256k1"}),
    "/v1/aez/": ("fuzz-aez", {"type": "aez"}),
    "/v1/fe/": ("fuzz-fe", {"type": "ipfe-opt", "dimension": 1}),
    "/v1/keys/": ("fuzz-keys", {"type": "ecies-x25519", "exportable": True}),
    "/v1/sign/": ("fuzz-sign", {"type": "ecdsa-secp256k1"}),
    "/v1/verify/": ("fuzz-verify", {"type": "ed25519"}),
    "/v1/hmac/": ("fuzz-hmac", {"type": "hmac"}),
}

schema = schemathesis.openapi.from_path(OPENAPI)
CRYPTO = schema.include(path_regex="^/v1/(ecies|aez|fe)/")
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
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
    response = case.call_and_validate(base_url=live.url, headers=AUTH, checks=CHECKS, timeout=30)
    ANSWERS[case.operation.label].add(response.status_code)


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
            return {"base_url": live.url, "headers": AUTH, "timeout": 30}

        def after_call(self, response: schemathesis.Response, case: schemathesis.Case) -> None:
            super().after_call(response, case)
            ANSWERS[case.operation.label].add(response.status_code)

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
    document = yaml.safe_load(OPENAPI.read_text())
    operations = [f"{m.upper()} {p}" for p, ops in document["paths"].items() for m in ops]
    succeeded = [op for op in operations if any(200 <= s < 300 for s in ANSWERS[op])]
    failed = {op: sorted(ANSWERS[op]) for op in operations if op not in succeeded}
    print(f"2xx from {len(succeeded)} of {len(operations)} operations; never 2xx: {failed}")
    assert not [op for op, codes in ANSWERS.items() if any(s >= 500 for s in codes)]
    assert len(succeeded) >= 0.8 * len(operations), failed
