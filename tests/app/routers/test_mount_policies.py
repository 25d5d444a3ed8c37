"""A Vault policy names a Transit mount by its path, as in Vault: `transit/decrypt/*` is every key
of the mount `transit` and none of another mount's, by any path or API; `payments/decrypt/*` is
the mount `payments`'s keys, from when a mount is at that path until it moves away. A mount
reaches its own keys only, not those of a mount whose prefix starts with its own."""

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from fastapi import FastAPI
from fastapi.testclient import TestClient

PLAINTEXT = base64.b64encode(b"card 4111").decode()


def vault(client: TestClient) -> dict[str, str]:
    return {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}


def mount(client: TestClient, path: str) -> None:
    answer = client.post(f"/v1/sys/mounts/{path}", headers=vault(client), json={"type": "transit"})
    assert answer.status_code == 204, answer.text


def sealed(client: TestClient, path: str) -> str:
    """A ciphertext of PLAINTEXT under the key at `<path>` (made on the way)."""
    answer = client.post(f"/v1/{path}", headers=vault(client), json={"plaintext": PLAINTEXT})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["data"]["ciphertext"])


def holder_of(client: TestClient, app: FastAPI, policy: str) -> TestClient:
    """A client whose token carries only the Vault policy `policy`."""
    written = client.put(
        "/v1/sys/policies/acl/scoped", headers=vault(client), json={"policy": policy}
    )
    assert written.status_code == 204, written.text
    made = client.post(
        "/v1/auth/token/create",
        headers=vault(client),
        json={"policies": ["scoped"], "no_default_policy": True},
    )
    assert made.status_code == 200, made.text
    return TestClient(app, headers={"X-Vault-Token": made.json()["auth"]["client_token"]})


def opened(holder: TestClient, path: str, ciphertext: str) -> int:
    return holder.post(f"/v1/{path}", json={"ciphertext": ciphertext}).status_code


def opened_natively(holder: TestClient, name: str, ciphertext: str) -> int:
    """The same decryption by the native API, with the same token as a bearer token."""
    bearer = {"Authorization": "Bearer " + holder.headers["X-Vault-Token"]}
    body = {"ciphertext": ciphertext.removeprefix("vault:v1:")}
    return holder.post(f"/v1/aead/{name}/decrypt", headers=bearer, json=body).status_code


@pytest.fixture
def keys(client: TestClient) -> Iterator[dict[str, str]]:
    """Ciphertexts under `transit`'s key `orders` and the mount `payments`'s key `orders`."""
    mount(client, "payments")
    yield {
        "transit": sealed(client, "transit/encrypt/orders"),
        "payments": sealed(client, "payments/encrypt/orders"),
    }


def test_a_transit_policy_reaches_no_other_mounts_keys(
    client: TestClient, app: FastAPI, keys: dict[str, str]
) -> None:
    with holder_of(client, app, 'path "transit/decrypt/*" { capabilities = ["update"] }') as holder:
        assert opened(holder, "transit/decrypt/orders", keys["transit"]) == 200
        assert opened(holder, "payments/decrypt/orders", keys["payments"]) == 403
        assert opened_natively(holder, "payments.orders", keys["payments"]) == 403
        assert opened_natively(holder, "orders", keys["transit"]) == 200
        # Nor by the default mount's path: refused as outside the token's scope, before the
        # answer could name the other mount.
        reached = holder.post(
            "/v1/transit/decrypt/payments.orders", json={"ciphertext": keys["payments"]}
        )
        assert reached.status_code == 403, reached.text
        assert "payments'" not in reached.text.replace("'payments.orders'", "")
        capabilities = holder.post(
            "/v1/sys/capabilities-self",
            json={"paths": ["transit/decrypt/orders", "payments/decrypt/orders"]},
        ).json()
        assert capabilities["transit/decrypt/orders"] == ["update"]
        assert capabilities["payments/decrypt/orders"] == ["deny"]
    stored = client.get("/v1/policies/scoped").json()
    assert stored["rules"] == [{"keys": ["*"], "operations": ["decrypt"], "mount": "transit"}]


def test_a_policy_on_another_mount_follows_the_mount_at_its_path(
    client: TestClient, app: FastAPI, keys: dict[str, str]
) -> None:
    policy = 'path "payments/decrypt/ord*" { capabilities = ["update"] }'
    with holder_of(client, app, policy) as holder:
        assert opened(holder, "payments/decrypt/orders", keys["payments"]) == 200
        assert opened(holder, "transit/decrypt/orders", keys["transit"]) == 403
        # The native API names the same key by its native name.
        assert opened_natively(holder, "payments.orders", keys["payments"]) == 200
        moved = client.post(
            "/v1/sys/remount",
            headers=vault(client),
            json={"from": "payments", "to": "billing"},
        )
        assert moved.status_code == 200, moved.text
        # The policy names a path: the mount that moved away is no longer under it.
        assert opened(holder, "billing/decrypt/orders", keys["payments"]) == 403
        mount(client, "payments")  # a new mount at the path: its keys, not the old ones
        again = sealed(client, "payments/encrypt/orders")
        assert opened(holder, "payments/decrypt/orders", again) == 200
        assert opened(holder, "billing/decrypt/orders", keys["payments"]) == 403


def test_a_policy_may_name_a_mount_before_it_is_there(client: TestClient, app: FastAPI) -> None:
    with holder_of(client, app, 'path "later/encrypt/*" { capabilities = ["update"] }') as holder:
        assert (
            holder.post("/v1/transit/encrypt/x", json={"plaintext": PLAINTEXT}).status_code == 403
        )
        mount(client, "later")
        client.post("/v1/later/keys/x", headers=vault(client)).raise_for_status()
        answer = holder.post("/v1/later/encrypt/x", json={"plaintext": PLAINTEXT})
        assert answer.status_code == 200, answer.text


def test_a_mount_reaches_none_of_a_nested_mounts_keys(client: TestClient) -> None:
    """The mount `a.b`'s prefix, `a.b.`, starts with `a`'s, `a.`: its keys are not `a`'s."""
    mount(client, "a")
    mount(client, "a.b")
    sealed(client, "a/encrypt/own")
    nested = sealed(client, "a.b/encrypt/k")
    listed = client.get("/v1/a/keys", headers=vault(client), params={"list": "true"}).json()
    assert listed["data"]["keys"] == ["own"]
    for path in ("a/keys/b.k", "transit/keys/a.b.k", "transit/keys/a.own"):
        answer = client.get(f"/v1/{path}", headers=vault(client))
        assert answer.status_code == 400, (path, answer.text)
        assert "each mount reaches its own keys only" in answer.json()["errors"][0]
    refused = client.post("/v1/a/decrypt/b.k", headers=vault(client), json={"ciphertext": nested})
    assert refused.status_code == 400, refused.text
    created = client.post("/v1/transit/keys/a.new", headers=vault(client))
    assert created.status_code == 400, created.text
    assert client.get("/v1/keys/a.new").status_code == 404


def test_a_child_token_reaches_no_key_its_makers_mount_rule_excludes(
    client: TestClient, app: FastAPI
) -> None:
    """A maker held to one mount's keys gives no inline scope that reaches another mount's,
    however the pattern is written; within its mount it gives what it has."""
    mount(client, "payments")
    mount(client, "payments.eu")
    policies = {
        "in-transit": {"keys": ["*"], "operations": ["encrypt", "decrypt"], "mount": "transit"},
        "in-payments": {"keys": ["*"], "operations": ["encrypt"], "mount": "payments"},
    }
    for name, rule in policies.items():
        written = client.post(f"/v1/policies/{name}", json={"rules": [rule], "admin": ["tokens"]})
        assert written.status_code == 200, written.text
    cases = {
        "in-transit": {
            "*": 403,
            "p*": 403,
            "payments.*": 403,
            "payments.card": 403,
            "orders-*": 201,
            "orders": 201,
        },
        "in-payments": {
            "payments.*": 403,
            "payments.eu.*": 403,
            "payments.e*": 403,
            "payments.card": 201,
            "payments.c*": 201,
            "*": 403,
        },
    }
    for policy, asked in cases.items():
        made = client.post("/v1/tokens", json={"policies": [policy]})
        assert made.status_code == 201, made.text
        bearer = {"Authorization": f"Bearer {made.json()['token']}"}
        operation = "decrypt" if policy == "in-transit" else "encrypt"
        for pattern, status in asked.items():
            child = client.post(
                "/v1/tokens",
                headers=bearer,
                json={"keys": [pattern], "operations": [operation]},
            )
            assert child.status_code == status, (policy, pattern, child.text)


def test_a_restore_names_no_key_of_another_mount(client: TestClient) -> None:
    """A restore that takes its name from the body (or the backup) is held to its mount's keys
    too."""
    mount(client, "payments")
    sealed(client, "transit/encrypt/portable")
    client.post(
        "/v1/transit/keys/portable/config",
        headers=vault(client),
        json={"exportable": True, "allow_plaintext_backup": True},
    ).raise_for_status()
    blob = client.get("/v1/transit/backup/portable", headers=vault(client)).json()["data"]["backup"]
    for body in ({"backup": blob, "name": "payments.stolen"},):
        answer = client.post("/v1/transit/restore", headers=vault(client), json=body)
        assert answer.status_code == 400, answer.text
        assert "each mount reaches its own keys only" in answer.json()["errors"][0]
    assert client.get("/v1/keys/payments.stolen").status_code == 404
    fine = client.post(
        "/v1/transit/restore", headers=vault(client), json={"backup": blob, "name": "copy"}
    )
    assert fine.status_code == 204, fine.text


def _payments_keys(client: TestClient) -> list[str]:
    """The mount `payments`'s keys `a` and `z1`-`z3`, and between them more of the nested
    mount `payments.eu`'s than a page holds: the native names of `payments`'s."""
    mount(client, "payments")
    mount(client, "payments.eu")
    for path in ("payments/keys/a", *(f"payments.eu/keys/k{i:02}" for i in range(8))):
        made = client.post(f"/v1/{path}", headers=vault(client))
        assert made.status_code in (200, 204), made.text
    for path in ("payments/keys/z1", "payments/keys/z2", "payments/keys/z3"):
        assert client.post(f"/v1/{path}", headers=vault(client)).status_code in (200, 204)
    return ["payments.a", "payments.z1", "payments.z2", "payments.z3"]


def test_a_key_listing_pages_past_the_keys_of_a_nested_mount(
    client: TestClient, app: FastAPI
) -> None:
    """A token held to the mount `payments` matches `payments.eu.*` by its pattern, but its
    rule excludes them, the keys of the mount `payments.eu`. More of them than a page holds,
    between its own keys, neither end its listing early nor show in it, as keys or as `next`;
    and the same for a rule that matches keys but gives another operation than `read`."""
    own = _payments_keys(client)
    rules = {
        "payments-reader": [{"keys": ["*"], "operations": ["read"], "mount": "payments"}],
        # Every key matches, but only `payments.a` and `payments.z*` may be read.
        "mixed": [
            {"keys": ["*"], "operations": ["encrypt"]},
            {"keys": ["payments.a", "payments.z*"], "operations": ["read"]},
        ],
    }
    for policy, rule in rules.items():
        written = client.post(f"/v1/policies/{policy}", json={"rules": rule})
        assert written.status_code == 200, written.text
        made = client.post("/v1/tokens", json={"policies": [policy]})
        assert made.status_code == 201, made.text
        bearer = {"Authorization": f"Bearer {made.json()['token']}"}
        for limit in (1, 2, 3, 100):
            listed: list[str] = []
            after = None
            for _ in range(10):
                params = {"limit": limit, **({"after": after} if after else {})}
                answer = client.get("/v1/keys", headers=bearer, params=params)
                assert answer.status_code == 200, answer.text
                page = answer.json()
                listed += [key["name"] for key in page["keys"]]
                if (after := page["next"]) is None:
                    break
                assert after in own, (policy, limit, after)
            assert listed == own, (policy, limit)


def _kms(client: TestClient, credentials: dict[str, Any], target: str, body: Any) -> Any:
    """A KMS call, signed with the token's AWS key pair."""
    content = json.dumps(body).encode()
    request = AWSRequest(
        "POST",
        "http://testserver/",
        data=content,
        headers={
            "X-Amz-Target": f"TrentService.{target}",
            "Content-Type": "application/x-amz-json-1.1",
        },
    )
    signer = ReadOnlyCredentials(
        credentials["aws_access_key_id"], credentials["aws_secret_access_key"], None
    )
    SigV4Auth(signer, "kms", "eu-west-3").add_auth(request)
    answer = client.post("/", headers=dict(request.prepare().headers), content=content)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_kms_listings_page_past_the_keys_of_a_nested_mount(
    client: TestClient, app: FastAPI
) -> None:
    """ListKeys and ListAliases of the same token: every key (and alias of one) it may read,
    none of the nested mount's, and a page of aliases is one read of Limit + 1 of them."""
    own = _payments_keys(client)
    store = app.state.services.store
    for name in [*own, *(f"payments.eu.k{i:02}" for i in range(8))]:
        store.kms_aliases.add(f"alias/of-{name}", name)
    rule = {"keys": ["*"], "operations": ["read"], "mount": "payments"}
    assert client.post("/v1/policies/reader", json={"rules": [rule]}).status_code == 200
    made = client.post("/v1/tokens", json={"policies": ["reader"], "aws_credentials": True})
    assert made.status_code == 201, made.text
    credentials = made.json()
    reads: list[int] = []
    list_aliases = store.kms_aliases.list

    def counted(after: Any, limit: int, *args: Any, **kwargs: Any) -> Any:
        reads.append(limit)
        return list_aliases(after, limit, *args, **kwargs)

    store.kms_aliases.list = counted
    for limit in (1, 2, 100):
        keys: list[str] = []
        aliases: list[str] = []
        for target, listed, field in (
            ("ListKeys", keys, "KeyId"),
            ("ListAliases", aliases, "TargetKeyId"),
        ):
            marker = None
            for _ in range(10):
                body = {"Limit": limit, **({"Marker": marker} if marker else {})}
                page = _kms(client, credentials, target, body)
                listed += [entry[field] for entry in page[target.removeprefix("List")]]
                if not page["Truncated"]:
                    break
                marker = page["NextMarker"]
                assert marker.removeprefix("alias/of-") in own, (target, limit, marker)
        assert keys == own and aliases == own, limit
    assert set(reads) == {2, 3, 101}
