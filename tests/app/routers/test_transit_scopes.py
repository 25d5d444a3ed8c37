"""Transit's paths under the native scopes and audit trail: a token limited to `encrypt` on
`orders-*` may call `transit/encrypt/orders-eu` and nothing else, in every mount, and each call,
allowed or refused, is in the audit trail as its native operation with the path it came by."""

import base64
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

PLAINTEXT = base64.b64encode(b"order 1001").decode()


def token_for(client: TestClient, keys: list[str], operations: list[str]) -> str:
    made = client.post("/v1/tokens", json={"keys": keys, "operations": operations})
    assert made.status_code == 201, made.text
    return str(made.json()["token"])


def records(client: TestClient, **filters: str) -> list[dict[str, Any]]:
    answer = client.get("/v1/audit", params=filters)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["records"])


def test_an_encrypt_token_on_orders_encrypts_there_and_nothing_else(
    client: TestClient, app: FastAPI
) -> None:
    vault = {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}
    for name in ("orders-eu", "payroll"):
        client.post(f"/v1/transit/keys/{name}", headers=vault)
    client.post("/v1/transit/keys/orders-signer", headers=vault, json={"type": "ed25519"})
    sealed = client.post(
        "/v1/transit/encrypt/orders-eu", headers=vault, json={"plaintext": PLAINTEXT}
    ).json()["data"]["ciphertext"]
    token = token_for(client, ["orders-*"], ["encrypt"])

    with TestClient(app, headers={"X-Vault-Token": token}) as user:
        allowed = user.post("/v1/transit/encrypt/orders-eu", json={"plaintext": PLAINTEXT})
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["data"]["ciphertext"].startswith("vault:v1:")
        batch = {"batch_input": [{"plaintext": PLAINTEXT}] * 2}
        assert user.post("/v1/transit/encrypt/orders-eu", json=batch).status_code == 200
        refused = {
            "decrypt": user.post("/v1/transit/decrypt/orders-eu", json={"ciphertext": sealed}),
            "rewrap": user.post("/v1/transit/rewrap/orders-eu", json={"ciphertext": sealed}),
            "another key": user.post("/v1/transit/encrypt/payroll", json={"plaintext": PLAINTEXT}),
            "hmac": user.post("/v1/transit/hmac/orders-eu", json={"input": PLAINTEXT}),
            "sign": user.post("/v1/transit/sign/orders-signer", json={"input": PLAINTEXT}),
            "read": user.get("/v1/transit/keys/orders-eu"),
            "list": user.get("/v1/transit/keys", params={"list": "true"}),
            "create": user.post("/v1/transit/keys/orders-new"),
            "rotate": user.post("/v1/transit/keys/orders-eu/rotate"),
            "config": user.post(
                "/v1/transit/keys/orders-eu/config", json={"deletion_allowed": True}
            ),
            "export": user.get("/v1/transit/export/encryption-key/orders-eu"),
            "backup": user.get("/v1/transit/backup/orders-eu"),
            "mounts": user.get("/v1/sys/mounts"),
            "mount": user.post("/v1/sys/mounts/orders-mount", json={"type": "transit"}),
            # A missing key it may encrypt with: no creation on the fly for a scoped token.
            "upsert": user.post("/v1/transit/encrypt/orders-us", json={"plaintext": PLAINTEXT}),
        }
        for what, response in refused.items():
            assert response.status_code == 403, (what, response.text)
            assert "errors" in response.json(), what
    assert client.get("/v1/keys/orders-new").status_code == 404
    assert client.get("/v1/keys/orders-us").status_code == 404

    encrypts = records(client, operation="aead_encrypt", key="orders-eu")
    by_path = [r for r in encrypts if r["details"].get("path") == "transit/encrypt/orders-eu"]
    outcomes = sorted(r["outcome"] for r in by_path)
    assert outcomes.count("success") >= 3  # the admin's and the token's two
    denied = records(client, operation="aead_decrypt", key="orders-eu")
    assert [(r["status"], r["problem"], r["details"]["path"]) for r in denied] == [
        (403, "forbidden", "transit/decrypt/orders-eu")
    ]
    for record in encrypts + denied:
        assert PLAINTEXT not in str(record) and sealed not in str(record)


def test_a_mounts_paths_map_onto_its_keys_native_names(client: TestClient, app: FastAPI) -> None:
    """In the mount `payments`, `orders-eu` is the native `payments.orders-eu`: a token on
    `payments.orders-*` encrypts there, one on `orders-*` does not."""
    vault = {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}
    enabled = client.post("/v1/sys/mounts/payments", headers=vault, json={"type": "transit"})
    assert enabled.status_code == 204, enabled.text
    client.post("/v1/payments/keys/orders-eu", headers=vault)
    mounted = token_for(client, ["payments.orders-*"], ["encrypt"])
    unmounted = token_for(client, ["orders-*"], ["encrypt"])
    body = {"plaintext": PLAINTEXT}
    with TestClient(app, headers={"X-Vault-Token": mounted}) as user:
        assert user.post("/v1/payments/encrypt/orders-eu", json=body).status_code == 200
        assert user.post("/v1/transit/encrypt/orders-eu", json=body).status_code == 403
    with TestClient(app, headers={"X-Vault-Token": unmounted}) as user:
        assert user.post("/v1/payments/encrypt/orders-eu", json=body).status_code == 403
    paths = {
        (r["status"], r["details"]["path"])
        for r in records(client, operation="aead_encrypt", key="payments.orders-eu")
    }
    assert (200, "payments/encrypt/orders-eu") in paths
    assert (403, "payments/encrypt/orders-eu") in paths
