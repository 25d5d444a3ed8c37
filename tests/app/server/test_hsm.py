"""The root key in SoftHSM2, through python-pkcs11: a token initialised here in a temporary
directory, its AES keys made non-extractable, and real `cipherd` processes using them."""

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e import server as e2e

MODULE = next(
    (
        path
        for path in (
            Path("/usr/lib/softhsm/libsofthsm2.so"),
            Path("/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so"),
        )
        if path.exists()
    ),
    None,
)
pytestmark = pytest.mark.skipif(
    MODULE is None or shutil.which("softhsm2-util") is None,
    reason="SoftHSM2 is not installed (.ci/run and scripts/install.sh --dev install it)",
)
TOKEN, PIN, SO_PIN = "cipherd-test", "31415926", "27182818"


@dataclass
class Hsm:
    conf: Path
    pin_file: Path

    def env(self, key: str = "root", **changes: str) -> dict[str, str]:
        assert MODULE is not None
        return {
            "SOFTHSM2_CONF": str(self.conf),
            "CIPHERD_ROOT_KEY_PKCS11_MODULE": str(MODULE),
            "CIPHERD_ROOT_KEY_PKCS11_TOKEN": TOKEN,
            "CIPHERD_ROOT_KEY_PKCS11_KEY": key,
            "CIPHERD_ROOT_KEY_PKCS11_PIN_FILE": str(self.pin_file),
            **changes,
        }


@pytest.fixture(scope="module")
def hsm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hsm]:
    """A SoftHSM2 token with AES keys `root` and `root-2` (non-extractable, wrap and unwrap
    only) and `loose` (extractable), made by this process."""
    import pkcs11
    from pkcs11 import Attribute, KeyType

    directory = tmp_path_factory.mktemp("softhsm")
    (directory / "tokens").mkdir()
    conf = directory / "softhsm2.conf"
    conf.write_text(
        f"directories.tokendir = {directory / 'tokens'}\nobjectstore.backend = file\n"
        "log.level = ERROR\n"
    )
    env = {**os.environ, "SOFTHSM2_CONF": str(conf)}
    subprocess.run(
        [
            "softhsm2-util",
            "--init-token",
            "--free",
            "--label",
            TOKEN,
            "--pin",
            PIN,
            "--so-pin",
            SO_PIN,
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    pin_file = directory / "pin"
    pin_file.write_text(PIN + "\n")
    previous = os.environ.get("SOFTHSM2_CONF")
    os.environ["SOFTHSM2_CONF"] = str(conf)  # read when this process loads the module
    assert MODULE is not None
    token = pkcs11.lib(str(MODULE)).get_token(token_label=TOKEN)
    with token.open(rw=True, user_pin=PIN) as session:
        for label, extractable in (("root", False), ("root-2", False), ("loose", True)):
            session.generate_key(
                KeyType.AES,
                256,
                label=label,
                store=True,
                template={
                    Attribute.SENSITIVE: not extractable,
                    Attribute.EXTRACTABLE: extractable,
                    Attribute.WRAP: True,
                    Attribute.UNWRAP: True,
                    Attribute.ENCRYPT: False,
                    Attribute.DECRYPT: False,
                },
            )
    yield Hsm(conf, pin_file)
    if previous is None:
        os.environ.pop("SOFTHSM2_CONF", None)
    else:
        os.environ["SOFTHSM2_CONF"] = previous


def test_the_token_wraps_and_unwraps_bound_to_the_identity_and_never_shows_the_key(
    hsm: Hsm,
) -> None:
    from pkcs11 import Attribute
    from pkcs11.exceptions import AttributeSensitive

    from app.server.bootstrap import root_key
    from app.settings import Settings
    from app.store import UnwrapError

    settings = Settings(
        root_key_pkcs11_module=MODULE,
        root_key_pkcs11_token=TOKEN,
        root_key_pkcs11_key="root",
        root_key_pkcs11_pin_file=hsm.pin_file,
    )
    root = root_key(settings)
    secret = os.urandom(32)
    wrapped = root.wrap(secret, "", 7, "keyring-term")
    assert secret not in wrapped and len(wrapped) > len(secret)
    assert root.unwrap(wrapped, "", 7, "keyring-term") == secret
    with pytest.raises(UnwrapError):
        root.unwrap(wrapped, "", 8, "keyring-term")
    with pytest.raises(UnwrapError):
        root.unwrap(wrapped[:-1] + bytes([wrapped[-1] ^ 1]), "", 7, "keyring-term")
    other = root_key(settings, "root-2")
    with pytest.raises(UnwrapError):
        other.unwrap(wrapped, "", 7, "keyring-term")
    with pytest.raises(AttributeSensitive):
        root._key[Attribute.VALUE]  # type: ignore[attr-defined]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _cipherd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_service_runs_restarts_and_rotates_its_root_in_softhsm(
    tmp_path: Path, hsm: Hsm
) -> None:
    data = tmp_path / "data"
    with e2e.running(data, env=hsm.env()) as server, server.client() as http:
        assert (
            http.post("/v1/keys", json={"name": "orders", "type": "ecies-x25519"}).status_code
            == 201
        )
        sealed = http.post("/v1/ecies/orders/encrypt", json={"plaintext": _b64(b"in the hsm")})
        assert sealed.status_code == 200
    assert not (data / "root-key").exists()  # nothing generated: the root is in the token
    again = e2e.restart(server)
    try:
        with again.client() as http:
            opened = http.post("/v1/ecies/orders/decrypt", json=sealed.json())
            assert base64.b64decode(opened.json()["plaintext"]) == b"in the hsm"
            rotated = http.post("/v1/sys/keyring/rotate")
            assert rotated.status_code == 200 and rotated.json()["term"] == 2
            assert http.post("/v1/keys/orders/rotate").status_code == 200
    finally:
        again.stop()
    cli_env = e2e._environment(data, hsm.env())
    moved = _cipherd(cli_env, "root", "rotate", "--new-root-key-pkcs11-key", "root-2")
    assert moved.returncode == 0, moved.stderr

    refused = _cipherd(cli_env, "serve", "--port", "0")
    assert refused.returncode != 0
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "root key does not open this key store" in refused.stderr

    with e2e.running(data, env=hsm.env("root-2")) as server, server.client() as http:
        opened = http.post("/v1/ecies/orders/decrypt", json=sealed.json())
        assert base64.b64decode(opened.json()["plaintext"]) == b"in the hsm"
        assert http.get("/v1/keys/orders").json()["latest_version"] == 2


def test_a_token_lost_while_running_is_503_until_it_is_back(tmp_path: Path, hsm: Hsm) -> None:
    """The token's files moved away under a running process: what needs the root key is 503
    root-key-unavailable with Retry-After, and once they are back the process reopens its
    session by itself. It answered 500 for good, the token back or not, until a restart."""
    tokens = tmp_path / "tokens"
    shutil.copytree(hsm.conf.parent / "tokens", tokens)
    conf = tmp_path / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {tokens}\nobjectstore.backend = file\n")
    env = hsm.env(SOFTHSM2_CONF=str(conf))
    with e2e.running(tmp_path / "data", env=env) as server, server.client() as http:
        assert http.post("/v1/keys", json={"name": "k", "type": "aes256-gcm"}).status_code == 201
        sealed = http.post("/v1/aead/k/encrypt", json={"plaintext": _b64(b"kept")}).json()
        tokens.rename(tmp_path / "away")
        refused = http.post("/v1/sys/keyring/rotate")
        assert refused.status_code == 503, refused.text
        assert refused.json()["type"] == "urn:cipherd:problem:root-key-unavailable"
        assert int(refused.headers["retry-after"]) >= 1
        (tmp_path / "away").rename(tokens)
        rotated = http.post("/v1/sys/keyring/rotate")
        assert rotated.status_code == 200, rotated.text
        opened = http.post("/v1/aead/k/decrypt", json=sealed)
        assert base64.b64decode(opened.json()["plaintext"]) == b"kept"
        assert http.post("/v1/keys", json={"name": "k2", "type": "aez"}).status_code == 201


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"pin": "00000000"}, "CIPHERD_ROOT_KEY_PKCS11_PIN_FILE"),
        ({"CIPHERD_ROOT_KEY_PKCS11_TOKEN": "no-such-token"}, "CIPHERD_ROOT_KEY_PKCS11_TOKEN"),
        ({"CIPHERD_ROOT_KEY_PKCS11_KEY": "no-such-key"}, "CIPHERD_ROOT_KEY_PKCS11_KEY"),
        ({"CIPHERD_ROOT_KEY_PKCS11_KEY": "loose"}, "CIPHERD_ROOT_KEY_PKCS11_KEY"),
        (
            {"CIPHERD_ROOT_KEY_PKCS11_MODULE": "/nonexistent/libnone.so"},
            "CIPHERD_ROOT_KEY_PKCS11_MODULE",
        ),
        ({"CIPHERD_ROOT_KEY_PKCS11_PIN_FILE": ""}, "CIPHERD_ROOT_KEY_PKCS11_PIN_FILE"),
        ({"CIPHERD_ROOT_KEY_FILE": "/etc/hostname"}, "CIPHERD_ROOT_KEY_PKCS11_MODULE"),
        # A PIN file that is not text: its decoding error named a byte of the PIN.
        ({"pin": b"3141\xff5926"}, "CIPHERD_ROOT_KEY_PKCS11_PIN_FILE"),
    ],
)
def test_unusable_pkcs11_settings_stop_the_start_in_one_line(
    tmp_path: Path, hsm: Hsm, changes: dict[str, str | bytes], named: str
) -> None:
    env = hsm.env(**{k: v for k, v in changes.items() if isinstance(v, str) and k != "pin"})
    if "pin" in changes:
        wrong = tmp_path / "wrong-pin"
        pin = changes["pin"]
        wrong.write_bytes(pin if isinstance(pin, bytes) else pin.encode())
        env["CIPHERD_ROOT_KEY_PKCS11_PIN_FILE"] = str(wrong)
    result = _cipherd(e2e._environment(tmp_path / "data", env), "serve", "--port", "0")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr
    assert PIN not in result.stderr and "0xff" not in result.stderr
