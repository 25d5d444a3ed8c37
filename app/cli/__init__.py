"""The service's commands of `cipherd`: run it, print its OpenAPI document, and work on its store.

`cipherd` itself is the client's command (`cipherd.cli`); `add_commands` adds `serve`,
`openapi`, `local`, `keyring`, `admin-token` and `root` to it through the entry point
`cipherd.commands` of this distribution. `cipherd local keys|tokens|audit ...` work on the
configured store directly (same settings as the service), so an operator can bootstrap a
deployment without a running server (`app.cli.store`); `cipherd serve` is `app.cli.serve`.
"""

import argparse
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pydantic import ValidationError

from app.cli import serve as serving
from app.cli import store
from app.settings import Settings, get_settings
from cipherd.cli import Commands
from cipherd.cli import main as main

MAX_WORKERS = 256


def _openapi(args: argparse.Namespace, settings: Settings) -> None:
    from app.http.docs import openapi_yaml
    from app.main import create_app

    sys.stdout.write(openapi_yaml(create_app(settings).openapi()))


def _outcome(text: str) -> str:
    """An argparse type: success, failure or a three-digit status."""
    if text in ("success", "failure") or (text.isdecimal() and len(text) == 3):
        return text
    raise argparse.ArgumentTypeError("success, failure or a three-digit status")


def _moment(text: str) -> str:
    """An argparse type: an ISO 8601 time."""
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return text


def _int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {value}")
        return value

    return parse


def add_commands(commands: Commands) -> None:
    """The service's subcommands, on the `cipherd` command's (the entry point's function)."""
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", help="default: CIPHERD_HOST, else 127.0.0.1")
    serve.add_argument("--port", type=_int_in(0, 65535), help="default: CIPHERD_PORT, else 8000")
    # Each worker is a process with its own caches: far more than cores is a typo.
    serve.add_argument("--workers", type=_int_in(1, MAX_WORKERS), default=1)
    for flag, what in (
        ("--tls-cert-file", "PEM certificate chain: serve HTTPS (CIPHERD_TLS_CERT_FILE)"),
        ("--tls-key-file", "PEM private key of the certificate (CIPHERD_TLS_KEY_FILE)"),
        ("--tls-client-ca-file", "require client certificates from these CAs"),
    ):
        serve.add_argument(flag, type=Path, help=what)
    serve.set_defaults(run=_on_server(serving.serve))

    commands.add_parser("openapi", help="print the OpenAPI document as YAML").set_defaults(
        run=_on_server(_openapi)
    )

    local = commands.add_parser(
        "local", help="keys, tokens and the audit trail in the store itself, without a service"
    ).add_subparsers(dest="command", required=True)
    local.add_parser(
        "init", help="make the store, root key and admin token (as `serve` does on first start)"
    ).set_defaults(run=_on_server(store.init))
    keys = local.add_parser("keys", help="manage keys in the store").add_subparsers(
        dest="action", required=True
    )
    keys.add_parser("list")
    create = keys.add_parser("create")
    create.add_argument("name")
    create.add_argument("type")
    create.add_argument("--dimension", type=int, help="FE key types: the vector length")
    create.add_argument("--curve", help="FE key types: bls12-381 (default) or bn254")
    create.add_argument("--exportable", action="store_true", help="the admin may export it")
    create.add_argument(
        "--deletion-protection", action="store_true", help="refuse deletion until removed"
    )
    create.add_argument(
        "--allow-backup", action="store_true", help="the admin may back it up to another instance"
    )
    for action in ("rotate", "restore"):
        keys.add_parser(action).add_argument("name")
    delete = keys.add_parser("delete", help="schedule the key's destruction")
    delete.add_argument("name")
    delete.add_argument(
        "--window-seconds", type=_int_in(0, 10 * 365 * 86400), help="default: the setting"
    )
    local.choices["keys"].set_defaults(run=_on_server(store.keys))

    tokens = local.add_parser("tokens", help="manage scoped tokens").add_subparsers(
        dest="action", required=True
    )
    token_create = tokens.add_parser("create")
    token_create.add_argument("--keys", help="comma-separated name patterns")
    token_create.add_argument("--operations", help="comma-separated operations")
    token_create.add_argument("--policies", help="comma-separated policy names")
    token_create.add_argument("--description", default="")
    token_create.add_argument("--ttl", type=int, help="lifetime in seconds")
    token_create.add_argument(
        "--rate", type=float, help="requests a second on each worker process; default: no limit"
    )
    tokens.add_parser("list")
    tokens.add_parser("revoke").add_argument("id")
    local.choices["tokens"].set_defaults(run=_on_server(store.tokens))

    audit = local.add_parser(
        "audit", help="read and check the audit trail in the store (`cipherd audit` asks a service)"
    ).add_subparsers(dest="action", required=True)
    audit_verify = audit.add_parser(
        "verify", help="check every chain and its anchor; exit 1 naming each chain's first fault"
    )
    audit_verify.add_argument(
        "--anchors",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="read the anchors from this file (a log, say) or directory (repeatable) instead",
    )
    audit_list = audit.add_parser("list", help="records, oldest first, as `cipherd audit list`")
    for option in ("key", "principal", "operation"):
        audit_list.add_argument(f"--{option}")
    audit_list.add_argument("--outcome", type=_outcome, help="success, failure or a status")
    audit_list.add_argument("--since", type=_moment, help="ISO 8601 time")
    audit_list.add_argument("--until", type=_moment, help="ISO 8601 time")
    audit_list.add_argument("--limit", type=_int_in(1, 100_000), default=100)
    audit_list.add_argument("--after", help="a page's `next`")
    local.choices["audit"].set_defaults(run=_on_server(store.audit))

    keyring = commands.add_parser(
        "keyring", help="the keyring of data-encryption keys under the root key, in the store"
    ).add_subparsers(dest="action", required=True)
    keyring.add_parser("status")
    keyring.add_parser("rotate", help="add a term and rewrap every key version onto it")
    commands.choices["keyring"].set_defaults(run=_on_server(store.keyring))

    admin_token = commands.add_parser(
        "admin-token", help="the admin token of the store"
    ).add_subparsers(dest="action", required=True)
    admin_token.add_parser(
        "rotate", help="draw a new admin token: the former one is refused at once everywhere"
    )
    commands.choices["admin-token"].set_defaults(run=_on_server(store.admin_token))

    root = commands.add_parser("root", help="the root key of the store").add_subparsers(
        dest="action", required=True
    )
    root_rotate = root.add_parser("rotate", help="rewrap the keyring under a new root key")
    new_root = root_rotate.add_mutually_exclusive_group(required=True)
    new_root.add_argument("--new-root-key-file", type=Path, help="the new root key, base64")
    new_root.add_argument(
        "--new-root-key-pkcs11-key",
        metavar="LABEL",
        help="the new root key: another AES key on the CIPHERD_ROOT_KEY_PKCS11_* token",
    )
    commands.choices["root"].set_defaults(run=_on_server(store.root))


def _settings() -> Settings:
    """The CIPHERD_* settings, or an exit naming each one that is wrong."""
    try:
        return get_settings()
    except ValidationError as exc:
        raise store.invalid(exc, lambda loc: f"CIPHERD_{loc[0]}".upper()) from None


ServerCommand = Callable[[argparse.Namespace, Settings], None]


def _on_server(command: ServerCommand) -> Callable[[argparse.Namespace], int]:
    """A command run with the settings, its failures as one line and exit status 1."""
    return partial(_run_on_server, command)


def _run_on_server(command: ServerCommand, args: argparse.Namespace) -> int:
    from app.ops.errors import Problem
    from app.server.bootstrap import BootstrapError
    from app.server.releases import UnsupportedRelease
    from app.server.tls import TlsError
    from app.store import KeyStoreError

    # What the service and the store commands create (the SQLite store, its -wal and -shm, the
    # metrics files of the workers, which inherit it, audit files) is for this user only.
    umask = os.umask(0o077)
    try:
        command(args, _settings())
        sys.stdout.flush()
    except (BootstrapError, KeyStoreError, Problem, TlsError, UnsupportedRelease) as exc:
        raise SystemExit(str(exc)) from None
    finally:
        os.umask(umask)
    return 0
