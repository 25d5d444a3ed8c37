"""`cipherd completion bash|zsh|fish`: each shell runs its script on a few command lines.

bash and zsh call the script's completion function as their completion systems would (bash with
COMP_LINE set; zsh with `words` and CURRENT, its `_describe` and `_files` standing in to print
what they are given); fish completes with its own engine (`complete -C`). The service's key
names are completed in tests/e2e/test_cli_client.py, against a running service.
"""

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
# No service answers here: key names complete to nothing, at once.
ENV["CIPHERD_ADDR"] = "http://127.0.0.1:9"


@functools.cache
def script(shell: str) -> str:
    """The script `cipherd completion SHELL` prints: made once a shell (each run of the command
    starts an interpreter and imports the client, most of a test's time)."""
    printed = subprocess.run(
        [str(BIN / "cipherd"), "completion", shell], capture_output=True, text=True, check=True
    )
    return printed.stdout


def run(shell: str, program: str) -> list[str]:
    if shutil.which(shell) is None:
        pytest.fail(f"{shell} is not installed (apt-get install {shell})")
    flags = ["--no-config"] if shell == "fish" else ["-f"] if shell == "zsh" else []
    ran = subprocess.run(
        [shell, *flags, "-c", program], capture_output=True, text=True, env=ENV, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    return sorted(word for word in ran.stdout.splitlines() if word)


def bash(line: str) -> list[str]:
    """What bash offers for the last word of `cipherd LINE`."""
    return run(
        "bash",
        f"""{script("bash")}
COMP_LINE={_quoted("cipherd " + line)}
COMP_POINT=${{#COMP_LINE}}
function=$(complete -p cipherd | sed -E 's/.*-F ([^ ]+).*/\\1/')
"$function" cipherd
printf '%s\\n' "${{COMPREPLY[@]}}"
""",
    )


def zsh(line: str) -> list[str]:
    """What zsh's completion function hands `_describe` (or FILES for `_files`)."""
    words = ["cipherd", *line.split(" ")]
    return sorted(
        word.split(":")[0]
        for word in run(
            "zsh",
            f"""compdef() {{ : }}
_describe() {{ print -l -- "${{(@P)${{@[-1]}}}}" }}
_files() {{ print FILES }}
{script("zsh")}
words=({" ".join(_quoted(w) for w in words)})
CURRENT={len(words)}
_cipherd
""",
        )
    )


def fish(line: str) -> list[str]:
    """What fish completes for `cipherd LINE`, without the descriptions."""
    found = run("fish", f"{script('fish')}\ncomplete -C {_quoted('cipherd ' + line)}")
    return sorted(word.split("\t")[0] for word in found)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


SHELLS = [bash, zsh, fish]
LINES = [
    ("ke", ["keyring", "keys"]),
    ("ecies ", ["datakey", "decrypt", "encrypt", "encrypt-to-public-key", "rewrap"]),
    ("local keys cr", ["create"]),
    ("ecies encrypt orders --ou", ["--out", "--output"]),
    ("keys list --output ", ["json", "table", "wide"]),
    ("keys list -o t", ["table"]),
    ("aez decrypt --address http://127.0.0.1:8000 --ke", ["--key-version"]),
    ("keys create orders ipfe-o", ["ipfe-opt"]),
    ("keys create orders ecies-", ["ecies-ed25519", "ecies-secp256k1", "ecies-x25519"]),
    ("tokens create --keys a --operations encrypt,dec", ["encrypt,decrypt"]),
    ("tokens create --keys a --operations encrypt,del", ["encrypt,delete"]),
    ("completion ", ["bash", "fish", "zsh"]),
    ("audit ", ["list", "verify"]),
    ("local audit ", ["list", "verify"]),
]


@pytest.mark.parametrize("complete", SHELLS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("line", "offered"), LINES, ids=[line for line, _ in LINES])
def test_commands_options_and_their_values(complete, line: str, offered: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert complete(line) == offered


def test_a_file_is_left_to_the_shell(tmp_path: Path) -> None:
    """An argument that is no word of the command's (a file) completes as a file name."""
    (tmp_path / "plain.bin").write_bytes(b"x")
    start = str(tmp_path / "pla")
    assert bash(f"ecies encrypt orders --in {start}") == []  # bash's -o default lists files
    assert "complete -o default -F _cipherd cipherd" in script("bash")
    assert zsh(f"ecies encrypt orders --in {start}") == ["FILES"]
    assert fish(f"ecies encrypt orders --in {start}") == [str(tmp_path / "plain.bin")]


def test_fish_describes_what_it_offers() -> None:
    found = run("fish", f"{script('fish')}\ncomplete -C 'cipherd sys '")
    assert "ready\twhether the service is ready (its store answers)" in found
