"""Clients generated from `openapi.yaml` type-check and work against a live server.

Four generators run on every session (their output cached for it), so a change to the document
that breaks generated clients fails here: openapi-python-client and openapi-generator's Python
client (checked by mypy), @hey-api/openapi-ts and openapi-typescript with openapi-fetch (checked
by `tsc --strict`). Each generated client runs a script of tests/interop/clients, written as a
user would against it with no casts: ECIES as JSON and as raw bytes, AEZ, FE. The
openapi-python-client client is also driven from here: keys, rotation, problem documents.
"""

import base64
import importlib
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "openapi.yaml"
SCRIPTS = ROOT / "tests" / "interop" / "clients"
NODE_MODULES = ROOT / "tests" / "interop" / "node_modules"
PACKAGE = "cipherd_generated_client"
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _run(command: list[str], where: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command, cwd=where, capture_output=True, text=True, env=env or ENV, timeout=300
    )
    assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"
    return done.stdout + done.stderr


def _generate(generator: str, where: Path) -> None:
    """`generator`'s client from openapi.yaml in `where`, with the script that uses it."""
    tools = NODE_MODULES / ".bin"
    if generator == "openapi-python-client":
        output = _run(
            [
                *(str(BIN / "openapi-python-client"), "generate", "--path", str(OPENAPI)),
                *("--output-path", str(where / PACKAGE), "--meta", "none"),
                *("--config", str(SCRIPTS / "opc.yaml")),
            ],
            where,
        )
        # The generator reports parts of the document it could not turn into code as warnings.
        assert "Warning" not in output, output
        shutil.copy(SCRIPTS / "opc_round_trip.py", where)
    elif generator == "openapi-generator":
        _run(
            [
                *(str(BIN / "openapi-generator-cli"), "generate", "-g", "python"),
                *("-i", str(OPENAPI), "-o", str(where), "--package-name", "cipherd_og"),
            ],
            where,
        )
        shutil.copy(SCRIPTS / "og_round_trip.py", where)
    elif generator == "hey-api":
        _run([str(tools / "openapi-ts"), "-i", str(OPENAPI), "-o", "client"], where)
        shutil.copy(SCRIPTS / "hey_round_trip.ts", where)
    else:
        _run([str(tools / "openapi-typescript"), str(OPENAPI), "-o", "schema.d.ts"], where)
        shutil.copy(SCRIPTS / "fetch_round_trip.ts", where)
    if generator in ("hey-api", "openapi-fetch"):
        shutil.copy(SCRIPTS / "tsconfig.json", where)
        (where / "node_modules").symlink_to(NODE_MODULES)


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The folder of a generator's client, generated once per session."""
    folders: dict[str, Path] = {}

    def folder(generator: str) -> Path:
        if generator not in folders:
            where = tmp_path_factory.mktemp(generator)
            _generate(generator, where)
            folders[generator] = where
        return folders[generator]

    return folder


@pytest.fixture(scope="module")
def client_package(generated: Callable[[str], Path]) -> Iterator[ModuleType]:
    where = generated("openapi-python-client")
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"CIPHERD_ADMIN_TOKEN": "generated-client-" + secrets.token_urlsafe(16)}
    with running(tmp_path_factory.mktemp("clients") / "data", env=env) as started:
        yield started


# What type-checks each generator's client with its script, and what runs the script. mypy is
# strict on openapi-python-client's output; openapi-generator's output passes the configuration
# it ships (its pyproject.toml), not --strict.
CHECKS = {
    "openapi-python-client": (
        [str(BIN / "mypy"), "--strict", "opc_round_trip.py", PACKAGE],
        [sys.executable, "opc_round_trip.py"],
    ),
    "openapi-generator": (
        [str(BIN / "mypy"), "og_round_trip.py", "cipherd_og"],
        [sys.executable, "og_round_trip.py"],
    ),
    "hey-api": (
        [str(NODE_MODULES / ".bin" / "tsc"), "-p", "."],
        ["node", "build/hey_round_trip.js"],
    ),
    "openapi-fetch": (
        [str(NODE_MODULES / ".bin" / "tsc"), "-p", "."],
        ["node", "build/fetch_round_trip.js"],
    ),
}


@pytest.mark.parametrize("generator", list(CHECKS))
def test_the_generated_client_type_checks_and_round_trips(
    generator: str, generated: Callable[[str], Path], live: Server
) -> None:
    where = generated(generator)
    type_check, round_trip = CHECKS[generator]
    _run(type_check, where)
    _run(round_trip, where, {**ENV, "CIPHERD_ADDR": live.url, "CIPHERD_TOKEN": live.admin_token})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = {"CIPHERD_ADMIN_TOKEN": "generated-client-" + secrets.token_urlsafe(16)}
    with running(tmp_path / "data", env=env) as started:
        yield started


def test_round_trip_through_the_generated_client(
    client_package: ModuleType, server: Server
) -> None:
    def module(name: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{name}")

    api_keys = {
        op: module(f"api.keys.keys_{op}")
        for op in ("create_key", "rotate_key", "list_keys", "get_key", "delete_key")
    }
    ecies_encrypt = module("api.ecies.ecies_encrypt")
    ecies_decrypt = module("api.ecies.ecies_decrypt")
    aez_encrypt = module("api.aez.aez_encrypt")
    aez_decrypt = module("api.aez.aez_decrypt")
    models = module("models")

    client = client_package.AuthenticatedClient(base_url=server.url, token=server.admin_token)
    with client:
        for name, key_type in (("orders", "ecies-secp256k1"), ("sessions", "aez")):
            created = api_keys["create_key"].sync(
                client=client,
                body=models.KeyCreate(name=name, type_=models.KeyCreateType(key_type)),
            )
            assert isinstance(created, models.KeyOut), created
            assert created.name == name and created.latest_version == 1

        plaintext = os.urandom(200)
        sealed = ecies_encrypt.sync(
            "orders", client=client, body=models.EciesEncryptRequest(plaintext=b64(plaintext))
        )
        assert isinstance(sealed, models.EciesCiphertext), sealed
        opened = ecies_decrypt.sync(
            "orders",
            client=client,
            body=models.EciesDecryptRequest(ciphertext=sealed.ciphertext, key_version=1),
        )
        assert isinstance(opened, models.EciesPlaintext), opened
        assert base64.b64decode(opened.plaintext) == plaintext

        nonce, ad = b64(b"nonce-1"), [b64(b"header")]
        aez_sealed = aez_encrypt.sync(
            "sessions",
            client=client,
            body=models.AezEncryptRequest(plaintext=b64(plaintext), nonce=nonce, ad=ad, tau=16),
        )
        assert isinstance(aez_sealed, models.AezCiphertext), aez_sealed
        # The envelope that names version 1, then the 16 bytes of tau's expansion.
        enveloped = base64.b64decode(aez_sealed.ciphertext)
        assert enveloped.startswith(b"cipherd:v1:")
        assert len(enveloped) == len(b"cipherd:v1:") + len(plaintext) + 16
        aez_opened = aez_decrypt.sync(
            "sessions",
            client=client,
            body=models.AezDecryptRequest(ciphertext=aez_sealed.ciphertext, nonce=nonce, ad=ad),
        )
        assert isinstance(aez_opened, models.AezPlaintext), aez_opened
        assert base64.b64decode(aez_opened.plaintext) == plaintext

        # Errors arrive as the documented problem model.
        tampered = aez_decrypt.sync(
            "sessions",
            client=client,
            body=models.AezDecryptRequest(ciphertext=b64(bytes(40)), nonce=nonce, ad=ad),
        )
        assert isinstance(tampered, models.ProblemDetail), tampered
        assert tampered.status == 400 and tampered.type_.endswith(":authentication-failed")

        rotated = api_keys["rotate_key"].sync("orders", client=client)
        assert isinstance(rotated, models.KeyOut) and rotated.latest_version == 2
        assert [v.version for v in rotated.versions] == [1, 2]
        again = ecies_encrypt.sync(
            "orders", client=client, body=models.EciesEncryptRequest(plaintext=b64(b"v2"))
        )
        assert again.key_version == 2
        # The old version still opens what it sealed.
        old = ecies_decrypt.sync(
            "orders",
            client=client,
            body=models.EciesDecryptRequest(ciphertext=sealed.ciphertext, key_version=1),
        )
        assert base64.b64decode(old.plaintext) == plaintext

        listed = api_keys["list_keys"].sync(client=client)
        assert isinstance(listed, models.KeyList)
        assert sorted(key.name for key in listed.keys) == ["orders", "sessions"]

        # Deletion is scheduled: the key is then read as pending deletion.
        deleted = api_keys["delete_key"].sync_detailed("orders", client=client)
        assert deleted.status_code == 202
        assert isinstance(deleted.parsed, models.DeletionScheduled)
        pending = api_keys["get_key"].sync("orders", client=client)
        assert isinstance(pending, models.KeyOut) and pending.state == "pending-deletion"
        missing = api_keys["get_key"].sync("nothing", client=client)
        assert isinstance(missing, models.ProblemDetail) and missing.status == 404


def test_signatures_hmac_data_keys_and_random_through_the_generated_client(
    client_package: ModuleType, server: Server
) -> None:
    def module(name: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{name}")

    create_key = module("api.keys.keys_create_key")
    models = module("models")
    client = client_package.AuthenticatedClient(base_url=server.url, token=server.admin_token)
    with client:
        for name, key_type in (("signer", "ecdsa-secp256k1"), ("mac", "hmac"), ("box", "aez")):
            created = create_key.sync(
                client=client,
                body=models.KeyCreate(name=name, type_=models.KeyCreateType(key_type)),
            )
            assert isinstance(created, models.KeyOut), created

        signed = module("api.sign.sign_sign").sync(
            "signer", client=client, body=models.SignRequest(message=b64(b"m"))
        )
        assert isinstance(signed, models.Signature) and signed.key_version == 1
        verdict = module("api.verify.verify_verify").sync(
            "signer",
            client=client,
            body=models.VerifyRequest(message=b64(b"m"), signature=signed.signature),
        )
        assert isinstance(verdict, models.Verdict) and verdict.valid is True

        mac = module("api.hmac.hmac_hmac").sync(
            "mac", client=client, body=models.HmacRequest(message=b64(b"m"))
        )
        assert isinstance(mac, models.Hmac)
        checked = module("api.hmac.hmac_verify").sync(
            "mac", client=client, body=models.HmacVerifyRequest(message=b64(b"m"), hmac=mac.hmac)
        )
        assert isinstance(checked, models.HmacVerdict) and checked.valid is True

        datakey = module("api.aez.aez_datakey").sync(
            "box", client=client, body=models.DatakeyRequest()
        )
        assert isinstance(datakey, models.AezDatakey), datakey
        opened = module("api.aez.aez_decrypt").sync(
            "box",
            client=client,
            body=models.AezDecryptRequest(
                ciphertext=datakey.ciphertext, nonce=datakey.nonce, tau=datakey.tau
            ),
        )
        assert isinstance(opened, models.AezPlaintext) and opened.plaintext == datakey.plaintext

        drawn = module("api.random.random_random").sync(
            client=client, body=models.RandomRequest(bytes_=16)
        )
        assert isinstance(drawn, models.RandomBytes) and len(base64.b64decode(drawn.random)) == 16
