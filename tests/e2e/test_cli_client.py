"""The `cipherd` command against a running service: the README's three commands, AEZ and FE,
table output, and exit codes that tell usage errors, refusals and unreachable services apart."""

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "cli-admin-" + secrets.token_urlsafe(16)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(
        tmp_path_factory.mktemp("cli") / "data", env={"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    ) as s:
        yield s


def cipherd(
    server: Server | None, *argv: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    if server is not None:
        env |= {"CIPHERD_ADDR": server.url, "CIPHERD_TOKEN": ADMIN_TOKEN}
    return subprocess.run(
        [sys.executable, "-m", "app", *argv], input=stdin, capture_output=True, env=env, timeout=60
    )


def test_a_file_encrypted_and_decrypted_in_three_commands(server: Server, tmp_path: Path) -> None:
    message = secrets.token_bytes(300_000)
    (tmp_path / "plain").write_bytes(message)
    made = cipherd(server, "keys", "create", "orders", "ecies-secp256k1")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["name"] == "orders"
    sealed = cipherd(server, "ecies", "encrypt", "orders", "--in", str(tmp_path / "plain"))
    assert sealed.returncode == 0, sealed.stderr
    assert len(sealed.stdout) == len(b"cipherd:v1:") + len(message) + 65 + 16 + 16
    opened = cipherd(server, "ecies", "decrypt", "orders", stdin=sealed.stdout)
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout == message


def test_aez_fe_and_tables(server: Server) -> None:
    assert cipherd(server, "keys", "create", "session", "aez").returncode == 0
    options = ["--nonce", "AAECAw==", "--ad", "aGVhZGVy", "--tau", "16"]
    sealed = cipherd(server, "aez", "encrypt", "session", *options, stdin=b"hello")
    assert len(sealed.stdout) == len(b"cipherd:v1:") + 5 + 16
    assert (
        cipherd(server, "aez", "decrypt", "session", *options, stdin=sealed.stdout).stdout
        == b"hello"
    )

    assert (
        cipherd(server, "keys", "create", "stats", "ipfe-opt", "--dimension", "3").returncode == 0
    )
    key = json.loads(cipherd(server, "fe", "keygen", "stats", "--y", "1,2,3").stdout)
    ct = json.loads(cipherd(server, "fe", "encrypt", "stats", "--x", "4,5,6").stdout)
    result = cipherd(
        server, "fe", "decrypt", "stats", "--functional-key", key["functional_key"],
        "--ciphertext", ct["ciphertext"], "--bounds", "0,100",
    )  # fmt: skip
    assert json.loads(result.stdout) == {"result": 32}

    table = cipherd(server, "keys", "list", "--output", "table").stdout.decode().splitlines()
    assert table[0].split()[:2] == ["NAME", "TYPE"]
    assert {line.split()[0] for line in table[1:]} >= {"orders", "session", "stats"}


def test_key_policies(server: Server) -> None:
    assert cipherd(server, "keys", "create", "kept", "aez").returncode == 0
    for _ in range(2):
        assert cipherd(server, "keys", "rotate", "kept").returncode == 0
    changed = cipherd(
        server, "keys", "update", "kept", "--min-decryption-version", "2", "--deletion-protection"
    )
    assert changed.returncode == 0, changed.stderr
    key = json.loads(changed.stdout)
    assert (key["min_decryption_version"], key["deletion_protection"]) == (2, True)
    assert cipherd(server, "keys", "delete", "kept").returncode == 3  # refused: protected
    trimmed = json.loads(cipherd(server, "keys", "trim", "kept").stdout)
    assert [v["version"] for v in trimmed["versions"]] == [2, 3]
    unprotected = cipherd(server, "keys", "update", "kept", "--no-deletion-protection")
    assert json.loads(unprotected.stdout)["deletion_protection"] is False


def test_exit_codes(server: Server) -> None:
    assert cipherd(server, "keys", "create").returncode == 2  # usage
    refused = cipherd(server, "keys", "get", "missing-key")
    assert refused.returncode == 3 and b"no key named" in refused.stderr
    assert cipherd(server, "ecies", "decrypt", "missing-key", stdin=b"x").returncode == 3
    unreachable = cipherd(None, "keys", "list", "--address", "http://127.0.0.1:9")
    assert unreachable.returncode == 4 and b"cannot reach" in unreachable.stderr


def test_sign_verify_and_hmac(server: Server, tmp_path: Path) -> None:
    assert cipherd(server, "keys", "create", "eth", "ecdsa-secp256k1").returncode == 0
    options = ["--hash", "keccak256", "--format", "recoverable"]
    signed = cipherd(server, "sign", "eth", *options, stdin=b"message")
    assert signed.returncode == 0, signed.stderr
    signature = json.loads(signed.stdout)["signature"]
    (tmp_path / "message").write_bytes(b"message")
    checks = [
        (["--in", str(tmp_path / "message")], b"", True),
        ([], b"other", False),
    ]
    for extra, stdin, valid in checks:
        verdict = cipherd(
            server, "verify", "eth", *options, "--signature", signature, *extra, stdin=stdin
        )
        assert verdict.returncode == 0, verdict.stderr
        assert json.loads(verdict.stdout) == {"valid": valid}
    short = cipherd(server, "sign", "eth", "--prehashed", stdin=b"short")
    assert short.returncode == 3 and b"32-byte" in short.stderr

    assert cipherd(server, "keys", "create", "mac", "hmac").returncode == 0
    mac = json.loads(cipherd(server, "hmac", "mac", stdin=b"m").stdout)
    assert mac["key_version"] == 1
    checked = cipherd(server, "hmac", "mac", "--verify", mac["hmac"], stdin=b"m")
    assert json.loads(checked.stdout) == {"valid": True}
