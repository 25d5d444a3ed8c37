"""`sys/remount`: a Transit mount moves with its keys, their native names and the scopes that
name them, and its `config/keys`; an auth method moves with its roles and without its tokens;
each move is done when answered and its id reads `success`; `transit` and the built-in methods
stay; moving a table takes its admin operation; refusals are Vault's 400s and record nothing."""

import base64
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops import transit
from app.settings import Settings
from tests.app.routers.test_transit_scopes import records, token_for

PLAINTEXT = base64.b64encode(b"order 1001").decode()
ADMIN = "remount-admin-" + secrets.token_hex(12)
BEARER = {"Authorization": f"Bearer {ADMIN}"}


def vault(client: TestClient) -> dict[str, str]:
    return {"X-Vault-Token": client.headers["Authorization"].removeprefix("Bearer ")}


def move(client: TestClient, source: str, target: str, **headers: str) -> Any:
    return client.post(
        "/v1/sys/remount", headers=headers or vault(client), json={"from": source, "to": target}
    )


def status_of(client: TestClient, migration_id: str) -> Any:
    return client.get(f"/v1/sys/remount/status/{migration_id}", headers=vault(client))


def maker_of(client: TestClient, operation: str) -> str:
    """A token whose policy gives only the admin `operation`."""
    written = client.post(f"/v1/policies/{operation}-admin", json={"admin": [operation]})
    assert written.status_code == 200, written.text
    made = client.post(
        "/v1/auth/token/create", headers=vault(client), json={"policies": [f"{operation}-admin"]}
    )
    return str(made.json()["auth"]["client_token"])


def approle_at_ci(client: TestClient) -> dict[str, str]:
    """An AppRole method at `auth/ci` with a role `build`; the body of a login with it."""
    headers = vault(client)
    client.post("/v1/sys/auth/ci", headers=headers, json={"type": "approle"})
    client.post("/v1/auth/ci/role/build", headers=headers, json={"token_policies": "default"})
    role_id = client.get("/v1/auth/ci/role/build/role-id", headers=headers).json()["data"]
    secret = client.post("/v1/auth/ci/role/build/secret-id", headers=headers).json()["data"]
    return {"role_id": role_id["role_id"], "secret_id": secret["secret_id"]}


def test_a_transit_mount_moves_with_its_keys_scopes_and_config(
    client: TestClient, app: FastAPI
) -> None:
    headers = vault(client)
    client.post("/v1/sys/mounts/pay", headers=headers, json={"type": "transit"})
    client.post("/v1/pay/keys/orders", headers=headers)
    client.post("/v1/pay/config/keys", headers=headers, json={"disable_upsert": True})
    sealed = client.post("/v1/pay/encrypt/orders", headers=headers, json={"plaintext": PLAINTEXT})
    ciphertext = sealed.json()["data"]["ciphertext"]
    scoped = token_for(client, ["pay.orders"], ["decrypt"])

    moved = move(client, "pay", "payments/eu")
    assert moved.status_code == 200, moved.text
    migration_id = moved.json()["data"]["migration_id"]
    assert moved.json()["migration_id"] == migration_id  # at the top level too, as in Vault
    status = status_of(client, migration_id)
    assert status.status_code == 200
    assert status.json()["data"] == {
        "migration_id": migration_id,
        "migration_info": {
            "source_mount": "pay/",
            "target_mount": "payments/eu/",
            "status": "success",
        },
    }

    assert client.get("/v1/pay/keys/orders", headers=headers).status_code == 404
    assert "payments/eu/" in client.get("/v1/sys/mounts", headers=headers).json()["data"]
    with TestClient(app, headers={"X-Vault-Token": scoped}) as user:
        opened = user.post("/v1/payments/eu/decrypt/orders", json={"ciphertext": ciphertext})
    assert opened.status_code == 200, opened.text
    assert opened.json()["data"]["plaintext"] == PLAINTEXT
    assert client.get("/v1/keys/pay.orders").status_code == 200  # its native name stays
    config = client.get("/v1/payments/eu/config/keys", headers=headers).json()["data"]
    assert config == {"disable_upsert": True}
    [record] = records(client, operation="sys_remount")
    assert record["details"]["migration_id"] == migration_id
    assert (record["details"]["source"], record["details"]["target"]) == ("pay/", "payments/eu/")


def test_an_auth_method_moves_with_its_roles_and_without_its_tokens(
    client: TestClient, app: FastAPI
) -> None:
    login = approle_at_ci(client)
    issued = client.post("/v1/auth/ci/login", json=login).json()["auth"]["client_token"]

    moved = move(client, "auth/ci", "auth/builds")
    assert moved.status_code == 200, moved.text
    info = status_of(client, moved.json()["data"]["migration_id"]).json()["data"]
    assert info["migration_info"]["target_mount"] == "auth/builds/"
    with TestClient(app, headers={"X-Vault-Token": issued}) as user:
        assert user.get("/v1/auth/token/lookup-self").status_code == 403
    assert client.post("/v1/auth/ci/login", json=login).status_code in (400, 404)
    again = client.post("/v1/auth/builds/login", json=login)
    assert again.status_code == 200, again.text


def test_refusals_are_vault_s_and_record_no_move(client: TestClient) -> None:
    headers = vault(client)
    client.post("/v1/sys/mounts/pay", headers=headers, json={"type": "transit"})
    client.post("/v1/sys/mounts/other", headers=headers, json={"type": "transit"})
    refusals = {
        ("pay", ""): "both 'from' and 'to' path must be specified as a string",
        ("pay ", "x"): "'from' path cannot contain trailing whitespace",
        ("absent", "x"): 'no matching mount at "absent/"',
        ("pay", "other"): 'path already in use at "other/"',
        ("pay", "pay/sub"): 'path already in use at "pay/"',
        ("pay", "sys/x"): "cannot remount to destination sys/x/",
        ("sys", "x"): 'cannot remount "sys/"',
        ("auth/token", "auth/t2"): 'cannot remount "auth/token/"',
        ("auth/approle", "auth/ar"): 'cannot remount "auth/approle/": a built-in method stays here',
        ("auth/absent", "y"): 'cannot remount auth mount to non-auth mount "y/"',
        ("transit", "t2"): (
            'cannot remount "transit/": the service\'s own keys are always mounted there'
        ),
        ("pay", "v1-bad!"): "path 'v1-bad!': segments of letters, digits, '-', '_' and '.', at "
        "most 4",
    }
    for (source, target), words in refusals.items():
        refused = move(client, source, target)
        assert (refused.status_code, refused.json()["errors"]) == (400, [words]), (source, target)
    mounts = client.get("/v1/sys/mounts", headers=headers).json()["data"]
    assert {"pay/", "other/", "transit/"} <= set(mounts)
    for unknown_id in ("00000000-0000-0000-0000-000000000000", "x" * 5000):
        unknown = status_of(client, unknown_id)
        assert (unknown.status_code, unknown.json()) == (404, {"errors": []})
    asked = [
        (r["details"]["source"], r["details"]["target"], r["status"])
        for r in records(client, operation="sys_remount")
    ]
    assert ("absent", "x", 400) in asked and ("pay", "other", 400) in asked


def test_each_table_takes_its_own_admin_operation(client: TestClient) -> None:
    headers = vault(client)
    client.post("/v1/sys/mounts/pay", headers=headers, json={"type": "transit"})
    client.post("/v1/sys/auth/ci", headers=headers, json={"type": "jwt"})
    sys_admin, auth_admin = maker_of(client, "sys"), maker_of(client, "auth")
    tokens = {"X-Vault-Token": "not-a-token-" + "x" * 20}
    assert move(client, "pay", "p2", **tokens).status_code == 403
    assert move(client, "auth/ci", "auth/c2", **{"X-Vault-Token": sys_admin}).status_code == 403
    assert move(client, "pay", "p2", **{"X-Vault-Token": auth_admin}).status_code == 403
    moved = move(client, "auth/ci", "auth/c2", **{"X-Vault-Token": auth_admin})
    assert moved.status_code == 200, moved.text
    assert move(client, "pay", "p2", **{"X-Vault-Token": sys_admin}).status_code == 200
    reader = token_for(client, ["*"], ["encrypt"])
    migration_id = moved.json()["data"]["migration_id"]
    seen = client.get(f"/v1/sys/remount/status/{migration_id}", headers={"X-Vault-Token": reader})
    assert seen.status_code == 403


def test_a_disable_goes_by_the_store_s_table_not_a_stale_one(tmp_path: Path) -> None:
    """Two processes on one store, the second keeping its mount table for a minute: after the
    first moves `ra` away and `rc` to `ra`, the second's disabling of `ra` detaches the mount now
    there and schedules its keys, not those of the mount its table still shows at `ra`."""

    def settings(cache_seconds: float) -> Settings:
        return Settings(
            data_dir=tmp_path / "data",
            admin_token=ADMIN,
            fe_processes=0,
            key_cache_seconds=cache_seconds,
        )

    headers = {"X-Vault-Token": ADMIN}
    with (
        TestClient(create_app(settings(0)), headers=headers) as first,
        TestClient(create_app(settings(60)), headers=headers) as second,
    ):
        for mount, key in (("ra", "ka"), ("rc", "kc")):
            first.post(f"/v1/sys/mounts/{mount}", json={"type": "transit"})
            first.post(f"/v1/{mount}/keys/{key}")
        services = second.app.state.services  # type: ignore[attr-defined]
        assert services.mounts.table()["ra"].key_prefix == "ra."  # kept a minute from now
        assert first.post("/v1/sys/remount", json={"from": "ra", "to": "rb"}).status_code == 200
        assert first.post("/v1/sys/remount", json={"from": "rc", "to": "ra"}).status_code == 200
        scheduled = transit.mounts.disable(
            services.mounts, services.keyring, "ra", services.settings
        )
        assert scheduled == ["rc.kc"]
        assert first.get("/v1/keys/ra.ka", headers=BEARER).json()["state"] == "active"
        assert first.post("/v1/rb/encrypt/ka", json={"plaintext": PLAINTEXT}).status_code == 200


def test_mounts_one_under_another_are_never_made_at_once(tmp_path: Path) -> None:
    """Moves and enablings racing from two processes: however they interleave, no mount ends up
    under another."""
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN, fe_processes=0)
    headers = {"X-Vault-Token": ADMIN}
    with (
        TestClient(create_app(settings), headers=headers) as first,
        TestClient(create_app(settings), headers=headers) as second,
    ):
        for round_ in range(6):
            sources = [f"s{round_}-{n}" for n in range(2)]
            for source in sources:
                first.post(f"/v1/sys/mounts/{source}", json={"type": "transit"})
            target = f"nx{round_}"
            asks = [
                (first, "POST", "/v1/sys/remount", {"from": sources[0], "to": target}),
                (second, "POST", "/v1/sys/remount", {"from": sources[1], "to": f"{target}/y"}),
                (first, "POST", f"/v1/sys/mounts/{target}/y/z", {"type": "transit"}),
                (second, "POST", f"/v1/sys/auth/{target}", {"type": "jwt"}),
                (first, "POST", f"/v1/sys/auth/{target}/y", {"type": "jwt"}),
            ]
            with ThreadPoolExecutor(len(asks)) as pool:
                done = list(pool.map(lambda ask: ask[0].request(ask[1], ask[2], json=ask[3]), asks))
            assert all(answer.status_code < 500 for answer in done)
        for table in ("mounts", "auth"):
            paths = list(first.get(f"/v1/sys/{table}").json()["data"])
            nested = [(a, b) for a in paths for b in paths if a != b and b.startswith(a)]
            assert nested == [], table


def test_no_token_of_a_login_during_a_move_outlives_it(client: TestClient, app: FastAPI) -> None:
    """Logins at an AppRole method in three threads while it moves: every token they got is
    revoked by the move or was refused, none is left with the old path."""
    login = approle_at_ci(client)
    issued: list[str] = []
    moving = threading.Event()

    def log_in() -> None:
        with TestClient(app) as caller:
            for _ in range(60):
                answer = caller.post("/v1/auth/ci/login", json=login)
                assert answer.status_code < 500, answer.text
                if answer.status_code == 200:
                    issued.append(answer.json()["auth"]["client_token"])
                elif moving.is_set():
                    return

    with ThreadPoolExecutor(3) as pool:
        logins = [pool.submit(log_in) for _ in range(3)]
        while len(issued) < 10:
            time.sleep(0.01)
        moving.set()
        assert move(client, "auth/ci", "auth/builds").status_code == 200
        for done in logins:
            done.result()
    alive = [
        token
        for token in issued
        if client.get("/v1/auth/token/lookup-self", headers={"X-Vault-Token": token}).is_success
    ]
    assert alive == []
