"""Shell completion of `cipherd` for bash, zsh and fish.

Each shell's script is a few lines that run `cipherd` itself with the command line typed so far
(and `_CIPHERD_COMPLETE` naming the shell); `answer` prints what may come next, read from the
command's own argparse parser: subcommands, options, the fixed values of options and arguments
(`--output json|table|wide`, key types), and the names of the service's keys for an argument
that names one (asked of the service at CIPHERD_ADDR, or `--address` on the line, with a short
timeout). Where nothing fits (a file, a free text), the shell completes file names.
"""

import argparse
import os
import shlex
import sys
from collections.abc import Sequence

TRIGGER = "_CIPHERD_COMPLETE"  # the shell whose completion is asked
KEY_NAMES = "key names"  # an argument's `complete`: the names of the service's keys
ASK_SECONDS = 3.0  # how long completion waits for the service's key names

SCRIPTS = {
    "bash": """\
# bash completion for cipherd: eval "$(cipherd completion bash)"
_cipherd() {
    local IFS=$'\\n'
    COMPREPLY=($(_CIPHERD_COMPLETE=bash "$1" "${COMP_LINE:0:COMP_POINT}" 2>/dev/null))
}
complete -o default -F _cipherd cipherd
""",
    "zsh": """\
#compdef cipherd
# zsh completion for cipherd: eval "$(cipherd completion zsh)" (after compinit)
_cipherd() {
    local -a found
    found=("${(@f)$(_CIPHERD_COMPLETE=zsh "${words[1]}" "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n ${found[1]} ]]; then
        _describe -t values cipherd found
    else
        _files
    fi
}
compdef _cipherd cipherd
""",
    "fish": """\
# fish completion for cipherd: cipherd completion fish > ~/.config/fish/completions/cipherd.fish
function __cipherd_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l found (env _CIPHERD_COMPLETE=fish $tokens[1] $tokens[2..-1] "$current" 2>/dev/null)
    if test (count $found) -gt 0
        printf '%s\\n' $found
    else
        __fish_complete_path "$current"
    end
end
complete -c cipherd -f -a '(__cipherd_complete)'
""",
}


def script(shell: str) -> str:
    return SCRIPTS[shell]


def requested() -> bool:
    """Whether this run of the command is a shell asking for completions."""
    return os.environ.get(TRIGGER) in SCRIPTS


def answer(parser: argparse.ArgumentParser) -> None:
    """Print the completions of the command line in argv (bash: the line up to the cursor)."""
    shell = os.environ[TRIGGER]
    typed = sys.argv[1:]
    if shell == "bash":
        line = typed[0] if typed else ""
        try:
            typed = shlex.split(line)[1:]
        except ValueError:  # an unfinished quote
            typed = line.split()[1:]
        if not line or line[-1].isspace():
            typed.append("")
    for word, description in candidates(parser, typed or [""]):
        if shell == "bash":
            print(word)
        elif shell == "zsh":
            print(word.replace(":", "\\:") + (f":{description}" if description else ""))
        else:
            print(word + (f"\t{description}" if description else ""))


Candidate = tuple[str, str]  # a word and what it is


def candidates(parser: argparse.ArgumentParser, typed: Sequence[str]) -> list[Candidate]:
    """What may follow `typed` (the words after `cipherd`, the last one being completed)."""
    *before, current = typed
    position = 0  # positional arguments seen in the innermost subcommand
    waiting: argparse.Action | None = None  # an option whose value comes next
    for word in before:
        if waiting is not None:
            waiting = None
        elif word.startswith("-") and len(word) > 1:
            action = parser._option_string_actions.get(word)
            if action is not None and action.nargs != 0:
                waiting = action
        elif (child := _subcommands(parser).get(word)) is not None:
            parser, position = child, 0
        else:
            position += 1
    if waiting is not None:
        return _values(waiting, current, typed)
    if current.startswith("-"):
        return [
            (flag, action.help or "")
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
            if flag.startswith(current)
        ]
    if subcommands := _subcommand_help(parser):
        return [(name, help) for name, help in subcommands if name.startswith(current)]
    positionals = [a for a in parser._actions if not a.option_strings]
    if position < len(positionals):
        return _values(positionals[position], current, typed)
    return []


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _subcommand_help(parser: argparse.ArgumentParser) -> list[Candidate]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, helps.get(name, "")) for name in action.choices]
    return []


def _values(action: argparse.Action, current: str, typed: Sequence[str]) -> list[Candidate]:
    """The values of an option or argument that start with `current` (after its last comma,
    for a list: `--operations encrypt,de`)."""
    complete = getattr(action, "complete", None) or action.choices
    if complete == KEY_NAMES:
        return [(name, "key") for name in _key_names(typed, current)]
    if not complete:
        return []
    done, _, last = current.rpartition(",")
    start = done + "," if done else ""
    return [(start + str(value), "") for value in complete if str(value).startswith(last)]


def _key_names(typed: Sequence[str], prefix: str) -> list[str]:
    """The service's key names that start with `prefix`, or none if it does not answer soon."""
    from cipherd import Client, Retries
    from cipherd.errors import CipherdError

    def given(flag: str) -> str | None:
        words = list(typed[:-1])
        return words[words.index(flag) + 1] if flag in words[:-1] else None

    try:
        with Client(
            given("--address"),
            token_file=given("--token-file"),
            ca_file=given("--ca-file"),
            timeout=ASK_SECONDS,
            retries=Retries(attempts=1),
        ) as client:
            keys = client.keys.list(limit=1000).keys
    except (CipherdError, OSError):
        return []
    return [key.name for key in keys if key.name.startswith(prefix)]
