"""AppRole beyond Vault's shapes: what a login's token may do, the failed-login throttle, the
audit trail of logins (never a secret id), and mounts of their own. hvac drives the Vault
paths, the SDK the native ones."""

import secrets
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import hvac
import pytest
from hvac import exceptions

import cipherd
from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "approle-e2e-" + secrets.token_urlsafe(16)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("approle") / "data"
    # Every request's access line logged, for the test that no secret reaches the log.
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN, "CIPHERD_LOG_LEVEL": "INFO"}
    with running(data, env=env) as s:
        yield s


def admin(server: Server) -> hvac.Client:
    return hvac.Client(url=server.url, token=ADMIN_TOKEN)


def sdk(server: Server, token: str = ADMIN_TOKEN) -> cipherd.Client:
    return cipherd.Client(server.url, token=token)


def credentials(client: hvac.Client, role: str, mount: str = "approle", **options: Any) -> Any:
    """A role made with `options`: its role id and a fresh secret id."""
    client.auth.approle.create_or_update_approle(role, mount_point=mount, **options)
    role_id = client.auth.approle.read_role_id(role, mount_point=mount)["data"]["role_id"]
    made = client.auth.approle.generate_secret_id(role, mount_point=mount)["data"]
    return role_id, made["secret_id"], made["secret_id_accessor"]


def denied(call: Any) -> int:
    with pytest.raises(cipherd.ProblemError) as refused:
        call()
    return refused.value.status


def test_a_login_token_does_what_its_policies_allow_and_nothing_else(server: Server) -> None:
    suffix = secrets.token_hex(3)
    policy, mine, other = f"seal-{suffix}", f"app-{suffix}-a", f"other-{suffix}"
    rules = {"rules": [{"keys": [f"app-{suffix}-*"], "operations": ["encrypt"]}]}
    httpx.post(
        f"{server.url}/v1/policies/{policy}",
        json=rules,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    ).raise_for_status()
    with sdk(server) as root:
        root.keys.create(mine, "aes256-gcm")
        root.keys.create(other, "aes256-gcm")
        sealed = root.aead.encrypt(mine, b"kept").ciphertext
    role_id, secret_id, _ = credentials(admin(server), f"ci-{suffix}", token_policies=[policy])
    with sdk(server, token="") as machine:
        login = machine.auth.approle_login(role_id, secret_id)
    assert sorted(login.policies) == ["default", policy]
    with sdk(server, token=login.token) as workload:
        assert workload.aead.encrypt(mine, b"hello").key_version == 1
        assert denied(lambda: workload.aead.decrypt(mine, sealed)) == 403
        assert denied(lambda: workload.aead.encrypt(other, b"hello")) == 403
        assert denied(lambda: workload.keys.create(f"app-{suffix}-b", "aes256-gcm")) == 403
        assert (
            denied(lambda: workload.approle.write_role(f"mine-{suffix}", policies=[policy])) == 403
        )
        assert denied(lambda: workload.approle.secret_id(f"ci-{suffix}")) == 403
        # The policy widened: the same token decrypts on its next request.
        rules["rules"][0]["operations"] = ["encrypt", "decrypt"]
        httpx.post(
            f"{server.url}/v1/policies/{policy}",
            json=rules,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        ).raise_for_status()
        assert workload.aead.decrypt(mine, sealed).plaintext == b"kept"


def test_a_login_is_audited_without_its_secret_id(server: Server) -> None:
    client = admin(server)
    started = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    role = f"audited-{secrets.token_hex(3)}"
    role_id, secret_id, accessor = credentials(client, role, token_policies=["default"])
    token = client.auth.approle.login(role_id, secret_id, use_token=False)["auth"]
    with pytest.raises(exceptions.InvalidRequest):
        client.auth.approle.login(role_id, "wrong-" + secret_id, use_token=False)
    with sdk(server) as root:
        records = root.audit.list(since=started, limit=1000).records
    logins = [
        r
        for r in records
        if r.operation == "auth-approle_login" and (r.details or {}).get("role") == role
    ]
    assert [r.status for r in logins] == [200, 400]
    good = logins[0]
    assert good.details["auth_mount"] == "approle" and good.details["token"] == token["accessor"]
    assert (
        good.details["method"] == "approle" and good.details["token_identity"] == f"approle:{role}"
    )
    made = [r for r in records if (r.details or {}).get("secret_id_accessor") == accessor]
    assert len(made) == 1 and made[0].principal == "admin"
    seen = repr(records) + server.output()
    assert secret_id not in seen and token["client_token"] not in seen


def test_roles_belong_to_their_mount(server: Server) -> None:
    client = admin(server)
    mount = f"machines-{secrets.token_hex(3)}"
    client.sys.enable_auth_method("approle", path=mount)
    role_id, secret_id, _ = credentials(client, "web", mount=mount)
    with pytest.raises(exceptions.InvalidRequest):  # not a role id of the default mount
        client.auth.approle.login(role_id, secret_id, use_token=False)
    login = client.auth.approle.login(role_id, secret_id, use_token=False, mount_point=mount)
    assert login["auth"]["metadata"] == {"role_name": "web"}
    client.sys.disable_auth_method(path=mount)
    client.sys.enable_auth_method("approle", path=mount)
    with pytest.raises(exceptions.InvalidPath):  # a mount enabled anew has no roles
        client.auth.approle.read_role("web", mount_point=mount)
    client.sys.disable_auth_method(path=mount)


def test_failed_logins_count_toward_the_throttle(tmp_path: Path) -> None:
    env = {
        "CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN,
        "CIPHERD_AUTH_FAILURES_BURST": "3",
        "CIPHERD_AUTH_FAILURES_PER_SECOND": "0.01",
    }
    with running(tmp_path / "data", env=env) as throttled:
        client = admin(throttled)
        role_id, secret_id, _ = credentials(client, "ci")
        for _ in range(3):
            with pytest.raises(exceptions.InvalidRequest):
                client.auth.approle.login(role_id, "guessed", use_token=False)
        answer = httpx.post(
            f"{throttled.url}/v1/auth/approle/login",
            json={"role_id": role_id, "secret_id": "guessed"},
        )
        assert answer.status_code == 429 and int(answer.headers["Retry-After"]) >= 1
        # Good credentials are never refused by the throttle.
        assert client.auth.approle.login(role_id, secret_id, use_token=False)["auth"]
