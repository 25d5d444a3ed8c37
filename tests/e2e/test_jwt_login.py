"""JWT logins on a real `cipherd serve` with a real issuer (tests/e2e/issuer.py): what a token
from a login may do is exactly what its role's policies allow; the four refusals; the issuer's
key rotation; the bound on fetches of its keys; the failed-login throttle; and the token never
in the audit trail nor the log."""

import base64
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.issuer import Issuer, kubernetes_claims, new_key, running_issuer
from tests.e2e.server import Server, running, wait_for

pytestmark = pytest.mark.e2e

AUDIENCE = "https://cipherd.example"
REFETCH_SECONDS = 1.0


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running_one:
        yield running_one


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, issuer: Issuer) -> Iterator[Server]:
    # Many refusals come from 127.0.0.1 here: the throttle has a test of its own below.
    env = {
        "CIPHERD_JWKS_MIN_REFETCH_SECONDS": str(REFETCH_SECONDS),
        "CIPHERD_AUTH_FAILURES_BURST": "1000",
    }
    with running(tmp_path_factory.mktemp("jwt") / "data", env=env) as started:
        with started.client() as admin:
            for name in ("app-orders", "app-ledger", "other-key"):
                assert admin.post("/v1/keys", json={"name": name, "type": "aez"}).status_code == 201
            policy = {"rules": [{"keys": ["app-*"], "operations": ["encrypt"]}]}
            assert admin.post("/v1/policies/app-encrypt", json=policy).status_code in (200, 201)
            assert admin.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204
            config = {"jwks_url": issuer.jwks_url, "bound_issuer": issuer.url}
            assert admin.post("/v1/auth/jwt/config", json=config).status_code == 204
            role = {
                "role_type": "jwt",
                "user_claim": "sub",
                "bound_audiences": [AUDIENCE],
                "bound_claims": {"repository": "acme/*"},
                "bound_claims_type": "glob",
                "claim_mappings": {"repository": "repository"},
                "token_policies": ["app-encrypt"],
                "token_ttl": "10m",
            }
            assert admin.post("/v1/auth/jwt/role/ci", json=role).status_code == 204
        yield started


def claims(issuer: Issuer, **extra: Any) -> dict[str, Any]:
    return issuer.claims(
        **{"sub": "repo:acme/app", "aud": AUDIENCE, "repository": "acme/app", **extra}
    )


def login(server: Server, jwt: str, role: str = "ci") -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/auth/jwt/login", json={"role": role, "jwt": jwt}, timeout=30
    )


def test_a_login_token_does_exactly_what_its_policies_allow(server: Server, issuer: Issuer) -> None:
    answer = login(server, issuer.sign(claims(issuer)))
    assert answer.status_code == 200, answer.text
    auth = answer.json()["auth"]
    assert auth["policies"] == ["app-encrypt", "default"]
    assert auth["metadata"] == {"role": "ci", "repository": "acme/app"}
    assert 590 <= auth["lease_duration"] <= 600
    with server.client(auth["client_token"]) as workload:
        sealed = workload.post("/v1/aez/app-orders/encrypt", json={"plaintext": b64(b"order")})
        assert sealed.status_code == 200
        assert workload.post("/v1/aez/app-ledger/encrypt", json={"plaintext": b64(b"x")}).is_success
        ciphertext = sealed.json()["ciphertext"]
        denied = [
            workload.post("/v1/aez/app-orders/decrypt", json={"ciphertext": ciphertext}),
            workload.post("/v1/aez/other-key/encrypt", json={"plaintext": b64(b"x")}),
            workload.post("/v1/keys", json={"name": "app-new", "type": "aez"}),
            workload.get("/v1/audit"),
            workload.post("/v1/auth/jwt/role/ci", json={"token_policies": ["root"]}),
        ]
        assert [response.status_code for response in denied] == [403] * len(denied)
        itself = workload.get("/v1/tokens/self").json()
        assert itself["metadata"] == {"role": "ci", "repository": "acme/app"}
        assert (itself["identity"], itself["method"], itself["role"]) == (
            "jwt:repo:acme/app",
            "jwt",
            "ci",
        )


def test_a_login_token_bound_elsewhere_acts_only_from_there(server: Server, issuer: Issuer) -> None:
    """A role's `token_bound_cidrs` bind its logins' tokens: the server sees this test at
    127.0.0.1, so a token bound to 10.0.0.0/8 is refused on every path, one bound to
    127.0.0.1 served."""
    with server.client() as admin:
        base = admin.get("/v1/auth/jwt/role/ci").json()["data"]
        role = {key: base[key] for key in ("role_type", "user_claim", "bound_audiences")}
        role["token_policies"] = ["app-encrypt"]
        for name, blocks in (("elsewhere", "10.0.0.0/8"), ("here", "127.0.0.1")):
            written = admin.post(
                f"/v1/auth/jwt/role/{name}", json={**role, "token_bound_cidrs": blocks}
            )
            assert written.status_code == 204, written.text
    statuses = {}
    for name in ("elsewhere", "here"):
        answer = login(server, issuer.sign(claims(issuer)), role=name)
        assert answer.status_code == 200, answer.text
        with server.client(answer.json()["auth"]["client_token"]) as workload:
            statuses[name] = [
                workload.post(
                    "/v1/aez/app-orders/encrypt", json={"plaintext": b64(b"x")}
                ).status_code,
                workload.get("/v1/tokens/self").status_code,
                workload.get("/v1/auth/token/lookup-self").status_code,
            ]
    assert statuses == {"elsewhere": [403, 403, 403], "here": [200, 200, 200]}


def test_the_four_refusals(server: Server, issuer: Issuer) -> None:
    now = int(time.time())
    refused = {
        "wrong audience": issuer.sign(claims(issuer, aud="https://elsewhere.example")),
        "expired": issuer.sign(claims(issuer, iat=now - 7200, nbf=now - 7200, exp=now - 3600)),
        "another key": issuer.sign(claims(issuer), key=new_key()),
        "outside bound_claims": issuer.sign(claims(issuer, repository="evil/app")),
    }
    for why, jwt in refused.items():
        answer = login(server, jwt)
        assert answer.status_code == 400, why
        assert "auth" not in answer.json() and answer.json()["errors"], why


def test_a_kubernetes_service_account_logs_in(server: Server, issuer: Issuer) -> None:
    with server.client() as admin:
        role = {
            "role_type": "jwt",
            "user_claim": "sub",
            "bound_audiences": AUDIENCE,
            "bound_claims": {"/kubernetes.io/namespace": "payments"},
            "token_policies": "app-encrypt",
        }
        assert admin.post("/v1/auth/jwt/role/payments", json=role).status_code == 204
    token = issuer.sign(kubernetes_claims(issuer, "payments", "api", AUDIENCE))
    answer = login(server, token, role="payments")
    assert answer.status_code == 200, answer.text
    with server.client() as admin:
        records = admin.get("/v1/audit", params={"operation": "auth-jwt_login"}).json()["records"]
    identities = {record["details"].get("token_identity") for record in records}
    assert "jwt:system:serviceaccount:payments:api" in identities
    other = issuer.sign(kubernetes_claims(issuer, "default", "api", AUDIENCE))
    assert login(server, other, role="payments").status_code == 400


def test_a_rotation_of_the_issuer_key_is_seen_and_fetches_are_bounded(
    server: Server, issuer: Issuer
) -> None:
    assert login(server, issuer.sign(claims(issuer))).status_code == 200
    issuer.rotate("EC")
    issuer.retire()
    rotated = issuer.sign(claims(issuer))
    wait_for(lambda: login(server, rotated).status_code == 200, 10, "the new key taken")
    # A stream of tokens naming key ids the issuer never published: at most one fetch of its
    # keys per CIPHERD_JWKS_MIN_REFETCH_SECONDS.
    before, started = issuer.jwks_requests, time.monotonic()
    stranger = new_key()
    for _ in range(40):
        assert login(server, issuer.sign(claims(issuer), key=stranger)).status_code == 400
    elapsed = time.monotonic() - started
    assert issuer.jwks_requests - before <= 1 + elapsed / REFETCH_SECONDS


def test_no_token_in_the_audit_trail_or_the_log(server: Server, issuer: Issuer) -> None:
    good = issuer.sign(claims(issuer, jti=secrets.token_hex(8)))
    bad = issuer.sign(claims(issuer, aud="nobody", jti=secrets.token_hex(8)))
    issued = login(server, good).json()["auth"]["client_token"]
    assert login(server, bad).status_code == 400
    with server.client() as admin:
        trail = admin.get("/v1/audit", params={"limit": 1000}).text
    output = server.output()
    for secret in (good, bad, issued):
        signature = secret.rsplit(".", 1)[-1]
        assert signature not in trail and signature not in output


def test_failed_logins_are_throttled(tmp_path: Path, issuer: Issuer) -> None:
    env = {"CIPHERD_AUTH_FAILURES_BURST": "3", "CIPHERD_AUTH_FAILURES_PER_SECOND": "0.01"}
    with running(tmp_path / "data", env=env) as throttled:
        with throttled.client() as admin:
            assert admin.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204
            config = {"jwks_url": issuer.jwks_url}
            assert admin.post("/v1/auth/jwt/config", json=config).status_code == 204
        statuses = [
            login(throttled, issuer.sign(claims(issuer)), role="none").status_code for _ in range(5)
        ]
        assert statuses == [400, 400, 400, 429, 429]
