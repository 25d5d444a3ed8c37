"""A token carries at most MAX_PATTERNS key-name patterns, its own and its policies', on SQLite
and PostgreSQL: one that would carry more is not made (natively, at Vault's paths, by a login),
no policy holds more, and a token whose policies grew past it since it was made is refused
until they shrink (through the KMS API too), without spending its uses. 64 policies of 10,000
patterns each had a token carry 640,100, and each of its requests took a minute or more."""

from typing import Any

from fastapi.testclient import TestClient

from app.ops.grants import MAX_PATTERNS
from tests.app.routers.test_large_scopes import list_keys

PLAINTEXT = {"plaintext": "eA=="}


def _policy(admin: TestClient, name: str, keys: list[str], expect: int = 200) -> Any:
    rules = [
        {"keys": keys[i : i + 100], "operations": ["encrypt", "read"]}
        for i in range(0, len(keys), 100)
    ]
    answer = admin.post(f"/v1/policies/{name}", json={"rules": rules})
    assert answer.status_code == expect, answer.text[:300]
    return answer.json()


def _globs(count: int, prefix: str = "none") -> list[str]:
    return [f"{prefix}-{i:05}-*" for i in range(count)]


def _key(admin: TestClient) -> None:
    made = admin.post("/v1/keys", json={"name": "orders-1", "type": "aes256-gcm"})
    assert made.status_code == 201, made.text


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_policy_holds_at_most_max_patterns(admin_on_both_stores: TestClient) -> None:
    admin = admin_on_both_stores
    refused = _policy(admin, "wide", _globs(MAX_PATTERNS + 1), expect=422)
    assert refused["type"] == "urn:cipherd:problem:invalid-input"
    assert f"{MAX_PATTERNS + 1:,} key-name patterns" in refused["detail"]
    assert admin.get("/v1/policies/wide").status_code == 404
    assert _policy(admin, "wide", _globs(MAX_PATTERNS))["version"] == 1


def test_no_token_is_made_past_max_patterns(admin_on_both_stores: TestClient) -> None:
    admin = admin_on_both_stores
    _policy(admin, "wide", _globs(MAX_PATTERNS - 1))
    _policy(admin, "one", ["orders-*"])
    _policy(admin, "two", ["other-*"])
    _key(admin)
    at_the_bound = admin.post("/v1/tokens", json={"policies": ["wide", "one"]})
    assert at_the_bound.status_code == 201, at_the_bound.text
    made = at_the_bound.json()["token"]
    used = admin.post("/v1/aead/orders-1/encrypt", json=PLAINTEXT, headers=_as(made))
    assert used.status_code == 200, used.text
    tokens = len(admin.get("/v1/tokens").json()["tokens"])

    inline = {"policies": ["wide", "one"], "keys": ["x-*"], "operations": ["read"]}
    refused = admin.post("/v1/tokens", json=inline)
    assert refused.status_code == 422, refused.text
    assert refused.json()["type"] == "urn:cipherd:problem:invalid-input"
    assert f"{MAX_PATTERNS + 1:,} key-name patterns" in refused.json()["detail"]

    vault = admin.post("/v1/auth/token/create", json={"policies": ["wide", "one", "two"]})
    assert vault.status_code == 400, vault.text
    assert f"{MAX_PATTERNS + 1:,} key-name patterns" in vault.json()["errors"][0]

    role = {"token_policies": ["wide", "one", "two"]}
    assert admin.post("/v1/auth/approle/role/ci", json=role).status_code == 204
    role_id = admin.get("/v1/auth/approle/role/ci/role-id").json()["data"]["role_id"]
    once = {"num_uses": 1}
    drawn = admin.post("/v1/auth/approle/role/ci/secret-id", json=once).json()["data"]

    def login() -> Any:
        return admin.post(
            "/v1/auth/approle/login",
            json={"role_id": role_id, "secret_id": drawn["secret_id"]},
            headers={"Authorization": ""},
        )

    refused_login = login()
    assert refused_login.status_code == 400, refused_login.text
    assert f"{MAX_PATTERNS + 1:,} key-name patterns" in refused_login.json()["errors"][0]
    assert len(admin.get("/v1/tokens").json()["tokens"]) == tokens
    # The secret id's one use was not spent on a token no login could get.
    accessor = {"secret_id_accessor": drawn["secret_id_accessor"]}
    looked_up = admin.post("/v1/auth/approle/role/ci/secret-id-accessor/lookup", json=accessor)
    assert looked_up.json()["data"]["secret_id_num_uses"] == 1, looked_up.text
    at_the_bound = {"token_policies": ["wide", "one"]}
    assert admin.post("/v1/auth/approle/role/ci", json=at_the_bound).status_code == 204
    assert login().status_code == 200
    assert login().status_code == 400  # the one use spent by the login that got a token


def test_a_token_whose_policies_grow_past_max_patterns_is_refused_until_they_shrink(
    admin_on_both_stores: TestClient,
) -> None:
    admin = admin_on_both_stores
    _policy(admin, "wide", _globs(MAX_PATTERNS - 1))
    _policy(admin, "grows", ["orders-*"])
    _key(admin)
    made_with_keys = admin.post(
        "/v1/tokens", json={"policies": ["wide", "grows"], "aws_credentials": True}
    ).json()
    made = made_with_keys["token"]
    aws = made_with_keys["aws_access_key_id"], made_with_keys["aws_secret_access_key"]
    once = admin.post("/v1/tokens", json={"policies": ["wide", "grows"], "num_uses": 1})
    once_token = once.json()["token"]

    def encrypt(token: str) -> Any:
        return admin.post("/v1/aead/orders-1/encrypt", json=PLAINTEXT, headers=_as(token))

    assert encrypt(made).status_code == 200
    _policy(admin, "grows", ["orders-*", "payroll-*"])
    for token in (made, once_token, made):
        refused = encrypt(token)
        assert refused.status_code == 403, refused.text
        assert f"{MAX_PATTERNS + 1:,} key-name patterns" in refused.json()["detail"]
    vault = admin.get("/v1/auth/token/lookup-self", headers=_as(made))
    assert vault.status_code == 403, vault.text
    assert vault.json()["errors"][0] == "permission denied"
    assert f"{MAX_PATTERNS + 1:,} key-name patterns" in vault.json()["errors"][1]
    kms = list_keys(admin, *aws, 10)
    assert kms.json()["__type"] == "AccessDeniedException", kms.text

    _policy(admin, "grows", ["orders-*"])
    assert encrypt(made).status_code == 200
    assert list_keys(admin, *aws, 10).status_code == 200
    assert encrypt(once_token).status_code == 200  # its one use was not spent while refused
    assert encrypt(once_token).status_code == 401
