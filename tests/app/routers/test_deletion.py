"""Deletion that can be undone: a window during which the key refuses every use and can be
restored, then destruction exactly once; deletion protection. SQLite and PostgreSQL."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import ADMIN_TOKEN, STORES

PENDING = "urn:cipherd:problem:key-pending-deletion"


@pytest.fixture(params=STORES)
def lifecycle_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        database_url=url,
        deletion_min_window_seconds=0,
        maintenance_seconds=0.2,
    )


@pytest.fixture
def admin(lifecycle_settings: Settings) -> Iterator[TestClient]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(lifecycle_settings), headers=headers) as client:
        yield client


def _create(client: TestClient, name: str, key_type: str, **extra: Any) -> dict[str, Any]:
    answer = client.post("/v1/keys", json={"name": name, "type": key_type, **extra})
    assert answer.status_code == 201, answer.text
    return answer.json()


def _eventually(check: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_deleted_key_refuses_everything_and_is_restored_intact(admin: TestClient) -> None:
    _create(admin, "orders", "ecies-secp256k1", exportable=True)
    _create(admin, "session", "aez")
    _create(admin, "stats", "ipfe-opt", dimension=2)
    admin.post("/v1/keys/orders/rotate")
    sealed = admin.post("/v1/ecies/orders/encrypt", json={"plaintext": "aGk="}).json()
    aez = admin.post("/v1/aez/session/encrypt", json={"plaintext": "aGk="}).json()
    before = time.time()
    scheduled = {}
    for name in ("orders", "session", "stats"):
        answer = admin.delete(f"/v1/keys/{name}")
        assert answer.status_code == 202, answer.text
        scheduled[name] = answer.json()
        assert set(answer.json()) == {"name", "state", "deletion_date"}
    deletion_date = scheduled["orders"]["deletion_date"]
    assert scheduled["orders"]["state"] == "pending-deletion"
    listed = {k["name"]: k for k in admin.get("/v1/keys").json()["keys"]}
    assert listed["orders"]["state"] == "pending-deletion"
    assert listed["orders"]["deletion_date"] == deletion_date
    from datetime import datetime

    due = datetime.fromisoformat(deletion_date.replace("Z", "+00:00")).timestamp()
    assert before + 604800 - 5 < due < time.time() + 604800 + 5  # the default window
    for method, path, body in (
        ("POST", "/v1/ecies/orders/encrypt", {"plaintext": "aGk="}),
        ("POST", "/v1/ecies/orders/decrypt", {"ciphertext": sealed["ciphertext"]}),
        ("POST", "/v1/ecies/orders/decrypt/batch", {"items": [{"ciphertext": "aGk="}]}),
        ("POST", "/v1/aez/session/encrypt", {"plaintext": "aGk="}),
        ("POST", "/v1/aez/session/decrypt", {"ciphertext": aez["ciphertext"]}),
        ("POST", "/v1/fe/stats/keygen", {"y": [1, 2]}),
        ("POST", "/v1/fe/stats/encrypt", {"x": [1, 2]}),
        ("POST", "/v1/keys/orders/rotate", None),
        ("GET", "/v1/keys/orders/public", None),
        ("GET", "/v1/keys/orders/export", None),
        ("DELETE", "/v1/keys/orders", None),
    ):
        answer = admin.request(method, path, json=body)
        assert answer.status_code == 409, (path, answer.text)
        assert answer.json()["type"] == PENDING, path
    assert admin.post("/v1/keys", json={"name": "orders", "type": "aez"}).status_code == 409
    restored = admin.post("/v1/keys/orders/restore")
    assert restored.status_code == 200
    assert restored.json()["state"] == "active" and restored.json()["deletion_date"] is None
    assert [v["version"] for v in restored.json()["versions"]] == [1, 2]
    opened = admin.post("/v1/ecies/orders/decrypt", json={"ciphertext": sealed["ciphertext"]})
    assert opened.json() == {"plaintext": "aGk=", "key_version": 2}
    again = admin.post("/v1/keys/orders/restore")
    assert again.status_code == 409
    assert again.json()["type"] == "urn:cipherd:problem:key-not-pending-deletion"


def test_windows_below_the_minimum_are_refused(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, deletion_min_window_seconds=3600
    )
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        _create(client, "k", "aez")
        for window in (0, 3599):
            answer = client.delete("/v1/keys/k", params={"window_seconds": window})
            assert answer.status_code == 422
            assert "CIPHERD_DELETION_MIN_WINDOW_SECONDS" in answer.json()["detail"]
        assert client.delete("/v1/keys/k", params={"window_seconds": -1}).status_code == 422
        assert client.delete("/v1/keys/k", params={"window_seconds": 3600}).status_code == 202
    with pytest.raises(ValueError, match="deletion_window_seconds"):
        Settings(deletion_window_seconds=10, deletion_min_window_seconds=20)


def test_deletion_protection_refuses_delete(admin: TestClient) -> None:
    created = _create(admin, "k", "aez", deletion_protection=True)
    assert created["deletion_protection"] is True
    answer = admin.delete("/v1/keys/k")
    assert answer.status_code == 409
    assert answer.json()["type"] == "urn:cipherd:problem:deletion-protected"
    assert admin.get("/v1/keys/k").json()["state"] == "active"


def test_the_window_ends_in_destruction_once_and_the_name_is_free(
    admin: TestClient, lifecycle_settings: Settings
) -> None:
    _create(admin, "k", "aez")
    admin.post("/v1/keys/k/rotate")
    assert admin.delete("/v1/keys/k", params={"window_seconds": 1}).status_code == 202
    _eventually(lambda: _assert_status(admin.get("/v1/keys/k").status_code, 404))
    store = admin.app.state.services.store  # type: ignore[attr-defined]
    with store.database.transaction(write=False) as cursor:
        cursor.execute("SELECT COUNT(*) FROM key_versions WHERE name = 'k'")
        assert cursor.fetchone() == (0,)  # the material is gone
    destroyed = admin.get("/v1/audit", params={"operation": "keys_destroy_key"}).json()
    assert [(r["key"], r["principal"]) for r in destroyed["records"]] == [("k", "system")]
    recreated = _create(admin, "k", "ecies-x25519")
    assert recreated["latest_version"] == 1 and recreated["state"] == "active"


def _assert_status(status: int, expected: int) -> None:
    assert status == expected
