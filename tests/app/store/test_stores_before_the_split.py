"""Stores made by the code before the store became a repository per concern (commit cce0936,
see before_split/make_stores.py), on SQLite and PostgreSQL, open under today's code and go on
working: every key, version, policy and state, the scoped token, the FE ledger, the wrapping
key, the keyring and the audit chains are as they were left, and new writes work."""

import base64
import json
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops import audit
from app.ops.lifecycle import Maintenance
from app.server.bootstrap import root_key
from app.settings import Settings
from app.store import ON_DEMAND, open_store
from tests.conftest import STORES

MADE = Path(__file__).parent / "before_split"
EXPECTED = json.loads((MADE / "expected.json").read_text())


@pytest.fixture(params=STORES)
def made(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Settings, dict[str, Any]]:
    """Settings that open the store made before the split, and what was noted about it. The
    maintenance pass is held back: it would rotate and destroy, by today's date, what was
    scheduled from the day the stores were made (a daily rotation, a deletion in 30 days), and
    what it does is the lifecycle tests' subject, not what these stores hold."""
    monkeypatch.setattr(Maintenance, "start", lambda self: None)
    data, url = tmp_path / "data", None
    data.mkdir()
    if request.param == "sqlite":
        shutil.copyfile(MADE / "store.sqlite3", data / "cipherd.sqlite3")
    else:
        url = request.getfixturevalue("postgres_url")
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute((MADE / "postgres.sql").read_text())
    settings = Settings(
        data_dir=data,
        root_key=EXPECTED["root_key"],
        admin_token=EXPECTED["admin_token"],
        database_url=url,
        fe_processes=0,
        deletion_min_window_seconds=0,
    )
    return settings, EXPECTED[request.param]


@pytest.fixture
def admin(made: tuple[Settings, dict[str, Any]]) -> Iterator[TestClient]:
    headers = {"Authorization": f"Bearer {EXPECTED['admin_token']}"}
    with TestClient(create_app(made[0]), headers=headers) as client:
        yield client


def _json(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def test_everything_stored_before_is_there(
    admin: TestClient, made: tuple[Settings, dict[str, Any]]
) -> None:
    expected = made[1]
    keys = {key["name"]: key for key in _json(admin.get("/v1/keys"))["keys"]}
    assert keys.keys() == expected["keys"].keys()
    for name, key in expected["keys"].items():  # every field shown then, as it was
        assert {field: keys[name].get(field) for field in key} == key
    for check in expected["decrypt"]:
        assert (
            _json(admin.post(check["path"], json=check["body"]))["plaintext"] == check["plaintext"]
        )
    for check in expected["verify"]:
        assert _json(admin.post(check["path"], json=check["body"]))["valid"] is True
    for check in expected["fe"]:
        body = {**check, "bounds": [0, 100]}
        del body["result"]
        assert _json(admin.post("/v1/fe/scores/decrypt", json=body))["result"] == check["result"]
    assert _json(admin.get("/v1/fe/scores/functions")) == {**expected["functions"], "next": None}
    wrapping = _json(admin.get("/v1/sys/wrapping-key"))
    assert wrapping["public_key"] == expected["wrapping_key"]["public_key"]
    keyring = _json(admin.get("/v1/sys/keyring"))
    assert (keyring["term"], keyring["versions"]) == (2, expected["keyring"]["versions"])
    # The FE policy holds: a third independent function would pass its max_rank of 2.
    refused = admin.post("/v1/fe/scores/keygen", json={"y": [0, 0, 1]})
    assert refused.status_code == 403, refused.text


def test_the_scoped_token_made_before_still_works_and_is_still_scoped(
    admin: TestClient, made: tuple[Settings, dict[str, Any]]
) -> None:
    scoped = {"Authorization": f"Bearer {made[1]['scoped_token']}"}
    plaintext = base64.b64encode(b"after").decode()
    sealed = admin.post("/v1/aez/session/encrypt", json={"plaintext": plaintext}, headers=scoped)
    opened = admin.post("/v1/aez/session/decrypt", json=_json(sealed), headers=scoped)
    assert _json(opened)["plaintext"] == plaintext
    other = admin.post("/v1/ecies/mail/encrypt", json={"plaintext": plaintext}, headers=scoped)
    assert other.status_code == 403


def test_new_writes_go_on_and_the_audit_chains_verify(
    made: tuple[Settings, dict[str, Any]],
) -> None:
    settings, expected = made
    headers = {"Authorization": f"Bearer {EXPECTED['admin_token']}"}
    with TestClient(create_app(settings), headers=headers) as admin:
        assert _json(admin.post("/v1/keys/session/rotate"))["latest_version"] == 3
        assert _json(admin.post("/v1/keys/doomed/restore"))["state"] == "active"
        patched = admin.patch("/v1/keys/guarded", json={"deletion_protection": False})
        assert _json(patched)["deletion_protection"] is False
        assert _json(admin.post("/v1/keys", json={"name": "new", "type": "aez"}), 201)
        assert _json(admin.post("/v1/sys/keyring/rotate"))["term"] == 3
        created = _json(admin.get("/v1/audit", params={"operation": "keys_create_key"}))
        assert {"session", "scores", "new"} <= {r["key"] for r in created["records"]}
    store = open_store(settings.resolved_database_url, partial(root_key, settings))
    try:
        count, faults = audit.verify(store)
        assert faults == []
        assert count > 2 * len(expected["keys"])  # the records of before, and of now
        assert store.keyring.rewrap(1000)[1].versions_behind == 0
        assert store.keys.material("session", 1).version == 1
        # How a version was made is known from today on: not for the rotation made before.
        assert [v.rotation for v in store.keys.get("session").versions] == [None, None, ON_DEMAND]
    finally:
        store.close()
