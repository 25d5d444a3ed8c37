"""A token whose value its maker chooses (`id` on Vault's `auth/token/create`): only root may,
the value must not pass for a token the service or Vault draws, two tokens never share one, and
the value stays out of the audit trail and the errors."""

import secrets

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient


def create(client: TestClient, value: object, **body: object) -> dict:
    answer = client.post("/v1/auth/token/create", json={"id": value, **body})
    return {"status": answer.status_code, **answer.json()}


def test_root_makes_a_token_of_the_value_it_chooses(client: TestClient, app: FastAPI) -> None:
    value = "ci-bootstrap-" + secrets.token_hex(8)
    made = create(client, value, policies=["default"], meta={"team": "ci"})
    assert made["status"] == 200, made
    assert made["auth"]["client_token"] == value
    assert "chosen by its maker" in made["warnings"][0]
    with TestClient(app, headers={"X-Vault-Token": value}) as user:
        found = user.get("/v1/auth/token/lookup-self").json()["data"]
    assert found["id"] == value and found["meta"] == {"team": "ci"}
    records = client.get("/v1/audit").json()["records"]
    assert "auth-token_create" in {record["operation"] for record in records}, records
    assert value not in str(records)
    assert value not in client.get("/v1/tokens").text  # listings show ids, never values


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("cdt_" + "a" * 43, "prefix"),  # one of this service's drawn tokens
        ("cda_" + "a" * 43, "prefix"),  # the admin token's form
        ("cdw_" + "a" * 43, "prefix"),  # a response-wrapping token's form
        ("hvs." + "a" * 24, "'.'"),  # Vault's
        ("s." + "a" * 24, "'.'"),
        ("with space", "visible ASCII"),
        ("caf\u00e9", "visible ASCII"),
        ("nul\u0000", "visible ASCII"),
        ("x" * 257, "visible ASCII"),
        ("0123456789abcdef", "form of an accessor"),  # a token's id, which records show
    ],
)
def test_a_value_that_could_pass_for_a_drawn_token_or_a_header_is_refused(
    client: TestClient, value: str, words: str
) -> None:
    refused = create(client, value, policies=["default"])
    assert refused["status"] == 400, refused
    assert words in refused["errors"][0]
    assert value not in refused["errors"][0]


def test_two_tokens_never_share_a_value(client: TestClient) -> None:
    value = "shared-" + secrets.token_hex(8)
    assert create(client, value, policies=["default"])["status"] == 200
    again = create(client, value, policies=["default"])
    assert again["status"] == 400
    assert again["errors"] == ["cannot create a token with a duplicate ID"]


def test_the_admin_tokens_value_is_taken(client: TestClient) -> None:
    """The admin token is in no table, so its value would not collide in the store: it is
    refused as taken, else it would go on acting, as this token, once the admin token rotates."""
    admin = client.headers["Authorization"].removeprefix("Bearer ")
    refused = create(client, admin, policies=["root"])
    assert refused["status"] == 400
    assert refused["errors"] == ["cannot create a token with a duplicate ID"]


def test_only_root_chooses_a_value(client: TestClient, app: FastAPI) -> None:
    written = client.post("/v1/policies/maker", json={"rules": [], "admin": ["tokens"]})
    assert written.status_code == 200, written.text
    maker = create(client, None, policies=["maker"])["auth"]["client_token"]
    with TestClient(app, headers={"X-Vault-Token": maker}) as user:
        refused = user.post(
            "/v1/auth/token/create", json={"id": "mine-" + secrets.token_hex(4), "policies": []}
        )
    assert refused.status_code == 400
    assert refused.json()["errors"] == ["root or sudo privileges required to specify token id"]
    # Nor does the refusal tell another maker which value is the admin token's.
    admin = client.headers["Authorization"].removeprefix("Bearer ")
    with TestClient(app, headers={"X-Vault-Token": maker}) as user:
        guess = user.post("/v1/auth/token/create", json={"id": admin, "policies": []})
    assert guess.json()["errors"] == ["root or sudo privileges required to specify token id"]
