"""Named policies, tokens with a life and auth mounts through the native API: a policy
change narrows its tokens on their next request, children go with their parent, uses run
out, a token looks itself up, renews and revokes itself."""

import base64
import json
import uuid
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from app.ops.grants import Operation
from app.ops.token_values import hash_token

PLAINTEXT = base64.b64encode(b"x").decode()


def make_token(client: TestClient, **body: object) -> dict:
    response = client.post("/v1/tokens", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def as_token(app: FastAPI, token: str) -> TestClient:
    return TestClient(app, headers={"Authorization": f"Bearer {token}"})


def test_a_policy_change_narrows_its_tokens_on_the_next_request(
    client: TestClient, app: FastAPI
) -> None:
    for name in ("orders-1", "payroll"):
        assert client.post("/v1/keys", json={"name": name, "type": "aes256-gcm"}).status_code == 201
    rules = [{"keys": ["orders-*"], "operations": ["encrypt", "decrypt"]}]
    written = client.post("/v1/policies/orders", json={"rules": rules})
    assert written.status_code == 200, written.text
    assert written.json()["version"] == 1
    token = make_token(client, policies=["orders"])
    assert token["policies"] == ["default", "orders"]
    with as_token(app, token["token"]) as user:
        assert (
            user.post("/v1/aead/orders-1/encrypt", json={"plaintext": PLAINTEXT}).status_code == 200
        )
        assert (
            user.post("/v1/aead/payroll/encrypt", json={"plaintext": PLAINTEXT}).status_code == 403
        )
        narrowed = [{"keys": ["orders-*"], "operations": ["decrypt"]}]
        changed = client.post("/v1/policies/orders", json={"rules": narrowed})
        assert changed.json()["version"] == 2
        assert (
            user.post("/v1/aead/orders-1/encrypt", json={"plaintext": PLAINTEXT}).status_code == 403
        )
        assert client.delete("/v1/policies/orders").status_code == 204
        assert client.get("/v1/policies/orders").status_code == 404
        assert user.get("/v1/policies").status_code == 403


def test_a_vault_policy_names_keys_that_begin_with_an_underscore(
    client: TestClient, app: FastAPI
) -> None:
    for name in ("_under-1", "over-1"):
        assert client.post("/v1/keys", json={"name": name, "type": "aes256-gcm"}).status_code == 201
    text = 'path "transit/encrypt/_under*" { capabilities = ["update"] }'
    assert client.put("/v1/sys/policies/acl/under", json={"policy": text}).status_code == 204
    token = make_token(client, policies=["under"])
    with as_token(app, token["token"]) as user:
        for name, status in (("_under-1", 200), ("over-1", 403)):
            answer = user.post(f"/v1/transit/encrypt/{name}", json={"plaintext": PLAINTEXT})
            assert answer.status_code == status, (name, answer.text)


def test_policies_grant_admin_operations_by_name(client: TestClient, app: FastAPI) -> None:
    client.post("/v1/policies/token-maker", json={"admin": ["tokens"]})
    maker = make_token(client, policies=["token-maker"])
    with as_token(app, maker["token"]) as user:
        assert user.get("/v1/tokens").status_code == 200
        assert user.get("/v1/policies").status_code == 403
        # It gives only what it carries itself.
        refused = user.post("/v1/tokens", json={"policies": ["other"]})
        assert refused.status_code == 403, refused.text
        child = user.post("/v1/tokens", json={"policies": ["token-maker"], "ttl_seconds": 60})
        assert child.status_code == 201, child.text
    assert child.json()["parent"] == maker["id"]
    assert client.delete(f"/v1/tokens/{maker['id']}").status_code == 204
    assert client.get(f"/v1/tokens/{child.json()['id']}").status_code == 404


def test_a_token_maker_gives_no_scope_it_lacks(client: TestClient, app: FastAPI) -> None:
    rules = [{"keys": ["orders-*"], "operations": ["encrypt", "public"]}]
    client.post("/v1/policies/orders-maker", json={"admin": ["tokens"], "rules": rules})
    bare = make_token(client, keys=["nothing"], operations=["read"], policies=["token-maker"])
    maker = make_token(client, policies=["orders-maker"])
    client.post("/v1/policies/token-maker", json={"admin": ["tokens"]})
    with as_token(app, maker["token"]) as user:
        for keys, operations in (
            (["orders-eu"], ["encrypt"]),
            (["orders-eu-*", "orders-us"], ["encrypt", "verify"]),  # public gives verify
        ):
            made = user.post("/v1/tokens", json={"keys": keys, "operations": operations})
            assert made.status_code == 201, made.text
        for keys, operations in (
            (["*"], ["encrypt"]),
            (["order*"], ["encrypt"]),
            (["orders-eu"], ["decrypt"]),
            (["orders-eu"], ["encrypt", "rotate"]),
        ):
            refused = user.post("/v1/tokens", json={"keys": keys, "operations": operations})
            assert refused.status_code == 403, (keys, operations, refused.text)
            assert "lacks the scope" in refused.json()["detail"]
    # The comparison has a bound, checked before it begins.
    held = [f"team-{n:03}-eu-west-*" for n in range(100)]
    client.post(
        "/v1/policies/wide",
        json={"admin": ["tokens"], "rules": [{"keys": held, "operations": ["encrypt"]}]},
    )
    wide = make_token(client, policies=["wide"])
    with as_token(app, wide["token"]) as user:
        asked = [f"other-{n:03}-{'y' * 100}" for n in range(100)]
        refused = user.post("/v1/tokens", json={"keys": asked, "operations": ["encrypt"]})
        assert refused.status_code == 403, refused.text
        assert "too wide to check" in refused.json()["detail"]
        within = user.post(
            "/v1/tokens", json={"keys": [held[7][:-1] + "eu"], "operations": ["encrypt"]}
        )
        assert within.status_code == 201, within.text
    # The admin operation `tokens` alone gives no key: it cannot make a token that has one.
    every = [operation.value for operation in Operation]
    with as_token(app, bare["token"]) as user:
        refused = user.post("/v1/tokens", json={"keys": ["*"], "operations": every})
        assert refused.status_code == 403, refused.text


def test_the_audit_sys_and_backup_admin_operations_each_open_their_routes(
    client: TestClient, app: FastAPI
) -> None:
    assert client.post(
        "/v1/keys", json={"name": "k", "type": "aez", "allow_backup": True}
    ).is_success
    transit = {"exportable": True, "allow_plaintext_backup": True}
    assert client.post("/v1/transit/keys/t", json=transit).status_code == 200
    tokens = {}
    for admin in ("audit", "sys", "backup"):
        assert client.post(f"/v1/policies/{admin}-role", json={"admin": [admin]}).is_success
        tokens[admin] = make_token(client, policies=[f"{admin}-role"])["token"]
    with as_token(app, tokens["audit"]) as auditor:
        assert auditor.get("/v1/audit").status_code == 200
        assert auditor.post("/v1/audit/verify").status_code == 200
        for refused in (
            auditor.get("/v1/sys/keyring"),
            auditor.get("/v1/sys/wrapping-key"),
            auditor.get("/v1/sys/mounts"),
            auditor.get("/v1/transit/backup/t"),
        ):
            assert refused.status_code == 403, refused.text
    with as_token(app, tokens["sys"]) as operator:
        assert operator.get("/v1/sys/keyring").json()["term"] == 1
        assert operator.post("/v1/sys/keyring/rotate").json()["term"] == 2
        assert operator.get("/v1/sys/wrapping-key").status_code == 200
        assert "transit/" in operator.get("/v1/sys/mounts").json()["data"]
        assert operator.post("/v1/sys/mounts/payments", json={"type": "transit"}).status_code == 204
        # The answer to the admin token's rotation is the new admin token: the admin token's own.
        refused = operator.post("/v1/sys/admin-token/rotate")
        assert refused.status_code == 403, refused.text
        assert operator.get("/v1/audit").status_code == 403
        to = {"wrapping_key": operator.get("/v1/sys/wrapping-key").json()["public_key"]}
        assert operator.post("/v1/keys/k/backup", json=to).status_code == 403
    with as_token(app, tokens["backup"]) as backer:
        to = {"wrapping_key": backer.get("/v1/sys/wrapping-key").json()["public_key"]}
        blob = backer.post("/v1/keys/k/backup", json=to).json()["backup"]
        restored = backer.post("/v1/keys/import", json={"backup": blob, "name": "k-copy"})
        assert restored.status_code == 201, restored.text
        made = backer.get("/v1/transit/backup/t").json()["data"]["backup"]
        assert backer.post("/v1/transit/restore/t-copy", json={"backup": made}).status_code == 204
        # It backs keys up and restores them, and nothing else.
        assert backer.post("/v1/keys", json={"name": "new", "type": "aez"}).status_code == 403
        assert backer.get("/v1/sys/keyring").status_code == 403
        assert backer.get("/v1/audit").status_code == 403
    assert client.get("/v1/keys/k-copy").json()["allow_backup"] is True
    assert client.get("/v1/transit/keys/t-copy").status_code == 200


def test_the_built_in_policies(client: TestClient) -> None:
    assert client.get("/v1/policies").json()["policies"] == ["default", "root"]
    assert client.post("/v1/policies/root", json={}).status_code == 422
    assert client.delete("/v1/policies/default").status_code == 422
    assert client.get("/v1/policies/root").json()["admin"] == [
        "tokens",
        "policies",
        "auth",
        "audit",
        "backup",
        "sys",
    ]
    bad = client.post("/v1/policies/p", json={"rules": [{"keys": ["a"], "operations": ["fly"]}]})
    assert bad.status_code == 422


def test_a_token_runs_out_of_uses(client: TestClient, app: FastAPI) -> None:
    token = make_token(client, keys=["*"], operations=["read"], num_uses=2)
    with as_token(app, token["token"]) as user:
        assert user.get("/v1/keys").status_code == 200
        assert user.get("/v1/keys").status_code == 200
        assert user.get("/v1/keys").status_code == 401


def test_a_token_looks_itself_up_renews_and_revokes_itself(
    client: TestClient, app: FastAPI
) -> None:
    token = make_token(client, keys=["*"], operations=["read"], ttl_seconds=60, max_ttl_seconds=90)
    with as_token(app, token["token"]) as user:
        own = user.get("/v1/tokens/self").json()
        assert (own["id"], own["renewable"], own["identity"]) == (token["id"], True, "token:admin")
        renewed = user.post("/v1/tokens/self/renew", json={"increment_seconds": 3600})
        assert renewed.status_code == 200, renewed.text
        assert renewed.json()["expires_at"] == own["max_expires_at"]
        assert user.delete("/v1/tokens/self").status_code == 204
        assert user.get("/v1/tokens/self").status_code == 401
    assert client.get("/v1/tokens/self").status_code == 422


def test_a_periodic_token_gets_its_period_at_each_renewal(client: TestClient) -> None:
    token = make_token(client, keys=["*"], operations=["read"], period_seconds=600)
    renewed = client.post(f"/v1/tokens/{token['id']}/renew", json={"increment_seconds": 5})
    assert renewed.status_code == 200
    assert renewed.json()["period_seconds"] == 600
    assert renewed.json()["max_expires_at"] is None
    fixed = make_token(client, keys=["*"], operations=["read"], renewable=False, ttl_seconds=60)
    assert client.post(f"/v1/tokens/{fixed['id']}/renew", json={}).status_code == 422


def test_auth_methods_are_enabled_listed_and_disabled(client: TestClient) -> None:
    assert list(client.get("/v1/sys/auth").json()["data"]) == ["token/", "approle/"]
    # AppRole is built in at approle: enabling it there changes nothing, disabling it is refused.
    assert client.post("/v1/sys/auth/approle", json={"type": "approle"}).status_code == 204
    assert client.delete("/v1/sys/auth/approle").status_code == 400
    assert client.post("/v1/sys/auth/ci", json={"type": "approle"}).status_code == 204
    assert client.post("/v1/sys/auth/ci", json={"type": "approle"}).status_code == 400
    assert client.post("/v1/sys/auth/x", json={"type": "ldap"}).status_code == 400
    assert client.post("/v1/sys/auth/token2", json={"type": "token"}).status_code == 400
    listed = client.get("/v1/sys/auth").json()
    assert listed["ci/"]["type"] == "approle"
    assert client.delete("/v1/sys/auth/ci").status_code == 204
    assert client.delete("/v1/sys/auth/token").status_code == 400
    assert list(client.get("/v1/sys/auth").json()["data"]) == ["token/", "approle/"]


def test_the_admin_token_rotates_and_the_former_one_is_refused(client: TestClient) -> None:
    rotated = client.post("/v1/sys/admin-token/rotate")
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["admin_token"]
    assert client.get("/v1/policies").status_code == 401
    client.headers["Authorization"] = f"Bearer {new}"
    assert client.get("/v1/policies").status_code == 200
    records = client.get("/v1/audit", params={"operation": "sys_rotate_admin_token"}).json()
    assert [r["status"] for r in records["records"]] == [200]
    assert new not in str(records)


def test_hcl_outside_the_subset_is_a_clear_400(client: TestClient) -> None:
    for text, said in (
        ('path "secret/data/x" { capabilities = ["read"] }', "only <Transit mount>/<verb>"),
        ('path "transit/encrypt/x" { capabilities = ["deny"] }', "deny does not map"),
        ('path "transit/encrypt/x" { capabilities = ["update"] allowed_parameters = {} }', ""),
        # Making keys through Transit takes the admin token here.
        ('path "transit/keys/orders" { capabilities = ["create", "read"] }', "only read maps"),
        # Vault's rewrap gives no plaintext; here rewrap needs decrypt.
        ('path "transit/rewrap/x" { capabilities = ["update"] }', "rewrap does not map"),
        # A block that would grant nothing here, where Vault grants a listing or a read.
        ('path "transit/keys/" { capabilities = ["list"] }', "list grants nothing here"),
        ('path "transit/encrypt/x" { capabilities = ["read"] }', "takes update"),
        # `create` alone makes a missing key on a first encryption: the admin token's here.
        ('path "transit/decrypt/x" { capabilities = ["create"] }', "takes update"),
        # Vault globs only with a trailing *: anything else would grant more here.
        ('path "transit/encrypt/k*1" { capabilities = ["update"] }', "a trailing *"),
        ('path "transit/encrypt/k?" { capabilities = ["update"] }', "a trailing *"),
        ('path "transit/encrypt/[a-z]1" { capabilities = ["update"] }', "a trailing *"),
        # Paths of one or two segments (a 500 once).
        ('path "*" { capabilities = ["read"] }', "only <Transit mount>/<verb>"),
        ('path "transit" { capabilities = ["read"] }', "only <Transit mount>/<verb>"),
        # Reading policies would be writing them here, and so granting anything.
        ('path "sys/policies/acl/*" { capabilities = ["read", "list"] }', "reading alone"),
        ('path "sys/auth/*" { capabilities = ["read"] }', "reading alone"),
        # Part of an admin operation would be all of it here.
        ('path "auth/token/create" { capabilities = ["update"] }', "whole family"),
        ('path "auth/token/lookup" { capabilities = ["update"] }', "whole family"),
        ('path "sys/policies/acl/scratch" { capabilities = ["update"] }', "whole family"),
        ('path "sys/auth/approle" { capabilities = ["sudo"] }', "whole family"),
    ):
        refused = client.put("/v1/sys/policies/acl/p", json={"policy": text})
        assert refused.status_code == 400, refused.text
        assert said in refused.json()["errors"][0]
    written = client.put(
        "/v1/sys/policies/acl/p",
        json={
            "policy": 'path "transit/encrypt/orders-*" { capabilities = ["update"] }\n'
            'path "auth/token/*" { capabilities = ["create", "update"] }'
        },
    )
    assert written.status_code == 204, written.text
    native = client.get("/v1/policies/p").json()
    assert native["rules"] == [
        {"keys": ["orders-*"], "operations": ["encrypt"], "mount": "transit"}
    ]
    assert native["admin"] == ["tokens"]
    # Reading the audit trail is all `audit` is; a block with no capability grants nothing.
    written = client.put(
        "/v1/sys/policies/acl/q",
        json={
            "policy": 'path "sys/audit" { capabilities = ["read"] }\n'
            'path "sys/mounts/*" { capabilities = [] }'
        },
    )
    assert written.status_code == 204, written.text
    assert client.get("/v1/policies/q").json()["admin"] == ["audit"]


def test_a_native_policy_read_as_hcl_names_what_no_path_says(client: TestClient) -> None:
    document = {
        "rules": [{"keys": ["orders-*"], "operations": ["encrypt", "rotate", "keygen"]}],
        "admin": ["tokens", "backup"],
    }
    assert client.post("/v1/policies/p", json=document).status_code == 200
    text = client.get("/v1/sys/policies/acl/p").json()["data"]["policy"]
    assert 'path "transit/encrypt/orders-*" {\n  capabilities = ["update"]\n}' in text
    assert text.endswith(
        "# The policy also grants, with no path that says it:\n"
        "#   rotate, keygen on the keys orders-*\n"
        "#   the keys orders-* by native name, in every mount\n"
        "#   the admin operation backup"
    )


@pytest.mark.parametrize("method", ["approle", "jwt", "cert"])
def test_a_login_body_is_held_to_64_kib(app: FastAPI, client: TestClient, method: str) -> None:
    """Anyone may log in, without a token: a login's body (a role id and secret id, a JWT of at
    most 16 KiB) is held to 64 KiB, not to the JSON limit of 32 MiB."""
    assert client.post(f"/v1/sys/auth/{method}", json={"type": method}).status_code == 204
    padding = {f"f{i}": i for i in range(10_000)}  # about 110 KB of fields no login takes
    with TestClient(app) as anonymous:
        refused = anonymous.post(f"/v1/auth/{method}/login", json={"role": "r", **padding})
        assert refused.status_code == 413, refused.text
        assert refused.json()["errors"] == [
            "the request body is over this service's limit of 65536 bytes"
        ]
        small = anonymous.post(f"/v1/auth/{method}/login", json={"role": "r", "f": 1})
        assert small.status_code in (400, 403), small.text  # read, then refused as a login


def test_a_token_lookup_by_accessor_checks_the_token_before_the_body(
    client: TestClient, app: FastAPI
) -> None:
    scoped = make_token(client, keys=["*"], operations=["read"])
    with as_token(app, scoped["token"]) as user:
        for path in ("lookup-accessor", "renew-accessor", "revoke-accessor"):
            answer = user.post(f"/v1/auth/token/{path}", content=b"{not json")
            assert answer.status_code == 403, (path, answer.text)


def test_vault_revoke_by_value_takes_the_callers_own_or_needs_the_tokens_operation(
    client: TestClient, app: FastAPI
) -> None:
    mine = make_token(client, keys=["*"], operations=["read"])
    other = make_token(client, keys=["*"], operations=["read"])
    with as_token(app, mine["token"]) as user:
        for token in (other["token"], "s.not-a-token-of-this-service"):
            refused = user.post("/v1/auth/token/revoke", json={"token": token})
            assert refused.status_code == 403, refused.text
        assert user.post("/v1/auth/token/revoke", json={"token": mine["token"]}).status_code == 204
        assert user.get("/v1/keys").status_code == 401
    with as_token(app, other["token"]) as still:
        assert still.get("/v1/keys").status_code == 200
    unknown = client.post("/v1/auth/token/revoke", json={"token": "s.not-a-token-of-this-service"})
    assert unknown.status_code == 204
    assert client.post("/v1/auth/token/revoke", json={"token": other["token"]}).status_code == 204
    with as_token(app, other["token"]) as gone:
        assert gone.get("/v1/keys").status_code == 401


def test_a_secret_ids_metadata_leaves_room_for_the_role_name(
    app: FastAPI, client: TestClient
) -> None:
    """A login's token carries the secret id's metadata and `role_name`, within the 64 entries a
    token may carry: a secret id of 64 entries could never log in, and each try spent a use."""
    assert client.post("/v1/sys/auth/approle", json={"type": "approle"}).status_code == 204
    assert client.post("/v1/auth/approle/role/ci", json={}).status_code == 204
    role_id = client.get("/v1/auth/approle/role/ci/role-id").json()["data"]["role_id"]

    def draw(entries: int) -> Any:
        metadata = json.dumps({f"k{i}": "v" for i in range(entries)})
        return client.post("/v1/auth/approle/role/ci/secret-id", json={"metadata": metadata})

    refused = draw(64)
    assert refused.status_code == 400, refused.text
    assert "at most 63 entries" in refused.json()["errors"][0]
    secret_id = draw(63).json()["data"]["secret_id"]
    with TestClient(app) as anonymous:
        login = anonymous.post(
            "/v1/auth/approle/login", json={"role_id": role_id, "secret_id": secret_id}
        )
    assert login.status_code == 200, login.text
    assert len(login.json()["auth"]["metadata"]) == 64


def _compiled() -> float:
    """How many rules' globs this process has compiled for checks."""
    labels = {"cache": "key_patterns", "event": "miss"}
    return REGISTRY.get_sample_value("cipherd_cache_events_total", labels) or 0.0


def test_a_token_s_globs_are_compiled_off_the_event_loop(app: FastAPI, client: TestClient) -> None:
    """A request served from the caches runs its checks on the event loop: its rules' globs must
    be compiled already, when the token's principal was made in a worker thread (4,000 complex
    globs took 1.25 s, the whole worker stalled)."""
    team = uuid.uuid4().hex  # globs no earlier test has compiled in this process
    rules = [{"keys": [f"{team}-{g}-*" for g in range(100)], "operations": ["read"]}]
    assert client.post("/v1/policies/teams", json={"rules": rules}).status_code == 200
    made = make_token(client, policies=["teams"], keys=[f"{team}-own-*"], operations=["encrypt"])
    record = app.state.services.store.tokens.by_hash(hash_token(made["token"]))
    misses = _compiled()
    principal = app.state.services.auth.principal_of_record(record)
    assert len(principal.rules) == 2
    assert _compiled() == misses + 2  # compiled by principal_of_record
    assert all(rule.allows(Operation.READ, f"{team}-7-x") for rule in principal.rules[1:])
    assert _compiled() == misses + 2  # and not again by a check
