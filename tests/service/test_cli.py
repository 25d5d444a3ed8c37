"""The `cipherd` command: key and token administration on the store, and the OpenAPI dump."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from app.cli import main
from app.settings import get_settings


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CIPHERD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CIPHERD_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    main(list(argv))
    out = capsys.readouterr().out
    return json.loads(out) if out.strip() else None


def test_keys_lifecycle(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    created = run(capsys, "keys", "create", "orders", "ecies-secp256k1")
    assert created["name"] == "orders" and created["latest_version"] == 1
    fe = run(capsys, "keys", "create", "analytics", "ipfe-opt", "--dimension", "4")
    assert fe["params"] == {"dimension": 4}
    assert run(capsys, "keys", "rotate", "orders")["latest_version"] == 2
    assert [k["name"] for k in run(capsys, "keys", "list")] == ["analytics", "orders"]
    run(capsys, "keys", "delete", "orders")
    assert [k["name"] for k in run(capsys, "keys", "list")] == ["analytics"]
    assert (data_dir / "root-key").exists()


def test_unknown_type_is_refused(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="unknown key type"):
        main(["keys", "create", "x", "rsa"])


def test_tokens(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issued = run(capsys, "tokens", "create", "--keys", "a-*,b", "--operations", "encrypt,read")
    assert issued["token"].startswith("cdt_")
    listed = run(capsys, "tokens", "list")
    assert listed[0]["keys"] == ["a-*", "b"] and listed[0]["operations"] == ["encrypt", "read"]
    assert issued["token"] not in json.dumps(listed)
    run(capsys, "tokens", "revoke", issued["id"])
    assert run(capsys, "tokens", "list") == []
    with pytest.raises(SystemExit, match="no token"):
        main(["tokens", "revoke", issued["id"]])


def test_openapi_dump(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["openapi"])
    document = yaml.safe_load(capsys.readouterr().out)
    assert document["info"]["title"] == "cipherd"
    assert "/v1/ecies/{name}/encrypt" in document["paths"]
