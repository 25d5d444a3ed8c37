"""How soon a change that narrows tokens takes effect: at once on the process that made it, and
within CIPHERD_AUTH_CHECK_SECONDS on another process on the same store (a replica)."""

import base64
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

AUTH_CHECK_SECONDS = 0.5
# What a request may add to the bound on a loaded 2-core machine.
REQUEST_SLACK_SECONDS = 1.0
BODY = {"plaintext": base64.b64encode(b"order").decode()}


@contextmanager
def two_replicas(
    settings: Settings, tmp_path: Path, auth_check_seconds: float
) -> Iterator[tuple[TestClient, TestClient]]:
    """Admin clients of two apps, each with its own store connection, on one SQLite file."""
    shared = {
        "database_url": f"sqlite:///{tmp_path / 'shared.sqlite3'}",
        "root_key": base64.b64encode(secrets.token_bytes(32)).decode(),
        "auth_check_seconds": auth_check_seconds,
        # Long: a change that narrows a token must not wait for it.
        "token_cache_seconds": 600.0,
    }
    admin = {"Authorization": f"Bearer {settings.admin_token}"}
    apps = [
        create_app(settings.model_copy(update={**shared, "data_dir": tmp_path / name}))
        for name in ("a", "b")
    ]
    with TestClient(apps[0], headers=admin) as a, TestClient(apps[1], headers=admin) as b:
        assert (
            a.post("/v1/keys", json={"name": "orders-1", "type": "aes256-gcm"}).status_code == 201
        )
        yield a, b


def status(client: TestClient, token: str) -> int:
    """The status of an encryption with `token` on `client`'s app."""
    headers = {"Authorization": f"Bearer {token}"}
    return client.post("/v1/aead/orders-1/encrypt", json=BODY, headers=headers).status_code


def answers_within_the_bound(client: TestClient, token: str, expected: int) -> bool:
    """Whether `client` answers `expected` to `token` within the bound and the slack (asked
    again every few milliseconds)."""
    deadline = time.monotonic() + AUTH_CHECK_SECONDS + REQUEST_SLACK_SECONDS
    while status(client, token) != expected:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_narrowing_is_at_once_where_it_is_made_and_within_the_bound_elsewhere(
    settings: Settings, tmp_path: Path
) -> None:
    """A policy narrowed and widened, a token revoked and the admin token rotated, each on one
    replica: refused there on the next request, and on the other within the bound."""
    assert settings.admin_token is not None
    with two_replicas(settings, tmp_path, AUTH_CHECK_SECONDS) as (a, b):
        rules = [{"keys": ["orders-*"], "operations": ["encrypt"]}]
        assert a.post("/v1/policies/checkout", json={"rules": rules}).status_code == 200
        made = a.post("/v1/tokens", json={"policies": ["checkout"]})
        assert made.status_code == 201, made.text
        token = made.json()["token"]
        assert status(a, token) == status(b, token) == 200  # each caches token and policy

        narrowed = [{"keys": ["orders-*"], "operations": ["decrypt"]}]
        assert b.post("/v1/policies/checkout", json={"rules": narrowed}).status_code == 200
        assert status(b, token) == 403
        assert answers_within_the_bound(a, token, 403)

        assert a.post("/v1/policies/checkout", json={"rules": rules}).status_code == 200
        assert status(a, token) == 200
        assert answers_within_the_bound(b, token, 200)

        assert a.delete(f"/v1/tokens/{made.json()['id']}").status_code == 204
        assert status(a, token) == 401
        assert answers_within_the_bound(b, token, 401)

        rotated = b.post("/v1/sys/admin-token/rotate")
        assert rotated.status_code == 200, rotated.text
        assert status(b, settings.admin_token) == 401
        assert answers_within_the_bound(a, settings.admin_token, 401)


def test_with_no_bound_every_request_reads_the_generation(
    settings: Settings, tmp_path: Path
) -> None:
    """CIPHERD_AUTH_CHECK_SECONDS=0: another process's revocation is refused on the next
    request."""
    with two_replicas(settings, tmp_path, 0.0) as (a, b):
        made = a.post("/v1/tokens", json={"keys": ["orders-*"], "operations": ["encrypt"]})
        token = made.json()["token"]
        assert status(a, token) == status(b, token) == 200
        assert a.delete(f"/v1/tokens/{made.json()['id']}").status_code == 204
        assert status(b, token) == 401
