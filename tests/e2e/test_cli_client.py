"""The `cipherd` command against a running service: every client command is run, and its exit
status checked (0 done, 1 a negative verdict, 2 usage, 3 refused, 4 unreachable or untrusted,
5 failed), `--out` included; tables, progress on a terminal, key names completed from the
service, and errors that name the command to run."""

import base64
import http.server
import json
import os
import re
import secrets
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import ecies as eciespy
import httpx
import pytest
from joserfc import jwk, jwt

from cipherd._commands import COMMANDS
from tests.e2e.issuer import running_issuer
from tests.e2e.server import Server, running
from tests.e2e.terminal import on_a_terminal, read_until
from tests.e2e.test_tls import Authority

# One process runs the whole module: its last test reads which commands the tests before it ran.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("cli_client")]

ADMIN_TOKEN = "cli-admin-" + secrets.token_urlsafe(16)
CIPHERD = Path(sys.executable).parent / "cipherd"
PREFIX = b"cipherd:v1:"
RAN: set[tuple[str, ...]] = set()  # the client commands run so far, by their words
DECLARED = {command.words for command in COMMANDS}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(
        tmp_path_factory.mktemp("cli") / "data", env={"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    ) as s:
        yield s


def environment(server: Server | None, token: str = ADMIN_TOKEN) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    if server is not None:
        env |= {"CIPHERD_ADDR": server.url, "CIPHERD_TOKEN": token}
    return env


def cipherd(
    server: Server | None,
    *argv: str,
    stdin: bytes = b"",
    status: int = 0,
    token: str = ADMIN_TOKEN,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed `cipherd` command (with `env` added to its environment); its exit
    status must be `status`."""
    words = tuple(word for word in argv[:2] if not word.startswith("-"))
    RAN.update(command for command in DECLARED if words[: len(command)] == command)
    ran = subprocess.run(
        [str(CIPHERD), *argv],
        input=stdin,
        capture_output=True,
        env=environment(server, token) | (env or {}),
        timeout=120,
    )
    assert ran.returncode == status, (argv, ran.returncode, ran.stderr.decode())
    return ran


def answer(ran: subprocess.CompletedProcess[bytes]) -> object:
    return json.loads(ran.stdout)


def fields(ran: subprocess.CompletedProcess[bytes]) -> Any:
    """An answer whose fields a test reads."""
    return json.loads(ran.stdout)


def name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def test_version_and_help() -> None:
    import cipherd as sdk

    version = subprocess.run([str(CIPHERD), "--version"], capture_output=True, text=True)
    assert (version.returncode, version.stdout) == (0, f"cipherd {sdk.__version__}\n")
    wide = {**os.environ, "COLUMNS": "400"}  # argparse wraps at hyphens
    helped = subprocess.run(
        [str(CIPHERD), "keys", "create", "--help"], capture_output=True, env=wide
    )
    text = helped.stdout.decode()
    assert helped.returncode == 0 and "ecies-secp256k1, ecies-x25519" in text
    assert "--allow-backup" in text and "--deletion-protection" in text
    assert "default: http://127.0.0.1:8000 (CIPHERD_ADDR is not set)" in text
    env = {**os.environ, "CIPHERD_ADDR": "http://10.1.2.3:9000"}
    helped = subprocess.run(
        [str(CIPHERD), "keys", "get", "--help"], capture_output=True, text=True, env=env
    )
    assert "default: http://10.1.2.3:9000 (CIPHERD_ADDR)" in helped.stdout


def test_keys(server: Server, tmp_path: Path) -> None:
    key = name("orders")
    made = answer(
        cipherd(
            server,
            "keys",
            "create",
            key,
            "ecies-secp256k1",
            "--allow-backup",
            "--deletion-protection",
            "--exportable",
        )
    )
    assert (made["name"], made["deletion_protection"], made["exportable"]) == (key, True, True)
    exists = cipherd(server, "keys", "create", key, "aez", status=3)
    assert b"already exists" in exists.stderr
    assert answer(cipherd(server, "keys", "get", key))["latest_version"] == 1
    assert key in {k["name"] for k in answer(cipherd(server, "keys", "list"))}
    assert answer(cipherd(server, "keys", "rotate", key))["latest_version"] == 2
    changed = cipherd(server, "keys", "update", key, "--min-decryption-version", "2")
    assert answer(changed)["min_decryption_version"] == 2
    assert [v["version"] for v in answer(cipherd(server, "keys", "trim", key))["versions"]] == [2]
    assert answer(cipherd(server, "keys", "public", key))["version"] == 2
    assert len(base64.b64decode(answer(cipherd(server, "keys", "export", key))["secret"])) == 32
    cipherd(server, "keys", "update", key, "--no-exportable", status=2)  # never offered
    assert answer(cipherd(server, "keys", "update", key, "--no-enabled"))["enabled"] is False
    assert answer(cipherd(server, "keys", "update", key, "--enabled"))["enabled"] is True

    protected = cipherd(server, "keys", "delete", key, status=3).stderr.decode()
    assert f"`cipherd keys update {key} --no-deletion-protection` before deleting" in protected
    cipherd(server, "keys", "update", key, "--no-deletion-protection")
    assert answer(cipherd(server, "keys", "delete", key))["state"] == "pending-deletion"
    pending = cipherd(server, "keys", "rotate", key, status=3).stderr.decode()
    assert f"`cipherd keys restore {key}` cancels it" in pending and "/v1/" not in pending
    assert answer(cipherd(server, "keys", "restore", key))["state"] == "active"
    missing = cipherd(server, "keys", "get", name("missing"), status=3)
    assert (
        b"`cipherd keys list` shows the keys" in missing.stderr and b"(request " in missing.stderr
    )

    # A backup to a file, imported under another name; and key material made elsewhere.
    wrapping = answer(cipherd(server, "sys", "wrapping-key"))["public_key"]
    backup = tmp_path / "backup.bin"
    cipherd(server, "keys", "backup", key, "--wrapping-key", wrapping, "--out", str(backup))
    copy = name("copy")
    restored = answer(cipherd(server, "keys", "import", str(backup), "--name", copy))
    assert (restored["name"], restored["latest_version"]) == (copy, 2)
    inline = answer(cipherd(server, "keys", "backup", key, "--wrapping-key", wrapping))
    assert len(base64.b64decode(inline["backup"])) > 64
    secret = secrets.token_bytes(32)
    wrapped = eciespy.encrypt(base64.b64decode(wrapping), secret)
    own = name("own")
    imported = cipherd(
        server, "keys", "import", "-", "--name", own, "--type", "ecies-secp256k1", stdin=wrapped
    )
    assert answer(imported)["name"] == own
    derived = [*("keys", "import", "-", "--name", name("own-aead"), "--type", "aes256-gcm")]
    brought = answer(cipherd(server, *derived, "--derived", "--convergent", stdin=wrapped))
    assert (brought["type"], brought["derived"], brought["convergent"]) == (
        "aes256-gcm",
        True,
        True,
    )
    cipherd(server, "keys", "import", str(backup), "--derived", status=2)  # a backup keeps its own
    cipherd(server, "keys", "import", "-", "--type", "aez", stdin=wrapped, status=2)  # no --name
    junk = ["keys", "import", "-", "--name", name("junk"), "--type", "aez"]
    unwrapped = cipherd(server, *junk, stdin=b"\x04" * 120, status=3).stderr.decode()
    assert "(`cipherd sys wrapping-key`)" in unwrapped and "/v1/" not in unwrapped
    cipherd(server, "keys", "import", str(tmp_path / "none"), status=2)  # no such file


def test_tables(server: Server) -> None:
    key = name("tabled")
    cipherd(server, "keys", "create", key, "aez")
    table = cipherd(server, "keys", "list", "--output", "table").stdout.decode().splitlines()
    assert table[0].split() == ["NAME", "TYPE", "LATEST_VERSION", "STATE", "CREATED_AT"]
    row = next(line.split() for line in table[1:] if line.startswith(key))
    assert row[1:4] == ["aez", "1", "active"]
    wide = cipherd(server, "keys", "list", "-o", "wide").stdout.decode().splitlines()
    assert {"EXPORTABLE", "DELETION_PROTECTION", "VERSIONS"} <= set(wide[0].split())


def test_tokens(server: Server) -> None:
    key = name("scoped")
    cipherd(server, "keys", "create", key, "aez")
    issued = answer(
        cipherd(server, "tokens", "create", "--keys", key, "--operations", "read", "--ttl", "60")
    )
    assert issued["token"].startswith("cdt_")
    listed = cipherd(server, "tokens", "list", "-o", "table").stdout.decode()
    assert issued["id"] in listed and issued["token"] not in listed
    forbidden = cipherd(server, "keys", "rotate", key, token=issued["token"], status=3)
    assert b"`cipherd tokens list` (admin)" in forbidden.stderr
    unauthorized = cipherd(server, "keys", "list", token="not-a-token-at-all", status=3)
    assert b"CIPHERD_TOKEN or --token-file" in unauthorized.stderr
    cipherd(server, "tokens", "revoke", issued["id"])
    cipherd(server, "tokens", "revoke", issued["id"], status=3)
    cipherd(server, "tokens", "create", "--keys", key, "--operations", "fly", status=3)


def test_tokens_list_follows_every_page(server: Server) -> None:
    """The service answers 1,000 tokens a page at most: `tokens list` follows `next` to the
    last page."""
    with server.client(ADMIN_TOKEN) as admin, ThreadPoolExecutor(4) as pool:

        def issue(index: int) -> str:
            body = {"keys": [f"paged-{index}"], "operations": ["read"], "ttl_seconds": 600}
            made = admin.post("/v1/tokens", json=body)
            assert made.status_code == 201, made.text
            return str(made.json()["id"])

        issued = set(pool.map(issue, range(1001)))
    listed = [token["id"] for token in fields(cipherd(server, "tokens", "list"))]
    assert len(listed) == len(set(listed)) >= 1001 and listed == sorted(listed)
    assert issued <= set(listed)


def test_policies_and_a_token_of_its_own(server: Server) -> None:
    key = name("ruled")
    cipherd(server, "keys", "create", key, "aez")
    policy = name("p")
    written = answer(cipherd(server, "policies", "put", policy, "--rule", f"{key}:read"))
    assert written["version"] == 1 and written["rules"] == [{"keys": [key], "operations": ["read"]}]
    assert answer(cipherd(server, "policies", "get", policy))["name"] == policy
    assert policy in answer(cipherd(server, "policies", "list"))
    cipherd(server, "policies", "put", policy, "--rule", "bad-rule", status=2)
    issued = answer(
        cipherd(server, "tokens", "create", "--policies", policy, "--ttl", "60", "--max-ttl", "90")
    )
    assert issued["policies"] == ["default", policy]
    assert answer(cipherd(server, "tokens", "lookup", issued["id"]))["identity"] == "token:admin"
    own = answer(cipherd(server, "tokens", "self", token=issued["token"]))
    assert own["id"] == issued["id"]
    renewed = answer(
        cipherd(server, "tokens", "renew-self", "--increment", "3600", token=issued["token"])
    )
    assert renewed["expires_at"] == renewed["max_expires_at"]
    assert answer(cipherd(server, "keys", "get", key, token=issued["token"]))["name"] == key
    cipherd(server, "policies", "delete", policy)
    cipherd(server, "keys", "get", key, token=issued["token"], status=3)
    cipherd(server, "tokens", "revoke-self", token=issued["token"])
    cipherd(server, "tokens", "self", token=issued["token"], status=3)


def test_sys_unwrap(server: Server) -> None:
    wrapped = httpx.post(
        f"{server.url}/v1/sys/wrapping/wrap",
        json={"handed": "on"},
        headers={"X-Vault-Token": ADMIN_TOKEN, "X-Vault-Wrap-TTL": "60"},
    ).json()["wrap_info"]["token"]
    # The receiver needs no token of its own: the wrapping token (on stdin) is enough.
    unwrapped = answer(cipherd(server, "sys", "unwrap", stdin=wrapped.encode(), token=""))
    assert unwrapped["data"] == {"handed": "on"}  # type: ignore[index]
    refused = cipherd(server, "sys", "unwrap", stdin=wrapped.encode(), status=3)
    assert b"wrapping token is not valid or does not exist" in refused.stderr


def test_approle_wrapped_secret_id_and_login(server: Server) -> None:
    role = name("ci")
    cipherd(server, "approle", "write", role, "--policies", "reader", "--secret-id-num-uses", "1")
    cipherd(server, "approle", "write", role, "--token-ttl", "600")
    assert role in fields(cipherd(server, "approle", "list"))
    settings = fields(cipherd(server, "approle", "read", role))
    assert settings["token_ttl"] == 600 and settings["secret_id_num_uses"] == 1
    assert settings["token_policies"] == ["reader"]
    role_id = fields(cipherd(server, "approle", "role-id", role))["role_id"]
    wrapped = fields(cipherd(server, "approle", "secret-id", role, "--wrap-ttl", "60"))
    wrapping_token = wrapped["token"].encode()
    unwrapped = fields(cipherd(server, "sys", "unwrap", stdin=wrapping_token))
    secret_id = unwrapped["data"]["secret_id"]
    refused = cipherd(server, "sys", "unwrap", stdin=wrapping_token, status=3)
    assert b"wrapping token is not valid or does not exist" in refused.stderr
    # The machine has no token of its own: the secret id (on stdin) gets it one.
    login = fields(
        cipherd(
            server, "login", "approle", "--role-id", role_id, stdin=secret_id.encode(), token=""
        )
    )
    assert login["token"].startswith("cdt_") and login["policies"] == ["default", "reader"]
    assert 590 <= login["lease_duration"] <= 600
    used_up = cipherd(
        server,
        "login",
        "approle",
        "--role-id",
        role_id,
        stdin=secret_id.encode(),
        token="",
        status=3,
    )
    assert (
        b"invalid role or secret ID" in used_up.stderr and secret_id.encode() not in used_up.stderr
    )
    plain = fields(
        cipherd(
            server, "approle", "secret-id", role, "--metadata", '{"host": "a"}', "--num-uses", "1"
        )
    )
    assert plain["num_uses"] == 1 and plain["secret_id"]
    cipherd(server, "approle", "delete", role)
    cipherd(server, "approle", "read", role, status=3)
    cipherd(server, "approle", "secret-id", role, "--wrap-ttl", "60", status=3)


def test_ecies_files_streams_and_the_rest(server: Server, tmp_path: Path) -> None:
    key = name("sealed")
    cipherd(server, "keys", "create", key, "ecies-secp256k1")
    message = secrets.token_bytes(300_000)
    plain, sealed, opened = tmp_path / "plain", tmp_path / "sealed", tmp_path / "opened"
    plain.write_bytes(message)
    done = cipherd(server, "ecies", "encrypt", key, "--in", str(plain), "--out", str(sealed))
    assert done.stdout == b"" and done.stderr == b""
    assert len(sealed.read_bytes()) == len(PREFIX) + len(message) + 65 + 16 + 16
    cipherd(server, "ecies", "decrypt", key, "--in", str(sealed), "--out", str(opened))
    assert opened.read_bytes() == message
    piped = cipherd(server, "ecies", "encrypt", key, "--no-envelope", stdin=b"hi").stdout
    assert len(piped) == 2 + 65 + 16 + 16
    assert cipherd(server, "ecies", "decrypt", key, "--key-version", "1", stdin=piped).stdout == (
        b"hi"
    )

    # A refused decryption leaves no output file behind, and an unwritable one is a usage error.
    refused = tmp_path / "refused"
    cipherd(server, "ecies", "decrypt", key, "--out", str(refused), stdin=b"\x04" * 99, status=3)
    assert not refused.exists()
    cipherd(server, "ecies", "decrypt", key, "--out", "/proc/nowhere/x", stdin=piped, status=2)

    public = answer(cipherd(server, "keys", "public", key))["public_key"]
    to_public = cipherd(
        server, "ecies", "encrypt-to-public-key", "--public-key", public, stdin=b"direct"
    ).stdout
    assert cipherd(server, "ecies", "decrypt", key, stdin=to_public).stdout == b"direct"
    cipherd(server, "ecies", "encrypt-to-public-key", "--public-key", "%%", status=2)

    data_key = answer(cipherd(server, "ecies", "datakey", key, "--bytes", "16"))
    assert len(base64.b64decode(data_key["plaintext"])) == 16
    ciphertext = base64.b64decode(data_key["ciphertext"])
    assert answer(cipherd(server, "ecies", "datakey", key, "--no-plaintext"))["plaintext"] is None
    cipherd(server, "keys", "rotate", key)
    moved = tmp_path / "moved"
    cipherd(server, "ecies", "rewrap", key, "--out", str(moved), stdin=ciphertext)
    assert moved.read_bytes().startswith(b"cipherd:v2:")
    reopened = cipherd(server, "ecies", "decrypt", key, "--in", str(moved)).stdout
    assert reopened == base64.b64decode(data_key["plaintext"])


def test_aez(server: Server, tmp_path: Path) -> None:
    key = name("session")
    cipherd(server, "keys", "create", key, "aez")
    options = ["--nonce", "AAECAw==", "--ad", "aGVhZGVy", "--ad", "eA==", "--tau", "16"]
    sealed = tmp_path / "sealed"
    cipherd(server, "aez", "encrypt", key, *options, "--out", str(sealed), stdin=b"hello")
    assert len(sealed.read_bytes()) == len(PREFIX) + 5 + 16
    opened = cipherd(server, "aez", "decrypt", key, *options, "--in", str(sealed)).stdout
    assert opened == b"hello"
    wrong = cipherd(server, "aez", "decrypt", key, "--nonce", "AA==", "--in", str(sealed), status=3)
    assert wrong.stdout == b""
    data_key = answer(cipherd(server, "aez", "datakey", key))
    cipherd(server, "keys", "rotate", key)
    ciphertext = base64.b64decode(data_key["ciphertext"])
    nonce = ["--nonce", data_key["nonce"], "--tau", str(data_key["tau"])]
    moved = cipherd(server, "aez", "rewrap", key, *nonce, stdin=ciphertext).stdout
    assert moved.startswith(b"cipherd:v2:")
    back = cipherd(server, "aez", "decrypt", key, *nonce, stdin=moved).stdout
    assert back == base64.b64decode(data_key["plaintext"])
    cipherd(server, "aez", "encrypt", key, "--nonce", "not base64!", status=2)


def test_signatures_and_hmac_verdicts(server: Server, tmp_path: Path) -> None:
    key = name("eth")
    cipherd(server, "keys", "create", key, "ecdsa-secp256k1")
    options = ["--hash", "keccak256", "--format", "recoverable"]
    signature = answer(cipherd(server, "sign", key, *options, stdin=b"message"))["signature"]
    (tmp_path / "message").write_bytes(b"message")
    valid = cipherd(
        server, "verify", key, *options, "--signature", signature, "--in", str(tmp_path / "message")
    )
    assert answer(valid) == {"valid": True}
    invalid = cipherd(
        server, "verify", key, *options, "--signature", signature, stdin=b"other", status=1
    )
    assert answer(invalid) == {"valid": False} and b"not valid" in invalid.stderr
    public = answer(cipherd(server, "keys", "public", key))["public_key"]
    der = answer(cipherd(server, "sign", key, stdin=b"m"))["signature"]
    by_public_key = ["--public-key", public, "--type", "ecdsa-secp256k1", "--signature", der]
    cipherd(server, "verify", *by_public_key, stdin=b"m")
    cipherd(server, "verify", *by_public_key, stdin=b"n", status=1)
    cipherd(server, "verify", "--signature", der, stdin=b"m", status=2)  # no key, no public key
    short = cipherd(server, "sign", key, "--prehashed", stdin=b"short", status=3)
    assert b"32-byte" in short.stderr

    # A derived ed25519 key signs for a context, and verifies under that context only.
    tenant = name("tenant")
    cipherd(server, "keys", "create", tenant, "ed25519", "--derived")
    alice = ["--context", base64.b64encode(b"alice").decode()]
    signed = answer(cipherd(server, "sign", tenant, *alice, stdin=b"m"))["signature"]
    cipherd(server, "verify", tenant, *alice, "--signature", signed, stdin=b"m")
    bob = ["--context", base64.b64encode(b"bob").decode()]
    cipherd(server, "verify", tenant, *bob, "--signature", signed, stdin=b"m", status=1)
    cipherd(server, "sign", tenant, stdin=b"m", status=3)  # a derived key needs its context
    cipherd(server, "verify", *by_public_key, *alice, stdin=b"m", status=2)

    mac_key = name("mac")
    cipherd(server, "keys", "create", mac_key, "hmac")
    mac = answer(cipherd(server, "hmac", mac_key, "--algorithm", "sha512", stdin=b"m"))
    assert mac["key_version"] == 1
    check = ["--algorithm", "sha512", "--verify", mac["hmac"]]
    assert answer(cipherd(server, "hmac", mac_key, *check, stdin=b"m")) == {"valid": True}
    assert answer(cipherd(server, "hmac", mac_key, *check, stdin=b"x", status=1)) == {
        "valid": False
    }


def test_aead_hpke_and_rsa_encryption(server: Server, tmp_path: Path) -> None:
    aead = name("aead")
    cipherd(server, "keys", "create", aead, "aes256-gcm")
    options = ["--associated-data", "aGVhZGVy"]
    message = secrets.token_bytes(200_000)
    (tmp_path / "plain").write_bytes(message)
    sealed = tmp_path / "sealed"
    cipherd(
        server,
        "aead",
        "encrypt",
        aead,
        *options,
        "--in",
        str(tmp_path / "plain"),
        "--out",
        str(sealed),
    )
    assert cipherd(server, "aead", "decrypt", aead, *options, "--in", str(sealed)).stdout == message
    cipherd(server, "aead", "decrypt", aead, "--in", str(sealed), status=3)  # other AD
    data_key = answer(cipherd(server, "aead", "datakey", aead, "--bytes", "16"))
    assert len(base64.b64decode(data_key["plaintext"])) == 16
    cipherd(server, "keys", "rotate", aead)
    moved = cipherd(server, "aead", "rewrap", aead, stdin=base64.b64decode(data_key["ciphertext"]))
    assert moved.stdout.startswith(b"cipherd:v2:")
    opened = cipherd(server, "aead", "decrypt", aead, stdin=moved.stdout).stdout
    assert opened == base64.b64decode(data_key["plaintext"])

    hpke = name("hpke")
    cipherd(server, "keys", "create", hpke, "hpke-mlkem768-x25519")
    info = ["--info", "aW5mbw=="]
    sealed_hpke = cipherd(server, "hpke", "encrypt", hpke, *info, stdin=b"post-quantum").stdout
    assert cipherd(server, "hpke", "decrypt", hpke, *info, stdin=sealed_hpke).stdout == (
        b"post-quantum"
    )
    cipherd(server, "hpke", "decrypt", hpke, stdin=sealed_hpke, status=3)  # other info
    public = answer(cipherd(server, "keys", "public", hpke))["public_key"]
    direct = cipherd(
        server,
        "hpke",
        "encrypt-to-public-key",
        *("--public-key", public, "--type", "hpke-mlkem768-x25519", *info),
        stdin=b"to the public key",
    ).stdout
    opened = cipherd(server, "hpke", "decrypt", hpke, *info, "--key-version", "1", stdin=direct)
    assert opened.stdout == b"to the public key"

    rsa = name("rsa")
    cipherd(server, "keys", "create", rsa, "rsa-2048")
    sealed_rsa = cipherd(server, "rsa", "encrypt", rsa, stdin=b"short secret").stdout
    assert cipherd(server, "rsa", "decrypt", rsa, stdin=sealed_rsa).stdout == b"short secret"


def test_jwt_and_jwks(server: Server) -> None:
    key = name("jwt")
    cipherd(server, "keys", "create", key, "ecdsa-p256")
    claims = {"sub": "alice", "aud": "orders"}
    signed = answer(cipherd(server, "jwt", "sign", key, "--claims", json.dumps(claims)))
    assert signed["key_version"] == 1
    key_set = jwk.KeySet.import_key_set(answer(cipherd(server, "keys", "jwks", key)))
    token = jwt.decode(signed["jwt"], key_set)
    assert token.header["alg"] == "ES256" and token.header["kid"] == f"{key}:v1"
    assert token.claims == claims
    cipherd(server, "jwt", "sign", key, "--claims", "not json", status=2)


def test_functional_encryption(server: Server) -> None:
    key = name("stats")
    cipherd(server, "keys", "create", key, "ipfe-opt", "--dimension", "3")
    functional = answer(cipherd(server, "fe", "keygen", key, "--y", "1,2,3"))["functional_key"]
    ciphertext = answer(cipherd(server, "fe", "encrypt", key, "--x", "4,5,6"))["ciphertext"]
    decrypt = ["fe", "decrypt", key, "--functional-key", functional, "--ciphertext", ciphertext]
    assert answer(cipherd(server, *decrypt, "--bounds", "0,100")) == {"result": 32}
    assert answer(cipherd(server, *decrypt, "--bounds", "0,10")) == {"result": None}
    cipherd(server, *decrypt, "--bounds", "0", status=2)
    ledger = answer(cipherd(server, "fe", "functions", key))
    assert [f["function"] for f in ledger["functions"]] == [[1, 2, 3]]
    cipherd(server, "fe", "encrypt", key, "--x", "1,2", status=3)  # the wrong length
    cipherd(server, "fe", "encrypt", key, "--x", "1,b", status=2)

    quadratic = name("quad")
    cipherd(server, "keys", "create", quadratic, "qfe-sgp", "--dimension", "2")
    key_f = answer(cipherd(server, "fe", "keygen", quadratic, "--f", "[[1,0],[0,1]]"))
    both = answer(cipherd(server, "fe", "encrypt", quadratic, "--x", "1,2", "--y", "3,4"))
    result = cipherd(
        server, "fe", "decrypt", quadratic, "--functional-key", key_f["functional_key"],
        "--ciphertext", both["ciphertext"], "--bounds", "0,100",
    )  # fmt: skip
    assert answer(result) == {"result": 1 * 3 + 2 * 4}


def test_random_audit_and_the_service(server: Server, tmp_path: Path) -> None:
    assert len(base64.b64decode(answer(cipherd(server, "random", "24"))["random"])) == 24
    cipherd(server, "random", "24", "--out", str(tmp_path / "random"))
    assert len((tmp_path / "random").read_bytes()) == 24
    cipherd(server, "random", "0", status=3)

    key = name("audited")
    cipherd(server, "keys", "create", key, "aez")
    page = answer(cipherd(server, "audit", "list", "--key", key))
    assert [r["operation"] for r in page["records"]] == ["keys_create_key"]
    table = cipherd(server, "audit", "list", "--key", key, "-o", "table").stdout.decode()
    assert table.split()[:5] == ["TIME", "OPERATION", "KEY", "PRINCIPAL", "STATUS"]
    cipherd(server, "audit", "list", "--since", "yesterday", status=3)
    verified = answer(cipherd(server, "audit", "verify"))
    assert verified["verified"] is True and verified["faults"] == []
    assert verified["records"] >= 2
    table = cipherd(server, "audit", "verify", "-o", "table").stdout.decode()
    assert table.split()[:4] == ["VERIFIED", "RECORDS", "CHAINS", "FAULTS"]

    assert answer(cipherd(server, "sys", "ready")) == {"status": "ok"}
    term = answer(cipherd(server, "sys", "keyring"))["term"]
    assert answer(cipherd(server, "sys", "rotate-keyring"))["term"] == term + 1


def test_usage_and_an_unreachable_service(tmp_path: Path) -> None:
    assert cipherd(None, "keys", "create", status=2).stderr.startswith(b"usage:")
    cipherd(None, "keys", "list", "--output", "yaml", status=2)
    cipherd(None, "keys", "list", "--token-file", str(tmp_path / "none"), status=2)
    unreachable = cipherd(None, "keys", "list", "--address", "http://127.0.0.1:9", status=4)
    assert b"cannot reach http://127.0.0.1:9" in unreachable.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("jwt", "sign", "k", "--claims", "[1]"), b"not a JSON object"),
        (("jwt", "sign", "k", "--claims", '{"a": NaN}'), b"NaN is not a JSON number"),
        (("jwt", "sign", "k", "--claims", '{"a": 1e400}'), b"past the largest float"),
        (("jwt", "sign", "k", "--claims", "{}", "--header", "[1]"), b"not a JSON object"),
        (("jwt", "sign", "k", "--claims", "[" * 3000 + "]" * 3000), b"nested too deeply"),
        (("keys", "update", "k", "--fe-policy", '"text"'), b"not a JSON object"),
    ],
)
def test_arguments_that_are_not_what_they_name_are_usage_errors(
    argv: tuple[str, ...], said: bytes
) -> None:
    """Each was a traceback with status 1, the status of a negative verdict."""
    refused = cipherd(None, *argv, status=2)
    assert said in refused.stderr and b"Traceback" not in refused.stderr


def test_a_token_no_header_can_carry_is_a_usage_error(tmp_path: Path) -> None:
    """A token outside visible ASCII was a UnicodeEncodeError traceback; one with a line break
    was "cannot reach" the service (status 4); a token file that is not text, a traceback."""
    for token in ("tök", "a\nb", "a b"):
        refused = cipherd(None, "keys", "list", env={"CIPHERD_TOKEN": token}, status=2)
        assert b"a token is visible ASCII" in refused.stderr
    binary = tmp_path / "token"
    binary.write_bytes(b"\xff\xfe")
    refused = cipherd(None, "keys", "list", "--token-file", str(binary), status=2)
    assert b"a token file holds text" in refused.stderr


class _Failing(http.server.BaseHTTPRequestHandler):
    """A service that fails every request with a 500 problem document."""

    def do_GET(self) -> None:
        body = json.dumps(
            {
                "type": "urn:cipherd:problem:internal",
                "title": "Internal",
                "status": 500,
                "detail": "it broke",
            }
        ).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/problem+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_failing_service_is_status_5() -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        address = f"http://127.0.0.1:{httpd.server_address[1]}"
        failed = cipherd(None, "keys", "get", "k", "--address", address, status=5)
        assert b"500 Internal: it broke" in failed.stderr
    finally:
        httpd.shutdown()


def test_an_untrusted_certificate_is_named(tmp_path: Path) -> None:
    directory = tmp_path / "pki"
    directory.mkdir()
    ca = Authority(directory, "cli-test-ca")
    issued = ca.issue("server", server=True)
    tls = ["--tls-cert-file", str(issued.cert), "--tls-key-file", str(issued.key)]
    options = {"verify": ssl.create_default_context(cafile=ca.cert)}
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with running(tmp_path / "data", env=env, args=tls, client_options=options) as server:
        untrusted = cipherd(server, "sys", "ready", status=4)
        message = untrusted.stderr.decode()
        assert "is not trusted (unable to get local issuer certificate)" in message
        assert "--ca-file" in message and "cannot reach" not in message
        assert answer(cipherd(server, "sys", "ready", "--ca-file", str(ca.cert))) == {
            "status": "ok"
        }


def test_logins(tmp_path: Path) -> None:
    """`login jwt` with a JWT from a file or stdin, `login cert` with the client certificate the
    command connects with; each prints the token, and a refusal is status 3."""
    directory = tmp_path / "pki"
    directory.mkdir()
    ca = Authority(directory, "cli-login-ca")
    server_cert, client = ca.issue("server", server=True), ca.issue("client", server=False)
    tls = [
        *("--tls-cert-file", str(server_cert.cert), "--tls-key-file", str(server_cert.key)),
        *("--tls-client-ca-file", str(ca.cert)),
    ]
    context = ssl.create_default_context(cafile=ca.cert)
    context.load_cert_chain(client.cert, client.key)
    tls_env = {
        "CIPHERD_CA_FILE": str(ca.cert),
        "CIPHERD_CLIENT_CERT_FILE": str(client.cert),
        "CIPHERD_CLIENT_KEY_FILE": str(client.key),
    }
    env = {"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}
    with (
        running_issuer() as issuer,
        running(tmp_path / "data", env=env, args=tls, client_options={"verify": context}) as server,
    ):
        with server.client() as admin:
            for method in ("jwt", "cert"):
                assert admin.post(f"/v1/sys/auth/{method}", json={"type": method}).is_success
            assert admin.post("/v1/auth/jwt/config", json={"jwks_url": issuer.jwks_url}).is_success
            role = {"role_type": "jwt", "user_claim": "sub", "bound_audiences": ["cli"]}
            assert admin.post(
                "/v1/auth/jwt/role/ci", json={**role, "token_policies": "ci"}
            ).is_success
            rule = {"certificate": ca.cert.read_text(), "token_policies": "clients"}
            assert admin.post("/v1/auth/cert/certs/clients", json=rule).is_success
        jwt = issuer.sign(issuer.claims(sub="pipeline", aud="cli"))
        jwt_file = tmp_path / "jwt"
        jwt_file.write_text(jwt + "\n")
        by_file = cipherd(
            server, "login", "jwt", "ci", "--jwt-file", str(jwt_file), token="", env=tls_env
        )
        by_stdin = cipherd(server, "login", "jwt", "ci", stdin=jwt.encode(), token="", env=tls_env)
        for ran in (by_file, by_stdin):
            logged_in = answer(ran)
            assert isinstance(logged_in, dict) and logged_in["policies"] == ["ci", "default"]
            assert logged_in["token"] and logged_in["metadata"] == {"role": "ci"}
        other = issuer.sign(issuer.claims(sub="pipeline", aud="elsewhere"))
        refused = cipherd(
            server, "login", "jwt", "ci", stdin=other.encode(), token="", env=tls_env, status=3
        )
        assert b"aud claim" in refused.stderr and other.encode() not in refused.stderr
        by_cert = answer(
            cipherd(server, "login", "cert", "--name", "clients", token="", env=tls_env)
        )
        assert isinstance(by_cert, dict) and by_cert["policies"] == ["clients", "default"]
        assert by_cert["metadata"]["common_name"] == "client"


def test_a_progress_bar_on_a_terminal(server: Server, tmp_path: Path) -> None:
    """stderr a terminal: a bar with the size, the percentage, the rate and the time left."""
    key = name("big")
    cipherd(server, "keys", "create", key, "aez")
    big = tmp_path / "big"
    big.write_bytes(secrets.token_bytes(12 << 20))
    out = tmp_path / "out"
    command = [str(CIPHERD), "aez", "encrypt", key, "--in", str(big), "--out", str(out)]
    process, controller = on_a_terminal(command, environment(server), tmp_path)
    try:
        bar = read_until(controller, r"encrypt: 100%\|[^\r\n]*\]", seconds=120).group(0)
    finally:
        os.close(controller)
    assert process.wait(timeout=60) == 0
    assert re.fullmatch(r"encrypt: 100%\|.*\| 12\.0M/12\.0M \[\d\d:\d\d<00:00, .*B/s\]", bar), bar
    assert (tmp_path / "out").stat().st_size == len(PREFIX) + (12 << 20) + 16


def test_key_names_complete_from_the_service(server: Server) -> None:
    key = name("completed")
    cipherd(server, "keys", "create", key, "aez")
    env = {**environment(server), "_CIPHERD_COMPLETE": "bash"}
    line = f"cipherd ecies encrypt {key[:-3]}"
    found = subprocess.run([str(CIPHERD), line], capture_output=True, text=True, env=env)
    assert found.returncode == 0 and found.stdout.split() == [key]
    env["CIPHERD_TOKEN"] = "not-the-token"  # refused: nothing offered, nothing printed
    found = subprocess.run([str(CIPHERD), line], capture_output=True, text=True, env=env)
    assert (found.returncode, found.stdout, found.stderr) == (0, "", "")


def test_every_client_command_ran() -> None:
    """The tests above ran each command the client declares (run this module whole)."""
    assert sorted(DECLARED - RAN) == []
