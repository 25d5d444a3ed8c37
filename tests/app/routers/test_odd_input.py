"""Input a client would not send, answered with a 400 rather than a 500: JSON nested past the
parser's depth, a key-name pattern outside the grammar in a Vault policy, a date in year 1,
numbers in digits other than ASCII's."""

import json
import time

import pytest
from fastapi.testclient import TestClient

from app.ops import hcl_policy
from app.ops.errors import Problem

WRAP = {"X-Vault-Wrap-TTL": "60"}


def test_data_to_wrap_nested_past_the_parsers_depth_is_a_400(client: TestClient) -> None:
    for depth in (250, 5000):
        body = b'{"a":' + b"[" * depth + b"]" * depth + b"}"
        answer = client.post("/v1/sys/wrapping/wrap", content=body, headers=WRAP)
        assert answer.status_code == 400, answer.text
    shallow = b'{"a":' + b"[" * 100 + b"]" * 100 + b"}"
    wrapped = client.post("/v1/sys/wrapping/wrap", content=shallow, headers=WRAP)
    assert wrapped.status_code == 200, wrapped.text
    token = wrapped.json()["wrap_info"]["token"]
    unwrapped = client.post("/v1/sys/wrapping/unwrap", json={"token": token})
    assert unwrapped.json()["data"] == json.loads(shallow), unwrapped.text


def test_secret_id_metadata_nested_past_the_interpreters_depth_is_a_400(
    client: TestClient,
) -> None:
    assert client.post("/v1/auth/approle/role/ci", json={}).status_code == 204
    nested = "[" * 60000
    answer = client.post("/v1/auth/approle/role/ci/secret-id", json={"metadata": nested})
    assert answer.status_code == 400, answer.text
    assert "metadata" in answer.json()["errors"][0]


def test_a_vault_policy_with_a_pattern_outside_the_grammar_is_a_400(client: TestClient) -> None:
    for pattern in ("[", "[z-a]", "*" * 17):
        text = f'path "transit/encrypt/{pattern}" {{ capabilities = ["update"] }}'
        answer = client.put("/v1/sys/policies/acl/p", json={"policy": text})
        assert answer.status_code == 400, (pattern, answer.text)
        assert "does not map" in answer.json()["errors"][0]


def test_unclosed_policy_blocks_cost_their_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear, not quadratic: 256 KiB of unclosed blocks took some 20 s when each scan ran to
    the end of the text; a 64 KiB policy (the limit) took over a second on the event loop."""
    monkeypatch.setattr(hcl_policy, "MAX_HCL_BYTES", 256 * 1024)
    text = 'path "x"{capabilities=[' * (256 * 1024 // 24)
    started = time.monotonic()
    with pytest.raises(Problem):
        hcl_policy.parse(text)
    assert time.monotonic() - started < 5


def test_audit_dates_without_an_offset_are_utc_down_to_year_1(client: TestClient) -> None:
    for params in ({"since": "0001-01-01T00:00:00"}, {"until": "0001-01-01"}):
        answer = client.get("/v1/audit", params=params)
        assert answer.status_code == 200, answer.text
    assert client.get("/v1/audit", params={"until": "0001-01-01"}).json()["records"] == []
    everything = client.get("/v1/audit", params={"since": "0001-01-01T00:00:00"}).json()
    assert everything["records"], everything


def test_a_login_roles_policies_are_checked_when_it_is_written(client: TestClient) -> None:
    """Not at its first login, which would spend a secret id's use to say so."""
    for policies in (["bad name!"], [f"p{n}" for n in range(65)]):
        refused = client.post("/v1/auth/approle/role/ci", json={"token_policies": policies})
        assert refused.status_code == 400, refused.text
    assert client.post("/v1/auth/approle/role/ci", json={"policies": ["orders"]}).status_code == 204
    assert client.get("/v1/auth/approle/role/ci").json()["data"]["token_policies"] == ["orders"]


def test_a_name_or_credential_with_a_trailing_line_break_is_refused(client: TestClient) -> None:
    """A pattern ending in `$` lets a final line break through `re.match`: "ci\n" was a role
    of its own beside "ci", and "orders\n" a policy name."""
    assert client.post("/v1/auth/approle/role/ci%0A", json={}).status_code == 400
    assert client.get("/v1/auth/approle/role?list=true").status_code == 404  # none was made
    # A role's policy names are trimmed, as Vault trims them.
    trimmed = client.post("/v1/auth/approle/role/ci", json={"token_policies": ["orders\n"]})
    assert trimmed.status_code == 204, trimmed.text
    assert client.get("/v1/auth/approle/role/ci").json()["data"]["token_policies"] == ["orders"]
    custom = client.post("/v1/auth/approle/role/ci/custom-secret-id", json={"secret_id": "s3\n"})
    assert custom.status_code == 400 and "secret_id" in custom.text, custom.text
    role_id = client.post("/v1/auth/approle/role/ci/role-id", json={"role_id": "r1\n"})
    assert role_id.status_code == 400 and "role_id" in role_id.text, role_id.text
    assert client.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204
    jwt_role = {"role_type": "jwt", "user_claim": "sub", "bound_audiences": ["a"]}
    assert client.post("/v1/auth/jwt/role/r%0A", json=jwt_role).status_code == 400
    policy = client.put("/v1/sys/policies/acl/orders%0A", json={"policy": ""})
    assert policy.status_code == 400, policy.text


def test_numbers_in_query_values_are_ascii_digits(client: TestClient) -> None:
    """Python's `isdecimal` and `int` read "１２" (fullwidth) and "٤٠٣" (Arabic-Indic) as 12
    and 403; a number in a query is written in ASCII, and another writing is refused, as a
    letter would be."""
    assert client.post("/v1/keys", json={"name": "q", "type": "ecies-secp256k1"}).status_code == 201
    octet = {"content-type": "application/octet-stream"}
    for written, status in (("12", 200), ("１２", 422), ("١٢", 422)):
        sealed = client.post(
            "/v1/ecies/q/encrypt",
            content=b"m",
            headers=octet,
            params={"symmetric_nonce_length": written},
        )
        assert sealed.status_code == status, (written, sealed.text)
    for written, status in (("403", 200), ("٤٠٣", 422), ("４０３", 422)):
        listed = client.get("/v1/audit", params={"outcome": written})
        assert listed.status_code == status, (written, listed.text)
