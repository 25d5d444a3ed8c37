"""`cipherd completion bash`: bash's completion function, run by bash on a few command lines."""

import subprocess
import sys
from pathlib import Path

import pytest

CIPHERD = Path(sys.executable).parent / "cipherd"


@pytest.fixture(scope="module")
def script() -> str:
    printed = subprocess.run(
        [str(CIPHERD), "completion", "bash"], capture_output=True, text=True, check=True
    )
    return printed.stdout


def complete(script: str, line: str) -> list[str]:
    """What bash offers for the last word of `line` (after `cipherd `), as the `complete`
    the script registers would: the function it names, called with COMP_WORDS set."""
    program = f"""{script}
COMP_WORDS=(cipherd {line})
[[ "{line}" == *" " || -z "{line}" ]] && COMP_WORDS+=("")
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
function=$(complete -p cipherd | sed -E 's/.*-F ([^ ]+).*/\\1/')
"$function" cipherd
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    ran = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return sorted(word for word in ran.stdout.splitlines() if word)


@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("ke", ["keyring", "keys"]),
        ("ecies ", ["decrypt", "encrypt"]),
        ("local keys cr", ["create"]),
        ("ecies encrypt orders --o", ["--out", "--output"]),
        ("keys list --output ", ["json", "table"]),
        ("keys list --output t", ["table"]),
        ("aez decrypt --address http://127.0.0.1:8000 --ke", ["--key-version"]),
        ("completion ", ["bash"]),
    ],
)
def test_bash_completes_commands_options_and_their_values(
    script: str, line: str, offered: list[str]
) -> None:
    assert complete(script, line) == offered


def test_nothing_fixed_is_left_to_file_names(script: str) -> None:
    """A key name or a file is not the command's to list: bash's default (-o default)."""
    assert complete(script, "ecies encrypt ") == []
    assert "complete -o default -F _cipherd cipherd" in script
