"""The `cipherd` command: every operation of a running cipherd service, and the commands other
installed distributions add (the service's own: `serve`, `local`, ...) through the entry points
of group `cipherd.commands`, each a function that adds subcommands to the command's.

The client's commands are declared in `cipherd._commands`, one function each with its
arguments; this module builds the parsers from them, runs a command and turns what happened into
the exit status (`STATUSES`).
"""

import argparse
import os
import re
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any, TypeAlias

import cipherd
from cipherd import _declare
from cipherd._commands import COMMANDS
from cipherd._declare import Arg, UsageError, Verdict
from cipherd._output import FORMATS, show
from cipherd._transport import DEFAULT_ADDRESS
from cipherd.client import Client
from cipherd.errors import ProblemError, UnreachableError, UntrustedCertificate

DONE, NEGATIVE, USAGE, REFUSED, UNREACHABLE, FAILED = 0, 1, 2, 3, 4, 5
STATUSES = f"""exit status:
  {DONE}  done
  {NEGATIVE}  a negative verdict: `verify`, `hmac --verify` or `audit verify` found it does not hold
  {USAGE}  a usage error: wrong arguments, an unreadable or unwritable local file
  {REFUSED}  the service refused (a 4xx problem, printed with its request id)
  {UNREACHABLE}  the service could not be reached, or its TLS certificate is not trusted
  {FAILED}  the service failed (a 5xx problem)

environment: CIPHERD_ADDR (the service), CIPHERD_TOKEN or CIPHERD_TOKEN_FILE (the token),
CIPHERD_CA_FILE (CAs for https)"""
PLUGINS = "cipherd.commands"  # entry points: functions that add subcommands to `cipherd`

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


# The command


def _add_connection(parser: argparse.ArgumentParser) -> None:
    """The options every client command takes: where the service is, how to reach it, and the
    output's form."""
    service = parser.add_argument_group("the service")
    address = os.environ.get("CIPHERD_ADDR") or DEFAULT_ADDRESS
    source = "CIPHERD_ADDR" if os.environ.get("CIPHERD_ADDR") else "CIPHERD_ADDR is not set"
    service.add_argument(
        "--address", default=address, metavar="URL", help=f"default: {address} ({source})"
    )
    service.add_argument(
        "--token-file", metavar="FILE", help="a file holding the token (default: CIPHERD_TOKEN)"
    )
    service.add_argument(
        "--ca-file", metavar="FILE", help="CA certificates for https (default: CIPHERD_CA_FILE)"
    )
    service.add_argument(
        "--output",
        "-o",
        choices=FORMATS,
        default="json",
        help="json (default), table (a few columns) or wide (every column)",
    )


def _add(parser: argparse.ArgumentParser, argument: Arg) -> None:
    action = parser.add_argument(*argument.flags, **argument.options)
    action.complete = argument.complete  # type: ignore[attr-defined]


def add_commands(commands: Commands) -> None:
    """The client's commands, on the `cipherd` command's subcommands."""
    families: dict[str, Commands] = {}
    for declared in COMMANDS:
        *family, action = declared.words
        if family:
            (name,) = family
            if name not in families:
                group = commands.add_parser(name, help=_declare.FAMILIES[name])
                families[name] = group.add_subparsers(
                    dest="action", metavar="ACTION", required=True
                )
            where = families[name]
        else:
            where = commands
        parser = where.add_parser(
            action,
            allow_abbrev=False,
            help=declared.help,
            description=declared.description,
            epilog=STATUSES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        for argument in declared.arguments:
            _add(parser, argument)
        _add_connection(parser)
        parser.set_defaults(run=_client_command(declared.run))


def _client_command(run: _declare.Run) -> Any:
    def command(args: argparse.Namespace) -> int:
        return _run(run, args)

    return command


def _run(run: _declare.Run, args: argparse.Namespace) -> int:
    """Run a client command: its exit status, its answer on stdout, what went wrong on stderr."""
    try:
        client = Client(args.address, token_file=args.token_file, ca_file=args.ca_file)
    except OSError as error:
        return _fail(USAGE, f"cannot read {error.filename}: {error.strerror}")
    except ValueError as error:  # a token no header can carry
        return _fail(USAGE, str(error))
    try:
        with client:
            answer = run(client, args)
    except UsageError as error:
        return _fail(USAGE, str(error))
    except ProblemError as problem:
        status = FAILED if problem.status >= 500 else REFUSED
        return _fail(status, f"{_explained(problem, args)} (request {problem.request_id})")
    except UntrustedCertificate as error:
        return _fail(UNREACHABLE, f"{error}; here: --ca-file FILE")
    except UnreachableError as error:
        return _fail(UNREACHABLE, str(error))
    if isinstance(answer, Verdict):
        show(answer.answer, args.output)
        return DONE if answer.holds else _fail(NEGATIVE, answer.why)
    if answer is not None:
        show(answer, args.output)
    return DONE


def _fail(status: int, message: str) -> int:
    print(f"cipherd: {message}", file=sys.stderr)
    return status


# The service's details name the REST call that is the way out, where there is one; the command
# line names its own command instead.
COMMANDS_FOR_CALLS = (
    (r"POST /v1/keys/([^\s/)]+)/restore", r"`cipherd keys restore \1`"),
    (r"POST /v1/keys/([^\s/)]+)/trim", r"`cipherd keys trim \1`"),
    (r"GET /v1/sys/wrapping-key", "`cipherd sys wrapping-key`"),
    (r"PATCH it to false", "`cipherd keys update {name} --no-deletion-protection`"),
)
# What to run next, for the problems whose way out is a command and whose detail names none.
HINTS = {
    "urn:cipherd:problem:key-not-found": "`cipherd keys list` shows the keys",
    "urn:cipherd:problem:unauthorized": (
        "give a token: CIPHERD_TOKEN or --token-file (the admin token is in the service's data "
        "directory, or CIPHERD_ADMIN_TOKEN)"
    ),
    "urn:cipherd:problem:forbidden": "`cipherd tokens list` (admin) shows the tokens' scopes",
}


def _explained(problem: ProblemError, args: argparse.Namespace) -> str:
    """The problem, with the commands that help where the service named its REST calls."""
    text = str(problem)
    for call, command in COMMANDS_FOR_CALLS:
        text = re.sub(call, command, text)
    hint = HINTS.get(problem.type)
    if hint is not None:
        text += "; " + hint
    return text.replace("{name}", getattr(args, "name", None) or "NAME")


def parser() -> argparse.ArgumentParser:
    """The whole command: the client's subcommands and those of every installed plugin."""
    top = argparse.ArgumentParser(
        prog="cipherd",
        description="Keys and cryptography on a cipherd service, from the command line.",
        epilog=STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"cipherd {cipherd.__version__}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_commands(commands)
    completion = commands.add_parser(
        "completion",
        help='a shell completion script: eval "$(cipherd completion bash)"',
        description="Print the completion script of a shell: commands, options, their values "
        'and the service\'s key names complete on TAB. bash: eval "$(cipherd completion bash)" '
        "in ~/.bashrc; zsh: the same in ~/.zshrc (after compinit); fish: cipherd completion "
        "fish > ~/.config/fish/completions/cipherd.fish",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))
    completion.set_defaults(run=_completion)
    for plugin in entry_points(group=PLUGINS):
        plugin.load()(commands)
    return top


def _completion(args: argparse.Namespace) -> int:
    from cipherd import completion

    sys.stdout.write(completion.script(args.shell))
    return DONE


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command; exit with its status unless it is 0."""
    from cipherd import completion

    command = parser()
    if completion.requested():
        completion.answer(command)
        return
    args = command.parse_args(argv)
    try:
        status: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`cipherd keys list | head -1`): nothing more can be written; stdout
        # goes to /dev/null so that the exit's own flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 1
    if status:
        raise SystemExit(status)
