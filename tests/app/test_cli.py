"""The `cipherd` command: key and token administration on the store, the OpenAPI dump, and the
client's paging of a listing."""

import argparse
import base64
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from app.cli import main
from app.settings import get_settings
from tests.e2e.server import serve_process
from tests.e2e.terminal import on_a_terminal, read_until


@pytest.fixture
def empty_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data directory setting naming a directory that does not exist yet."""
    monkeypatch.setenv("CIPHERD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CIPHERD_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


@pytest.fixture
def data_dir(empty_data_dir: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A data directory with a new store in it (`cipherd local init`)."""
    assert run(capsys, "local", "init") == {"data_dir": str(empty_data_dir.absolute())}
    return empty_data_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    main(list(argv))
    out = capsys.readouterr().out
    return json.loads(out) if out.strip() else None


def test_keys_lifecycle(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    created = run(capsys, "local", "keys", "create", "orders", "ecies-secp256k1")
    assert created["name"] == "orders" and created["latest_version"] == 1
    fe = run(capsys, "local", "keys", "create", "analytics", "ipfe-opt", "--dimension", "4")
    assert (fe["dimension"], fe["curve"]) == (4, "bls12-381")
    assert run(capsys, "local", "keys", "rotate", "orders")["latest_version"] == 2
    assert [k["name"] for k in run(capsys, "local", "keys", "list")] == ["analytics", "orders"]
    assert run(capsys, "local", "keys", "delete", "orders")["state"] == "pending-deletion"
    listed = run(capsys, "local", "keys", "list")
    assert [(k["name"], k["state"]) for k in listed] == [
        ("analytics", "active"),
        ("orders", "pending-deletion"),
    ]
    assert run(capsys, "local", "keys", "restore", "orders")["latest_version"] == 2
    assert (data_dir / "root-key").exists()


def test_keys_read_as_the_api_gives_them(
    data_dir: Path, capsys: pytest.CaptureFixture[str], client: TestClient
) -> None:
    created = run(
        capsys, "local", "keys", "create", "orders", "ipfe-opt", "--dimension", "3",
        "--curve", "bn254", "--exportable",
    )  # fmt: skip
    assert (created["curve"], created["exportable"]) == ("bn254", True)
    assert client.get("/v1/keys/orders").json() == created
    rotated = run(capsys, "local", "keys", "rotate", "orders")
    assert rotated["latest_version"] == 2
    assert client.get("/v1/keys/orders").json() == rotated
    assert client.get("/v1/keys").json()["keys"] == run(capsys, "local", "keys", "list")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["local", "keys", "create", "bad name", "aez"], "name: String should match pattern"),
        (["local", "keys", "create", "x", "rsa"], "type: unknown key type 'rsa'"),
        (
            ["local", "keys", "create", "x", "aez", "--dimension", "3"],
            "only FE key types take a dimension",
        ),
        (["local", "keys", "create", "x", "ipfe-opt"], "key type ipfe-opt needs a dimension"),
        (
            ["local", "keys", "create", "x", "ipfe-opt", "--dimension", "0"],
            "dimension: Input should be",
        ),
        # Refused before any setup: drawing a key of this size would take all the memory.
        (
            ["local", "keys", "create", "x", "ipfe-opt", "--dimension", "100000000"],
            "maximum of 128",
        ),
        (
            ["local", "keys", "create", "x", "ipfe-opt", "--dimension", "3", "--curve", "p256"],
            "curve:",
        ),
        (["local", "keys", "rotate", "missing"], "no key named 'missing'"),
        (["local", "keys", "delete", "missing"], "no key named 'missing'"),
        (
            ["local", "tokens", "create", "--keys", "a*", "--operations", "fly"],
            "operations.0: Input",
        ),
        (
            ["local", "tokens", "create", "--keys", "a*", "--operations", "read", "--ttl", "0"],
            "ttl_seconds",
        ),
    ],
)
def test_refusals_are_one_line_and_store_nothing(
    data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit, match=re.escape(message)):
        main(argv)
    assert run(capsys, "local", "keys", "list") == []
    assert run(capsys, "local", "tokens", "list") == []


def test_an_existing_name_is_refused(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "local", "keys", "create", "orders", "aez")
    with pytest.raises(SystemExit, match="a key named 'orders' already exists"):
        main(["local", "keys", "create", "orders", "aez"])
    assert run(capsys, "local", "keys", "list") == [{**first, "versions": None}]


@pytest.mark.parametrize(
    "argv",
    [["--workers", "0"], ["--workers", "257"], ["--workers", "two"], ["--port", "65536"]],
)
def test_serve_arguments_are_checked_before_anything_starts(
    empty_data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *argv])
    assert exited.value.code == 2
    assert f"error: argument {argv[0]}:" in capsys.readouterr().err
    assert not empty_data_dir.exists()  # no secret generated, no store opened


@pytest.mark.parametrize(
    "argv",
    [
        ["local", "keys", "list"],
        ["local", "keys", "create", "orders", "aez"],
        ["local", "tokens", "list"],
        ["keyring", "status"],
        ["local", "audit", "verify"],
    ],
)
def test_commands_on_the_store_refuse_a_directory_without_one(
    empty_data_dir: Path, argv: list[str]
) -> None:
    """Run from another directory, a command says where it looked and how to point it
    elsewhere, and leaves nothing behind (it used to print [] and make a new store)."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    message = str(exited.value.code)
    assert f"no cipherd store in {empty_data_dir.absolute()}" in message
    assert "CIPHERD_DATA_DIR" in message and "cipherd local init" in message
    assert not empty_data_dir.exists()


def test_tokens(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issued = run(
        capsys, "local", "tokens", "create", "--keys", "a-*,b", "--operations", "encrypt,read"
    )
    assert issued["token"].startswith("cdt_")
    listed = run(capsys, "local", "tokens", "list")
    assert listed[0]["keys"] == ["a-*", "b"] and listed[0]["operations"] == ["encrypt", "read"]
    assert issued["token"] not in json.dumps(listed)
    run(capsys, "local", "tokens", "revoke", issued["id"])
    assert run(capsys, "local", "tokens", "list") == []
    with pytest.raises(SystemExit, match="no token"):
        main(["local", "tokens", "revoke", issued["id"]])


def test_tokens_list_reads_the_store_a_page_at_a_time(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.server.bootstrap import open_configured_store
    from app.store import TokenRecord

    store = open_configured_store(get_settings())
    try:
        for index in range(1001):
            token_id = f"{index:016x}"
            store.tokens.add(
                TokenRecord(token_id, token_id.encode() * 2, "", ("k",), (), 1.0, None)
            )
    finally:
        store.close()
    listed = [token["id"] for token in run(capsys, "local", "tokens", "list")]
    assert listed == [f"{index:016x}" for index in range(1001)]


def test_the_admin_token_rotates(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.ops.token_values import hash_token
    from app.server.bootstrap import open_configured_store

    first = run(capsys, "admin-token", "rotate")["admin_token"]
    second = run(capsys, "admin-token", "rotate")["admin_token"]
    assert first.startswith("cda_") and first != second
    store = open_configured_store(get_settings())
    try:
        assert store.auth_state.read().admin_token_hash == hash_token(second)
    finally:
        store.close()


def test_openapi_dump(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["openapi"])
    document = yaml.load(capsys.readouterr().out, Loader=yaml.CSafeLoader)
    assert document["info"]["title"] == "cipherd"
    assert "/v1/ecies/{name}/encrypt" in document["paths"]


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        (
            {"CIPHERD_MAX_BODY_BYTES": "10", "CIPHERD_LOG_LEVEL": "chatty"},
            "CIPHERD_MAX_BODY_BYTES: Input should be greater than or equal to 1024; "
            "CIPHERD_LOG_LEVEL: Value error, log_level must be DEBUG",
        ),
        ({"CIPHERD_DATABASE_URL": "mysql://db"}, "CIPHERD_DATABASE_URL must start with"),
        ({"CIPHERD_ROOT_KEY": "secret-but-not-base64!"}, "root key from CIPHERD_ROOT_KEY is not"),
        ({"CIPHERD_ADMIN_TOKEN": "secret-short"}, "CIPHERD_ADMIN_TOKEN must have at least 16"),
        ({"CIPHERD_ADMIN_TOKEN": "secret-long-enough\n"}, "check for a trailing newline"),
        ({"CIPHERD_ADMIN_TOKEN": "secret long enough"}, "CIPHERD_ADMIN_TOKEN may hold only"),
        ({"CIPHERD_ADMIN_TOKEN": "sécret-long-enough"}, "CIPHERD_ADMIN_TOKEN may hold only"),
        ({"CIPHERD_ADMIN_TOKEN": "secret-long\tenough"}, "CIPHERD_ADMIN_TOKEN may hold only"),
        (
            {"CIPHERD_KEY_CACHE_SECONDS": "inf", "CIPHERD_TOKEN_CACHE_SECONDS": "86400"},
            "CIPHERD_KEY_CACHE_SECONDS: Input should be less than or equal to 3600; "
            "CIPHERD_TOKEN_CACHE_SECONDS: Input should be less than or equal to 3600",
        ),
        (
            {"CIPHERD_WORKER_UNRESPONSIVE_SECONDS": "inf"},
            "CIPHERD_WORKER_UNRESPONSIVE_SECONDS: Input should be a finite number",
        ),
    ],
)
def test_a_wrong_setting_stops_serve_in_one_line(
    tmp_path: Path, environment: dict[str, str], message: str
) -> None:
    refusal = _refused_serve(tmp_path / "data", environment)
    assert message in refusal
    for secret in ("CIPHERD_ROOT_KEY", "CIPHERD_ADMIN_TOKEN"):
        assert environment.get(secret, "\0") not in refusal


def test_serve_refuses_a_root_key_that_is_not_the_stores(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "local", "keys", "create", "orders", "aez")
    other = base64.b64encode(os.urandom(32)).decode()
    refusal = _refused_serve(data_dir, {"CIPHERD_ROOT_KEY": other})
    assert "the root key does not open this key store" in refusal
    assert other not in refusal


def test_serve_names_a_file_it_cannot_use(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"not a database " * 100)
    missing = tmp_path / "missing"
    refusal = _refused_serve(tmp_path / "data", {"CIPHERD_ROOT_KEY_FILE": str(missing)})
    assert f"cannot read {missing}: No such file or directory" in refusal
    refusal = _refused_serve(garbage, {})  # a data directory that is a file
    assert f"cannot create or read {garbage}/root-key" in refusal
    refusal = _refused_serve(tmp_path / "data", {"CIPHERD_DATABASE_URL": f"sqlite:///{garbage}"})
    assert f"cannot open the SQLite store {garbage}: file is not a database" in refusal


def test_serve_refuses_a_root_key_file_others_may_read(tmp_path: Path) -> None:
    root_key = tmp_path / "root-key"
    root_key.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    root_key.chmod(0o644)
    refusal = _refused_serve(tmp_path / "data", {"CIPHERD_ROOT_KEY_FILE": str(root_key)})
    assert f"the root key file {root_key} is open to its group or others (mode 0644)" in refusal
    assert root_key.read_text().strip() not in refusal


def test_serve_refuses_a_root_key_file_of_raw_bytes_without_showing_one(tmp_path: Path) -> None:
    """A file of the key's 32 raw bytes rather than their base64 (an easy mistake) was a
    traceback naming a byte of the key."""
    root_key = tmp_path / "root-key"
    root_key.write_bytes(b"\xf2" * 32)
    root_key.chmod(0o600)
    refusal = _refused_serve(tmp_path / "data", {"CIPHERD_ROOT_KEY_FILE": str(root_key)})
    assert f"the root key file {root_key} is not text" in refusal
    assert "0xf2" not in refusal and "Traceback" not in refusal


def test_pkcs11_settings_without_a_module_are_refused_not_replaced(tmp_path: Path) -> None:
    """The token, key and PIN file of a PKCS#11 root key without its module started the service
    on a root key generated into the data directory."""
    pin = tmp_path / "pin"
    pin.write_text("1234\n")
    settings = {
        "CIPHERD_ROOT_KEY_PKCS11_TOKEN": "cipherd",
        "CIPHERD_ROOT_KEY_PKCS11_KEY": "root",
        "CIPHERD_ROOT_KEY_PKCS11_PIN_FILE": str(pin),
    }
    refusal = _refused_serve(tmp_path / "data", settings)
    assert "CIPHERD_ROOT_KEY_PKCS11_MODULE is needed with CIPHERD_ROOT_KEY_PKCS11_TOKEN" in refusal
    assert not (tmp_path / "data" / "root-key").exists()


def _refused_serve(data_dir: Path, environment: dict[str, str]) -> str:
    """What `cipherd serve` says when it refuses to start: one line, exit status 1."""
    # A real process: were the check missing, `serve` would start and the timeout would fail.
    served = serve_process(data_dir, 0, environment)
    try:
        output, _ = served.communicate(timeout=60)
    finally:
        served.kill()
    assert served.returncode == 1
    assert len(output.strip().splitlines()) == 1, output
    return output


def test_a_reader_that_leaves_early_is_no_error(data_dir: Path) -> None:
    """`cipherd keys list | head -0`: the pipe closes before the output is written."""
    main(["local", "keys", "create", "orders", "aez"])
    read_end, write_end = os.pipe()
    os.close(read_end)
    command = [sys.executable, "-m", "app", "local", "keys", "list"]
    finished = subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    os.close(write_end)
    assert finished.returncode == 1
    assert finished.stderr == b""


def test_the_client_lists_the_services_key_types_and_operations() -> None:
    """The command's help and completion name the service's key types and token operations:
    a type or operation added to the service joins the client's lists."""
    from app.ops.grants import Operation
    from app.ops.keytypes import KEY_TYPES
    from cipherd._declare import KEY_TYPES as CLIENT_KEY_TYPES
    from cipherd._declare import OPERATIONS

    assert sorted(CLIENT_KEY_TYPES) == sorted(KEY_TYPES)
    assert sorted(OPERATIONS) == sorted(Operation)


def test_the_client_lists_every_page_of_one_versions_functions() -> None:
    """`cipherd fe functions` follows `next` to the last page, and asks the later pages for the
    first one's version: a rotation meanwhile would start another version's ledger."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from cipherd._commands import COMMANDS
    from cipherd.models import FeFunctions, ReleasedFunction

    released = [ReleasedFunction([i, 0], "admin", datetime.now(UTC), 2, 1) for i in range(3)]
    pages = {
        None: FeFunctions(released[:2], 2, 1, None, next=2),
        2: FeFunctions(released[2:], 2, 1, None, next=None),
    }
    asked: list[tuple[int | None, int | None, int | None]] = []

    def functions(
        name: str,
        *,
        key_version: int | None = None,
        limit: int | None = None,
        after: int | None = None,
    ) -> FeFunctions:
        asked.append((key_version, limit, after))
        return pages[after]

    client = SimpleNamespace(fe=SimpleNamespace(functions=functions))
    (listing,) = [c for c in COMMANDS if c.words == ("fe", "functions")]
    assert listing.run(client, argparse.Namespace(name="k")) == FeFunctions(released, 2, 1, None)
    assert asked == [(None, 1000, None), (2, 1000, 2)]


@pytest.mark.parametrize("token_from_env", [False, True], ids=["token-file", "token-in-env"])
def test_serve_on_a_terminal_says_how_to_start(tmp_path: Path, token_from_env: bool) -> None:
    """The address (the real port, asked for 0), /docs, where the admin token is, and an export
    line that works as pasted; the served document names the same address."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env["CIPHERD_DATA_DIR"] = str(tmp_path / "var")
    if token_from_env:
        env["CIPHERD_ADMIN_TOKEN"] = "terminal-admin-" + "x" * 16
    command = [sys.executable, "-m", "app", "serve", "--port", "0"]
    process, controller = on_a_terminal(command, env, tmp_path)
    try:
        shown = read_until(controller, r"export CIPHERD_ADDR=(\S+) CIPHERD_TOKEN=(.+?)\r?\n")
        address, token = shown.group(1), shown.group(2)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", address) and not address.endswith(":0")
        text = shown.string
        assert f"listening on {address} (1 worker)" in text and f"{address}/docs" in text
        if token_from_env:
            assert token == '"$CIPHERD_ADMIN_TOKEN"' and "x" * 16 not in text
        else:
            assert "the admin token: in var/admin-token" in text
            assert token == "$(cat var/admin-token)"
        cipherd = Path(sys.executable).parent / "cipherd"
        line = f"export CIPHERD_ADDR={address} CIPHERD_TOKEN={token}; {cipherd} sys ready"
        # Printed once the address takes connections: the line works at once.
        ready = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert ready.returncode == 0, ready.stderr
        served = httpx.get(f"{address}/openapi.json", timeout=10).json()
        assert served["servers"][0]["url"] == address
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        os.close(controller)


def test_serve_off_a_terminal_prints_no_welcome(tmp_path: Path) -> None:
    served = serve_process(tmp_path / "data", 0)
    try:
        output, _ = served.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        served.terminate()
        output, _ = served.communicate(timeout=30)
    assert "export CIPHERD_ADDR" not in output and "listening on" not in output


def test_one_version_for_the_service_and_its_client() -> None:
    """client/VERSION is the version of both distributions, of `cipherd --version` and of the
    OpenAPI document."""
    from importlib.metadata import version

    import cipherd
    from app import __version__

    written = (Path(__file__).parents[2] / "client" / "VERSION").read_text().strip()
    assert version("cipherd") == version("cipherd-client") == written
    assert cipherd.__version__ == __version__ == written
    shown = subprocess.run([sys.executable, "-m", "app", "--version"], capture_output=True)
    assert shown.stdout.decode() == f"cipherd {written}\n"
