"""Shell completion for the `cipherd` command: `eval "$(cipherd completion bash)"`.

The script is written from the command's own argparse parser, so a command or option added
there completes without more work: subcommands, options, and the values of options and
arguments that have a fixed set of them (`--output json|table`). Anything else (names, files)
is left to bash's default completion of file names.
"""

import argparse
import shlex


def _tree(
    parser: argparse.ArgumentParser, node: str, found: dict[str, tuple[list[str], list[str]]]
) -> dict[str, list[str]]:
    """Fill `found` with, for `node` and each subcommand below it (a node is the subcommand
    words joined by spaces, "" for the top), its words and its options; return the fixed
    values of each option, keyed "node option"."""
    words: list[str] = []
    options: list[str] = []
    values: dict[str, list[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                words.append(name)
                values.update(_tree(child, f"{node} {name}".strip(), found))
        elif action.option_strings:
            options.extend(action.option_strings)
            if action.choices is not None:
                for flag in action.option_strings:
                    values[f"{node} {flag}".strip()] = [str(c) for c in action.choices]
        elif action.choices is not None:
            words.extend(str(c) for c in action.choices)
    found[node] = (words, options)
    return values


EMPTY = '""'


def _case(entries: dict[str, list[str]]) -> str:
    """A bash `case` on "$1" printing the words of each entry."""
    arms = "\n".join(
        f"        {shlex.quote(key) if key else EMPTY}) echo {shlex.quote(' '.join(words))} ;;"
        for key, words in sorted(entries.items())
        if words
    )
    return f'    case "$1" in\n{arms}\n    esac'


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion script of `parser` (its prog is the command completed)."""
    nodes: dict[str, tuple[list[str], list[str]]] = {}
    values = _tree(parser, "", nodes)
    command = parser.prog
    function = "_" + command.replace("-", "_")
    return f"""\
# bash completion for {command}: eval "$({command} completion bash)"
{function}_words() {{
{_case({node: words for node, (words, _) in nodes.items()})}
}}
{function}_options() {{
{_case({node: options for node, (_, options) in nodes.items()})}
}}
{function}_values() {{
{_case(values)}
}}
{function}() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} node="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${{COMP_WORDS[i]}}
        if [[ $word != -* && " $({function}_words "$node") " == *" $word "* ]]; then
            node=${{node:+$node }}$word
        fi
    done
    local fixed
    fixed=$({function}_values "${{node:+$node }}$prev")
    if [[ -n $fixed ]]; then
        COMPREPLY=($(compgen -W "$fixed" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$({function}_options "$node")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$({function}_words "$node")" -- "$cur"))
    fi
}}
complete -o default -F {function} {command}
"""
