"""The client installs on a machine without the service: `pip install ./client` in a fresh
virtual environment of each Python from 3.10 to 3.13 (those pyenv has here), with no compiler on
the PATH, brings none of the service's packages, and its `cipherd` command creates a key and
round-trips a 3 MB file through a running service with exit status 0 at every step; the wheel
built from client/ does the same in a clean environment."""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import Server, running

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLIENT = Path(__file__).resolve().parents[2] / "client"
ADMIN_TOKEN = "install-admin-" + secrets.token_urlsafe(16)
# What the service's distribution brings, none of which a client needs.
SERVER_PACKAGES = {
    "cipherd",
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
    "pydantic-settings",
    "psycopg",
    "psycopg-pool",
    "petrelic",
    "mclbn256",
    "numpy",
    "cffi",
    "coincurve",
    "cryptography",
    "pynacl",
    "pycryptodome",
    "python-pkcs11",
    "prometheus-client",
    "pyyaml",
}


def pythons() -> list[Path]:
    """Python 3.10 to 3.13 from pyenv, else this one."""
    found: dict[str, Path] = {}
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        root = Path(subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip())
        for python in sorted(root.glob("versions/3.*/bin/python3")):
            minor = re.match(r"3\.(\d+)\.", python.parent.parent.name)
            if minor is not None and 10 <= int(minor[1]) <= 13:
                found[f"3.{minor[1]}"] = python
    return list(found.values()) or [Path(sys.executable)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("install") / "data"
    with running(data, env={"CIPHERD_ADMIN_TOKEN": ADMIN_TOKEN}) as started:
        yield started


def fresh_environment(python: Path, where: Path) -> tuple[Path, dict[str, str]]:
    """A new virtual environment, and an environment for its commands in which only its own
    bin directory is on the PATH: no compiler to be found."""
    subprocess.run([str(python), "-m", "venv", str(where)], check=True, timeout=300)
    bin_dir = where / "bin"
    assert not any((bin_dir / name).exists() for name in ("gcc", "cc", "clang"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env |= {"PATH": str(bin_dir), "CC": "no-compiler", "CXX": "no-compiler"}
    return bin_dir, env


def run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command that must exit 0."""
    ran = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, (command, ran.stdout[-2000:], ran.stderr[-2000:])
    return ran


def check_the_client(bin_dir: Path, env: dict[str, str], server: Server, work: Path) -> None:
    """Only the client's packages; its command round-trips 3 MB through the service."""
    listed = run([str(bin_dir / "python"), "-m", "pip", "list", "--format=json"], env, work)
    names = {entry["name"].lower().replace("_", "-") for entry in json.loads(listed.stdout)}
    assert "cipherd-client" in names and {"httpx", "tqdm"} <= names
    assert names & SERVER_PACKAGES == set()
    probe = "import importlib.util as u; print([m for m in ('app', 'core') if u.find_spec(m)])"
    assert run([str(bin_dir / "python"), "-c", probe], env, work).stdout.strip() == "[]"

    import cipherd

    cipherd_command = str(bin_dir / "cipherd")
    version = run([cipherd_command, "--version"], env, work)
    assert version.stdout == f"cipherd {cipherd.__version__}\n"
    env = {**env, "CIPHERD_ADDR": server.url, "CIPHERD_TOKEN": ADMIN_TOKEN}
    name = f"installed-{secrets.token_hex(4)}"
    message = secrets.token_bytes(3_000_000)
    (work / "big.bin").write_bytes(message)
    created = run([cipherd_command, "keys", "create", name, "ecies-secp256k1"], env, work)
    assert json.loads(created.stdout)["name"] == name
    files = ["--in", "big.bin", "--out", "big.ecies"]
    run([cipherd_command, "ecies", "encrypt", name, *files], env, work)
    run(
        [cipherd_command, "ecies", "decrypt", name, "--in", "big.ecies", "--out", "big.out"],
        env,
        work,
    )
    assert (work / "big.out").read_bytes() == message


@pytest.mark.parametrize("python", pythons(), ids=lambda path: path.parent.parent.name)
def test_pip_installs_the_client_directory(python: Path, server: Server, tmp_path: Path) -> None:
    bin_dir, env = fresh_environment(python, tmp_path / "venv")
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(CLIENT)], env, tmp_path)
    check_the_client(bin_dir, env, server, tmp_path)


def test_the_wheel_installs_in_a_clean_environment(server: Server, tmp_path: Path) -> None:
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(CLIENT)]
    run([*build, "-w", str(tmp_path / "dist")], dict(os.environ), tmp_path)
    (wheel,) = (tmp_path / "dist").glob("cipherd_client-*-py3-none-any.whl")
    bin_dir, env = fresh_environment(Path(sys.executable), tmp_path / "venv")
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], env, tmp_path)
    check_the_client(bin_dir, env, server, tmp_path)
