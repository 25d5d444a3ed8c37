"""Tokens bound to address blocks (Vault's `token_bound_cidrs`): a login's token acts only from
its role's blocks (or its AppRole secret id's), on every path, the Vault ones and the native
ones; a token it makes, child or orphan, is bound as it is; a token role binds the tokens made
through it. A refusal is a 403 in the audit trail that names neither the blocks nor the token.
The client's address is the one the server sees (here set on the test client)."""

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.app.ops.test_jwt_odd_input import configured, mounted
from tests.app.routers.test_large_scopes import list_keys
from tests.app.routers.test_unenforced_role_fields import ca_pem
from tests.e2e.issuer import Issuer, public_pem

INSIDE = ("10.1.2.3", 40000)
OUTSIDE = ("10.2.0.1", 40000)
PLAINTEXT = base64.b64encode(b"x").decode()


@pytest.fixture
def admin(app: FastAPI, client: TestClient) -> Iterator[TestClient]:
    headers = {"Authorization": client.headers["Authorization"]}
    with TestClient(app, headers=headers, client=INSIDE) as inside:
        assert inside.post("/v1/keys", json={"name": "orders", "type": "aes256-gcm"}).is_success
        rules = [{"keys": ["orders"], "operations": ["encrypt", "read"]}]
        written = inside.post("/v1/policies/orders", json={"rules": rules, "admin": ["tokens"]})
        assert written.status_code == 200, written.text
        yield inside


def from_address(app: FastAPI, token: str, address: tuple[str, int]) -> TestClient:
    return TestClient(app, headers={"X-Vault-Token": token}, client=address)


def approle_token(admin: TestClient, role: dict[str, Any], secret: dict[str, Any]) -> str:
    written = admin.post("/v1/auth/approle/role/ci", json={"token_policies": "orders", **role})
    assert written.status_code == 204, written.text
    role_id = admin.get("/v1/auth/approle/role/ci/role-id").json()["data"]["role_id"]
    drawn = admin.post("/v1/auth/approle/role/ci/secret-id", json=secret)
    assert drawn.status_code == 200, drawn.text
    login = {"role_id": role_id, "secret_id": drawn.json()["data"]["secret_id"]}
    answer = admin.post("/v1/auth/approle/login", json=login)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["auth"]["client_token"])


def uses(app: FastAPI, token: str, address: tuple[str, int]) -> list[int]:
    """The statuses of a native, a Vault Transit and a Vault token request with `token`."""
    with from_address(app, token, address) as caller:
        return [
            caller.post(
                "/v1/aead/orders/encrypt",
                json={"plaintext": PLAINTEXT},
                headers={"Authorization": f"Bearer {token}"},
            ).status_code,
            caller.post("/v1/transit/encrypt/orders", json={"plaintext": PLAINTEXT}).status_code,
            caller.get("/v1/auth/token/lookup-self").status_code,
        ]


def test_an_approle_token_acts_only_from_its_roles_blocks(app: FastAPI, admin: TestClient) -> None:
    token = approle_token(admin, {"token_bound_cidrs": ["10.1.0.0/16"]}, {})
    assert uses(app, token, INSIDE) == [200, 200, 200]
    assert uses(app, token, OUTSIDE) == [403, 403, 403]
    assert uses(app, token, ("testclient", 1)) == [403, 403, 403]  # no address: none inside
    with from_address(app, token, INSIDE) as caller:
        assert caller.get("/v1/auth/token/lookup-self").json()["data"]["bound_cidrs"] == [
            "10.1.0.0/16"
        ]
    accessor = admin.post("/v1/auth/token/lookup", json={"token": token}).json()["data"]
    shown = admin.get(f"/v1/tokens/{accessor['accessor']}").json()
    assert shown["bound_cidrs"] == ["10.1.0.0/16"]
    refused = admin.get(
        "/v1/audit", params={"principal": accessor["accessor"], "outcome": "403"}
    ).json()["records"]
    assert len(refused) == 6
    assert all("10.1.0.0" not in str(record) and token not in str(record) for record in refused)


def test_a_secret_ids_blocks_take_the_roles_place(app: FastAPI, admin: TestClient) -> None:
    role = {"token_bound_cidrs": ["10.0.0.0/8"]}
    token = approle_token(admin, role, {"token_bound_cidrs": ["10.2.0.0/16"]})
    assert uses(app, token, INSIDE) == [403, 403, 403]
    assert uses(app, token, OUTSIDE) == [200, 200, 200]
    outside_the_role = admin.post(
        "/v1/auth/approle/role/ci/secret-id", json={"token_bound_cidrs": ["192.168.0.0/16"]}
    )
    assert outside_the_role.status_code == 400


def test_an_unbound_token_acts_from_anywhere(app: FastAPI, admin: TestClient) -> None:
    token = approle_token(admin, {}, {})
    assert uses(app, token, OUTSIDE) == [200, 200, 200]
    assert uses(app, token, ("testclient", 1)) == [200, 200, 200]


def test_aws_credentials_of_a_bound_token_sign_only_from_its_blocks(
    app: FastAPI, admin: TestClient
) -> None:
    """The AWS key pair of a token made by a bound token signs KMS requests only from the
    blocks: SigV4 is another way in, not a way around them."""
    token = approle_token(admin, {"token_bound_cidrs": ["10.1.0.0/16"]}, {})
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}, client=INSIDE) as maker:
        made = maker.post("/v1/tokens", json={"policies": ["orders"], "aws_credentials": True})
        assert made.status_code == 201, made.text
    assert made.json()["bound_cidrs"] == ["10.1.0.0/16"]
    pair = (made.json()["aws_access_key_id"], made.json()["aws_secret_access_key"])
    statuses = {}
    for where, address in (("inside", INSIDE), ("outside", OUTSIDE)):
        with TestClient(app, client=address) as caller:
            answer = list_keys(caller, *pair, 10)
            statuses[where] = (answer.status_code, answer.json().get("__type"))
    assert statuses == {"inside": (200, None), "outside": (400, "AccessDeniedException")}


@pytest.mark.parametrize("path", ["/v1/auth/token/create", "/v1/auth/token/create-orphan"])
def test_a_bound_token_makes_only_bound_tokens(app: FastAPI, admin: TestClient, path: str) -> None:
    token = approle_token(admin, {"token_bound_cidrs": ["10.1.0.0/16"]}, {})
    with from_address(app, token, INSIDE) as maker:
        made = maker.post(path, json={"policies": ["orders"]})
        assert made.status_code == 200, made.text
    child = made.json()["auth"]["client_token"]
    assert uses(app, child, OUTSIDE) == [403, 403, 403]
    assert uses(app, child, INSIDE) == [200, 200, 200]


def test_a_token_role_binds_its_tokens(app: FastAPI, admin: TestClient) -> None:
    vault = {"X-Vault-Token": admin.headers["Authorization"].removeprefix("Bearer ")}
    role = {"allowed_policies": ["orders"], "bound_cidrs": "10.2.0.0/16,10.3.0.1"}
    assert admin.post("/v1/auth/token/roles/edge", json=role, headers=vault).status_code == 204
    read = admin.get("/v1/auth/token/roles/edge", headers=vault).json()["data"]
    assert read["token_bound_cidrs"] == ["10.2.0.0/16", "10.3.0.1"]
    made = admin.post("/v1/auth/token/create/edge", json={"policies": ["orders"]}, headers=vault)
    assert made.status_code == 200, made.text
    token = made.json()["auth"]["client_token"]
    assert uses(app, token, OUTSIDE) == [200, 200, 200]
    assert uses(app, token, INSIDE) == [403, 403, 403]
    broken = admin.post(
        "/v1/auth/token/roles/edge", json={"token_bound_cidrs": ["not-a-block"]}, headers=vault
    )
    assert broken.status_code == 400


@pytest.mark.parametrize(
    ("path", "role"),
    [
        (
            "/v1/auth/jwt/role/ci",
            {"role_type": "jwt", "user_claim": "sub", "bound_audiences": "cipherd"},
        ),
        ("/v1/auth/cert/certs/ci", {}),
    ],
)
def test_jwt_and_certificate_roles_keep_their_blocks(
    admin: TestClient, path: str, role: dict[str, Any]
) -> None:
    """The blocks are checked and kept (they bind the tokens of its logins, which
    `tests/e2e/test_jwt_login.py` follows from a real issuer)."""
    mount = path.split("/")[3]
    assert admin.post(f"/v1/sys/auth/{mount}", json={"type": mount}).status_code == 204
    body = {**role, "token_bound_cidrs": "10.1.0.0/16"}
    if mount == "cert":
        body["certificate"] = ca_pem()
    written = admin.post(path, json=body)
    assert written.status_code == 204, written.text
    assert admin.get(path).json()["data"]["token_bound_cidrs"] == ["10.1.0.0/16"]
    refused = admin.post(path, json={**body, "token_bound_cidrs": "10.1.0.0/33"})
    assert refused.status_code == 400


def test_a_role_stored_before_the_blocks_were_known_still_logs_in(
    app: FastAPI, admin: TestClient
) -> None:
    """A JWT role written by an older version has no `token_bound_cidrs`: its logins get
    unbound tokens, as Vault's default says (it was a 500)."""
    issuer = Issuer("https://issuer.example")
    key = issuer.rotate()
    mounted(admin)
    configured(admin, {"jwt_validation_pubkeys": [public_pem(key)]})
    store = app.state.services.store
    mount = next(m for m in store.auth_mounts.all() if m.path == "jwt")
    older = store.auth_roles.get(mount.accessor, "r")
    del older["token_bound_cidrs"]
    assert store.auth_roles.put(mount.accessor, "r", older, 10)
    jwt = issuer.sign(issuer.claims(sub="ci", aud="cipherd"))
    answer = admin.post("/v1/auth/jwt/login", json={"role": "r", "jwt": jwt})
    assert answer.status_code == 200, answer.text
    assert uses(app, answer.json()["auth"]["client_token"], OUTSIDE)[2] == 200


def test_a_request_from_outside_spends_none_of_the_tokens_uses(
    app: FastAPI, admin: TestClient
) -> None:
    """Else anyone holding a leaked token could spend it from anywhere."""
    token = approle_token(admin, {"token_bound_cidrs": ["10.1.0.0/16"], "token_num_uses": 2}, {})
    with from_address(app, token, OUTSIDE) as outside:
        for _ in range(3):
            assert outside.get("/v1/auth/token/lookup-self").status_code == 403
    with from_address(app, token, INSIDE) as inside:
        found = inside.get("/v1/auth/token/lookup-self")
        assert found.status_code == 200, found.text
        assert found.json()["data"]["num_uses"] == 1
