"""The keyring routes and the root of trust's commands, with their audit records."""

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.settings import get_settings


def test_keyring_rotation_is_admin_only_and_audited(client: TestClient) -> None:
    assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
    assert client.get("/v1/sys/keyring").json() == {"term": 1, "versions": 1, "versions_behind": 0}
    rotated = client.post("/v1/sys/keyring/rotate")
    assert rotated.status_code == 200
    assert rotated.json()["term"] == 2
    scoped = client.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]}).json()
    refused = client.post(
        "/v1/sys/keyring/rotate", headers={"Authorization": f"Bearer {scoped['token']}"}
    )
    assert refused.status_code == 403
    assert client.get("/v1/sys/keyring").json()["term"] == 2
    records = client.get("/v1/audit", params={"operation": "sys_rotate_keyring"}).json()
    outcomes = [(r["principal"], r["status"], r["details"]) for r in records["records"]]
    assert outcomes == [
        ("admin", 200, {"term": 2}),
        (scoped["id"], 403, {"identity": "token:admin"}),
    ]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CIPHERD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CIPHERD_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    main(list(argv))
    return json.loads(capsys.readouterr().out)


def _lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, int]]:
    """A command's output of one JSON object per line."""
    main(list(argv))
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_the_commands_rotate_the_keyring_and_the_root_and_audit_both(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, "local", "init")
    _run(capsys, "local", "keys", "create", "k", "aez")
    lines = _lines(capsys, "keyring", "rotate")
    assert lines[0] == {"term": 2, "versions": 1, "versions_behind": 1}
    assert lines[-1] == {"term": 2, "versions": 1, "versions_behind": 0}

    old_root = (data_dir / "root-key").read_text()
    new_root = tmp_path / "new-root"
    new_root.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    new_root.chmod(0o600)
    rotated = _run(capsys, "root", "rotate", "--new-root-key-file", str(new_root))
    assert rotated["terms_rewrapped"] == 2  # type: ignore[index]
    # The generated root key file now holds the new key, and the store opens under it.
    assert (data_dir / "root-key").read_text() == new_root.read_text() != old_root
    assert _run(capsys, "local", "keys", "rotate", "k")["latest_version"] == 2  # type: ignore[index]

    main(["local", "audit", "verify"])
    capsys.readouterr()
    records = _run(capsys, "local", "audit", "list")["records"]  # type: ignore[index]
    operations = [(r["operation"], r["principal"], r["details"]) for r in records]
    assert ("sys_rotate_keyring", "cli", {"term": 2}) in operations
    assert ("sys_rotate_root", "cli", {"new_root_key": "file", "terms_rewrapped": 2}) in operations
    assert not any(new_root.read_text().strip() in json.dumps(r) for r in records)


def test_a_term_under_a_root_this_process_lacks_is_a_503_not_a_500(
    client: TestClient, tmp_path: Path
) -> None:
    from app.server.bootstrap import load_root_key
    from app.settings import Settings
    from app.store import KeyWrapper, open_store

    assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
    settings: Settings = client.app.state.services.settings  # type: ignore[attr-defined]
    operator = open_store(
        settings.resolved_database_url, lambda: KeyWrapper(load_root_key(settings))
    )
    try:
        operator.keyring.rotate_root(
            KeyWrapper(os.urandom(32))
        )  # the generated file keeps the old one
        operator.keyring.rotate()
    finally:
        operator.close()
    answer = client.post("/v1/keys", json={"name": "k2", "type": "aez"})
    assert answer.status_code == 503
    assert answer.json()["type"] == "urn:cipherd:problem:root-key-unavailable"
    assert answer.headers["Retry-After"]
    sealed = client.post("/v1/aez/k/encrypt", json={"plaintext": "aGk="})
    assert sealed.status_code == 200  # the term it holds still serves
