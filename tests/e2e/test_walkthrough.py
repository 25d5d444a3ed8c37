"""The README's walk-through runs as pasted: `make serve`, then, in another shell, the line it
printed and the commands that follow it, from a 3 MB file to the same file decrypted."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.server import free_port
from tests.e2e.terminal import on_a_terminal, read_until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent


def walk_through() -> list[str]:
    """The README's walk-through: its blocks of commands (indented four spaces), in order."""
    text = (REPO / "README.md").read_text()
    section = text.split("## A walk-through\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"((?:^    .*\n|^\n)+)", section, re.MULTILINE)
    return [
        "\n".join(line[4:] for line in block.strip("\n").splitlines())
        for block in blocks
        if block.strip()
    ]


def test_the_walk_through_runs_as_pasted(tmp_path: Path) -> None:
    start, commands, *_ = walk_through()
    assert start == "make serve"
    pasted, *rest = commands.splitlines()
    assert rest[-1] == "cmp big.bin big.out && echo the same"

    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env |= {"CIPHERD_DATA_DIR": str(tmp_path / "var"), "CIPHERD_PORT": str(free_port())}
    # `make serve` with this checkout's environment (already installed: not made again).
    make = ["make", "-C", str(REPO), f"SERVE_VENV={VENV}", "-o", f"{VENV}/.installed", "serve"]
    process, controller = on_a_terminal(make, env, tmp_path)
    try:
        printed = read_until(controller, r"(export CIPHERD_ADDR=(\S+) CIPHERD_TOKEN=.+?)\r?\n")
        line, address = printed.groups()
        # The README shows the line `make serve` prints with its defaults.
        expected = pasted.replace("http://127.0.0.1:8000", address)
        assert line == expected.replace("var/admin-token", f"{tmp_path}/var/admin-token")
        env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env['PATH']}"
        ran = subprocess.run(
            ["bash", "-e", "-c", "\n".join([line, *rest])],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.splitlines()[-1] == "the same"
        assert (tmp_path / "big.out").read_bytes() == (tmp_path / "big.bin").read_bytes()
        assert (tmp_path / "big.bin").stat().st_size == 3_000_000
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        os.close(controller)
