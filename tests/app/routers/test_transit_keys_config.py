"""A Transit mount's `config/keys`: with `disable_upsert`, an encryption under a name no key has
is refused and creates nothing, in that mount only, for as long as it is set; the setting is
the admin's, audited, kept in the store and not inherited by a mount enabled again at a
disabled one's path."""

import base64
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.app.routers.test_transit_scopes import records, token_for

PLAINTEXT = base64.b64encode(b"order 1001").decode()


def vault(client: TestClient) -> dict[str, str]:
    return {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}


def config_of(client: TestClient, mount: str = "transit") -> Any:
    answer = client.get(f"/v1/{mount}/config/keys", headers=vault(client))
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def encrypt(client: TestClient, name: str, mount: str = "transit", batch: bool = False) -> Any:
    body: dict[str, Any] = {"plaintext": PLAINTEXT}
    if batch:
        body = {"batch_input": [body]}
    return client.post(f"/v1/{mount}/encrypt/{name}", headers=vault(client), json=body)


def key_exists(client: TestClient, name: str, mount: str = "transit") -> bool:
    status = client.get(f"/v1/{mount}/keys/{name}", headers=vault(client)).status_code
    assert status in (200, 404)
    return status == 200


def test_with_upserts_disabled_an_encryption_creates_no_key(
    admin_on_both_stores: TestClient,
) -> None:
    client = admin_on_both_stores
    assert config_of(client) == {"disable_upsert": False}
    assert encrypt(client, "before").status_code == 200
    written = client.post(
        "/v1/transit/config/keys", headers=vault(client), json={"disable_upsert": "true"}
    )
    assert written.status_code == 200, written.text
    assert written.json()["data"] == {"disable_upsert": True} == config_of(client)

    for batch in (False, True):
        refused = encrypt(client, "typo", batch=batch)
        assert refused.status_code == 400
        assert refused.json()["errors"] == ["encryption key not found"]
    assert not key_exists(client, "typo")
    assert encrypt(client, "before").status_code == 200  # an existing key still encrypts

    # A write replaces the whole, as in Vault: a field left out is its default.
    assert client.post("/v1/transit/config/keys", headers=vault(client), json={}).status_code == 200
    assert config_of(client) == {"disable_upsert": False}
    assert encrypt(client, "typo").status_code == 200 and key_exists(client, "typo")


def test_each_mount_has_its_own_and_a_new_mount_starts_afresh(client: TestClient) -> None:
    headers = vault(client)
    enabled = client.post("/v1/sys/mounts/payments", headers=headers, json={"type": "transit"})
    assert enabled.status_code == 204, enabled.text
    client.post("/v1/payments/config/keys", headers=headers, json={"disable_upsert": True})
    assert config_of(client, "payments") == {"disable_upsert": True}
    assert config_of(client) == {"disable_upsert": False}
    assert encrypt(client, "k", mount="payments").status_code == 400
    assert encrypt(client, "k").status_code == 200  # the same name in `transit`

    assert client.delete("/v1/sys/mounts/payments", headers=headers).status_code == 204
    client.post("/v1/sys/mounts/payments", headers=headers, json={"type": "transit"})
    assert config_of(client, "payments") == {"disable_upsert": False}
    assert encrypt(client, "k", mount="payments").status_code == 200


def test_the_setting_is_the_admin_s_and_its_change_is_audited(
    client: TestClient, app: FastAPI
) -> None:
    token = token_for(client, ["*"], ["encrypt", "decrypt", "read"])
    with TestClient(app, headers={"X-Vault-Token": token}) as user:
        assert user.get("/v1/transit/config/keys").status_code == 403
        refused = user.post("/v1/transit/config/keys", json={"disable_upsert": True})
        assert refused.status_code == 403
    assert config_of(client) == {"disable_upsert": False}

    bad = client.post("/v1/transit/config/keys", headers=vault(client), json={"disable_upsert": 2})
    assert bad.status_code == 400 and "disable_upsert" in bad.json()["errors"][0]
    null = client.post(
        "/v1/transit/config/keys", headers=vault(client), json={"disable_upsert": None}
    )
    assert null.json()["data"] == {"disable_upsert": False}  # as OpenBao: not given
    client.post("/v1/transit/config/keys", headers=vault(client), json={"disable_upsert": True})
    changes = records(client, operation="transit_configure_keys")
    assert [(r["status"], r["details"].get("disable_upsert")) for r in changes] == [
        (403, None),
        (400, None),
        (200, False),
        (200, True),
    ]


def test_the_setting_outlives_a_restart(settings: Settings) -> None:
    headers = {"X-Vault-Token": settings.admin_token or ""}
    with TestClient(create_app(settings), headers=headers) as first:
        first.post("/v1/transit/config/keys", json={"disable_upsert": True})
    with TestClient(create_app(settings), headers=headers) as again:
        assert again.get("/v1/transit/config/keys").json()["data"] == {"disable_upsert": True}
        assert again.post("/v1/transit/encrypt/k", json={"plaintext": PLAINTEXT}).status_code == 400
