"""The `cipherd` command: run the service, print its OpenAPI document, manage keys and tokens.

`cipherd keys|tokens|ecies|aez|fe ...` talk to a running service (`cipherd.cli`). `cipherd local
keys|tokens ...` work on the configured store directly (same settings as the service), so an
operator can bootstrap a deployment without a running server. They call the same verbs as the
REST API (`app.ops.keys`, `app.ops.tokens`), with the same checks and the same JSON.
"""

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.settings import Settings, get_settings
from cipherd.cli import add_commands as add_client_commands
from cipherd.cli import run as run_client_command

if TYPE_CHECKING:
    from app.ops.audit import AuditTrail
    from app.server.tls import TlsFiles
    from app.store import KeyStore

ModelT = TypeVar("ModelT", bound=BaseModel)
MAX_WORKERS = 256


def uvicorn_options(host: str, port: int, tls: "TlsFiles | None" = None) -> dict[str, Any]:
    """How every worker runs uvicorn (`bench/ecies_floor.py` runs a probe app the same way)."""
    from app.server.tls import uvicorn_tls_options

    return {
        "app": "app.main:create_served_app",
        "factory": True,
        "host": host,
        "port": port,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": 3,
        # httptools (what "auto" picks when uvicorn[standard] is installed), named so that a
        # missing C parser fails at start instead of halving throughput unnoticed (h11), with
        # the bounds on connections uvicorn lacks.
        "http": "app.server.protocol:BoundedHttpToolsProtocol",
        "loop": "uvloop",  # named for the same reason (asyncio)
        **uvicorn_tls_options(tls),
    }


def _tls_files(args: argparse.Namespace, settings: Settings) -> "TlsFiles | None":
    """The TLS files from the flags, else the settings; checked by building a context once."""
    from app.server.tls import TlsError, TlsFiles, server_context

    cert = args.tls_cert_file or settings.tls_cert_file
    key = args.tls_key_file or settings.tls_key_file
    client_ca = args.tls_client_ca_file or settings.tls_client_ca_file
    if cert is None and key is None:
        if client_ca is not None:
            raise TlsError("CIPHERD_TLS_CLIENT_CA_FILE needs CIPHERD_TLS_CERT_FILE and _KEY_FILE")
        return None
    if cert is None or key is None:
        missing = "CIPHERD_TLS_CERT_FILE" if cert is None else "CIPHERD_TLS_KEY_FILE"
        raise TlsError(f"{missing} is needed with the other TLS file")
    files = TlsFiles(Path(cert), Path(key), None if client_ca is None else Path(client_ca))
    server_context(files)
    return files


def _serve(args: argparse.Namespace, settings: Settings) -> None:
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    from app.server.bootstrap import load_admin_token, root_key, secure_data_dir
    from app.server.logs import configure_logging
    from app.server.workers import Supervisor, claim_address

    host = settings.host if args.host is None else args.host
    port = settings.port if args.port is None else args.port
    try:
        claimed = claim_address(host, port, shared=args.workers > 1)
    except OSError as exc:
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise SystemExit(f"cannot listen on {address}: {exc.strerror}") from None
    # The supervising process logs too (worker deaths, restarts): the same JSON lines.
    configure_logging(settings.log_format, settings.log_level)
    # Generate the embedded default's secrets once, before any worker starts, and open the store
    # once: a wrong database URL or an unreachable database stops here, in one line.
    secure_data_dir(settings)
    root_key(settings)
    load_admin_token(settings)
    tls = _tls_files(args, settings)
    _store(settings, create=True).close()
    if not settings.admin_token:
        logging.getLogger("cipherd").warning("admin token: in %s", settings.admin_token_file)
    options = uvicorn_options(host, port, tls)
    if args.workers > 1:
        supervisor = Supervisor(options, args.workers, settings.worker_unresponsive_seconds)
        metrics_dir = tempfile.mkdtemp(prefix="cipherd-metrics-", dir=_metrics_parent(settings))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        try:
            sys.exit(supervisor.run(claimed))
        finally:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    server = uvicorn.Server(uvicorn.Config(**options))
    with claimed:
        server.run(sockets=[claimed])
    if not server.started:
        sys.exit(STARTUP_FAILURE)


def _metrics_parent(settings: Settings) -> str | None:
    """Where the workers' shared metrics files go: memory-backed and off the data directory's
    file system by default. They are mmap'd, and a page of one that the file system has no
    room for kills the worker writing it (SIGBUS): on the data directory, a full disk, which
    should fail only writes, took the workers with it."""
    if settings.metrics_dir is not None:
        return str(settings.metrics_dir)
    return "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None


def openapi_yaml(document: dict[str, Any]) -> str:
    """An OpenAPI document as the YAML of `openapi.yaml`."""
    import yaml

    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def _openapi(args: argparse.Namespace, settings: Settings) -> None:
    from app.main import create_app

    sys.stdout.write(openapi_yaml(create_app(settings).openapi()))


def _completion(args: argparse.Namespace, settings: Settings) -> None:
    from app.completion import bash_script

    sys.stdout.write(bash_script(parser()))


def _store(settings: Settings, create: bool = False) -> "KeyStore":
    """The configured store; unless `create`, only one that exists: a command run from another
    directory must not make a new empty store (and root key) under ./var and list nothing."""
    from app.server.bootstrap import root_key, secure_data_dir, uses_generated_root_key
    from app.store import open_store

    if not create:
        sqlite = settings.sqlite_path
        missing = (
            sqlite
            if sqlite is not None and not sqlite.exists()
            else settings.generated_root_key_file
            if uses_generated_root_key(settings) and not settings.generated_root_key_file.exists()
            else None
        )
        if missing is not None:
            raise SystemExit(
                f"no cipherd store in {settings.data_dir.absolute()} ({missing.absolute()} does "
                "not exist): point CIPHERD_DATA_DIR (or CIPHERD_DATABASE_URL) at the service's, "
                "or make a new store there with `cipherd local init`"
            )
    secure_data_dir(settings)
    return open_store(settings.resolved_database_url, partial(root_key, settings))


def _init(args: argparse.Namespace, settings: Settings) -> None:
    from app.server.bootstrap import load_admin_token

    _store(settings, create=True).close()
    load_admin_token(settings)
    _print({"data_dir": str(settings.data_dir.absolute())})


def _print(value: object) -> None:
    print(json.dumps(value, indent=2))


def _json(model: BaseModel) -> dict[str, Any]:
    """What the REST API answers for the same record."""
    return model.model_dump(mode="json")


def _invalid(exc: ValidationError, name: Callable[[tuple[int | str, ...]], str]) -> SystemExit:
    """A one-line exit naming each invalid field and what is wrong with it, never its value."""
    return SystemExit("; ".join(f"{name(e['loc'])}: {e['msg']}" for e in exc.errors()))


def _checked(model: type[ModelT], values: dict[str, Any]) -> ModelT:
    """The arguments as the REST API's request body, with its checks."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise _invalid(exc, lambda loc: ".".join(map(str, loc))) from None


def _trail(store: "KeyStore", settings: Settings) -> "AuditTrail":
    from app.ops.audit import AuditTrail

    return AuditTrail.for_settings(store, settings)


# Who the audit trail says made a change from the command line.
CLI_PRINCIPAL = "cli"


def _keys(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import keys
    from app.ops.auth import ADMIN

    store = _store(settings)
    trail = _trail(store, settings)
    try:
        if args.action == "list":
            page, _ = keys.readable_page(store, ADMIN, None, None)
            _print([_json(info) for info in page])
        elif args.action == "create":
            fields = (
                "name",
                "type",
                "dimension",
                "curve",
                "exportable",
                "deletion_protection",
                "allow_backup",
            )
            body = _checked(keys.KeyCreate, {field: getattr(args, field) for field in fields})
            created = keys.create(store, body, settings)
            trail.record("keys_create_key", principal=CLI_PRINCIPAL, key=body.name, status=201)
            _print(_json(created))
        elif args.action == "rotate":
            rotated = keys.rotate(store, None, args.name)
            trail.record(
                "keys_rotate_key",
                principal=CLI_PRINCIPAL,
                key=args.name,
                key_version=rotated.latest_version,
            )
            _print(_json(rotated))
        elif args.action == "delete":
            trail.ensure_writable_now()
            scheduled = keys.delete(store, None, args.name, args.window_seconds, settings)
            trail.record("keys_delete_key", principal=CLI_PRINCIPAL, key=args.name, status=202)
            _print(_json(scheduled))
        elif args.action == "restore":
            trail.ensure_writable_now()
            restored = keys.restore(store, args.name)
            trail.record("keys_restore_key", principal=CLI_PRINCIPAL, key=args.name)
            _print(_json(restored))
    finally:
        trail.close()
        store.close()


def _tokens(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import tokens

    store = _store(settings)
    trail = _trail(store, settings)
    try:
        if args.action == "create":
            body = _checked(
                tokens.TokenCreate,
                {
                    "description": args.description,
                    "keys": args.keys.split(","),
                    "operations": args.operations.split(","),
                    "ttl_seconds": args.ttl,
                    "rate_per_second": args.rate,
                },
            )
            created = tokens.issue(store, body)
            trail.record(
                "tokens_create_token",
                principal=CLI_PRINCIPAL,
                status=201,
                details={"token": created.id, "keys": created.keys},
            )
            _print(_json(created))
        elif args.action == "list":
            _print([_json(record) for record in tokens.listing(store)])
        elif args.action == "revoke":
            tokens.revoke(store, None, args.id)
            trail.record(
                "tokens_delete_token",
                principal=CLI_PRINCIPAL,
                status=204,
                details={"token": args.id},
            )
    finally:
        trail.close()
        store.close()


def _audit(args: argparse.Namespace, settings: Settings) -> None:
    from datetime import datetime

    from app.ops import audit
    from app.store import AuditQuery

    store = _store(settings)
    try:
        # The journals of services that have stopped hold their last records.
        audit.adopt_orphans(store, settings.audit_journal_dir)
        if args.action == "verify":
            count, faults = audit.verify(store)
            if faults:
                raise SystemExit("\n".join(f"audit trail does not verify: {f}" for f in faults))
            chains = len(store.audit_heads())
            _print({"verified": True, "records": count, "chains": chains})
            return
        statuses = {"success": (None, 399), "failure": (400, None)}
        outcome = args.outcome
        status_from, status_to = (
            statuses[outcome]
            if outcome in statuses
            else (int(outcome), int(outcome))
            if outcome
            else (None, None)
        )

        def moment(text: str | None) -> float | None:
            return None if text is None else datetime.fromisoformat(text).timestamp()

        query = AuditQuery(
            key=args.key,
            principal=args.principal,
            operation=args.operation,
            status_from=status_from,
            status_to=status_to,
            since=moment(args.since),
            until=moment(args.until),
            after=None if args.after is None else audit.page_start(store, args.after),
            limit=args.limit,
        )
        records, next_after = audit.listing(store, query)
        _print({"records": records, "next": next_after})
    finally:
        store.close()


def _keyring(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import root

    store = _store(settings)
    trail = _trail(store, settings)
    try:
        if args.action == "status":
            _print(_json(root.keyring_status(store)))
            return
        rotated = root.rotate_keyring(store)
        trail.record("sys_rotate_keyring", principal=CLI_PRINCIPAL, details={"term": rotated.term})
        print(json.dumps(_json(rotated)), flush=True)
        # The service's processes rewrap too; this one reports the progress until none is left.
        rewrap = root.Rewrap(store, settings.keyring_rewrap_per_second)
        for status in rewrap.passes():
            print(json.dumps(_json(status)), flush=True)
    finally:
        trail.close()
        store.close()


def _root(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import root
    from app.server.bootstrap import (
        read_root_key_file,
        replace_generated_root_key,
        root_key,
        uses_generated_root_key,
    )
    from app.store import KeyWrapper, RootKey

    new_key = b""
    new_root: RootKey
    if args.new_root_key_file is not None:
        new_key = read_root_key_file(args.new_root_key_file)
        new_root = KeyWrapper(new_key)
    else:
        new_root = root_key(settings, args.new_root_key_pkcs11_key)
    store = _store(settings)
    trail = _trail(store, settings)
    try:
        terms = root.rotate_root(store, new_root)
        source = "file" if new_key else "pkcs11"
        trail.record(
            "sys_rotate_root",
            principal=CLI_PRINCIPAL,
            details={"terms_rewrapped": terms, "new_root_key": source},
        )
    finally:
        trail.close()
        store.close()
    if new_key and uses_generated_root_key(settings):
        replace_generated_root_key(settings, new_key)
        where = f"written to {settings.generated_root_key_file}"
    elif not new_key:
        where = (
            f"set CIPHERD_ROOT_KEY_PKCS11_KEY={args.new_root_key_pkcs11_key} for every process: "
            "running ones keep serving with the terms they hold until restarted with it"
        )
    else:
        where = (
            "give it to every process from now on (CIPHERD_ROOT_KEY_FILE's file, say): running "
            "ones read it again by themselves, one still given the old root key will not start"
        )
    _print({"terms_rewrapped": terms, "new_root_key": where})


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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="cipherd", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

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
    serve.set_defaults(run=_serve)

    commands.add_parser("openapi", help="print the OpenAPI document as YAML").set_defaults(
        run=_openapi
    )
    completion = commands.add_parser(
        "completion", help='print a shell completion script: eval "$(cipherd completion bash)"'
    )
    completion.add_argument("shell", choices=["bash"])
    completion.set_defaults(run=_completion)

    add_client_commands(commands)
    local = commands.add_parser(
        "local", help="keys and tokens on the store itself, without a service"
    ).add_subparsers(dest="command", required=True)
    local.add_parser(
        "init", help="make the store, root key and admin token (as `serve` does on first start)"
    ).set_defaults(run=_init)
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
    local.choices["keys"].set_defaults(run=_keys)

    tokens = local.add_parser("tokens", help="manage scoped tokens").add_subparsers(
        dest="action", required=True
    )
    token_create = tokens.add_parser("create")
    token_create.add_argument("--keys", required=True, help="comma-separated name patterns")
    token_create.add_argument("--operations", required=True, help="comma-separated operations")
    token_create.add_argument("--description", default="")
    token_create.add_argument("--ttl", type=int, help="lifetime in seconds")
    token_create.add_argument(
        "--rate", type=float, help="requests a second on each worker process; default: no limit"
    )
    tokens.add_parser("list")
    tokens.add_parser("revoke").add_argument("id")
    local.choices["tokens"].set_defaults(run=_tokens)

    keyring = commands.add_parser(
        "keyring", help="the keyring of data-encryption keys under the root key"
    ).add_subparsers(dest="action", required=True)
    keyring.add_parser("status")
    keyring.add_parser("rotate", help="add a term and rewrap every key version onto it")
    commands.choices["keyring"].set_defaults(run=_keyring)

    root = commands.add_parser("root", help="the root key").add_subparsers(
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
    commands.choices["root"].set_defaults(run=_root)

    audit = commands.add_parser("audit", help="read and check the audit trail").add_subparsers(
        dest="action", required=True
    )
    audit.add_parser("verify", help="check every chain; exit 1 naming the first bad record")
    audit_list = audit.add_parser("list", help="records, oldest first, as GET /v1/audit")
    for option in ("key", "principal", "operation"):
        audit_list.add_argument(f"--{option}")
    audit_list.add_argument("--outcome", type=_outcome, help="success, failure or a status")
    audit_list.add_argument("--since", type=_moment, help="ISO 8601 time")
    audit_list.add_argument("--until", type=_moment, help="ISO 8601 time")
    audit_list.add_argument("--limit", type=_int_in(1, 100_000), default=100)
    audit_list.add_argument("--after", help="a page's `next`")
    commands.choices["audit"].set_defaults(run=_audit)
    return top


def _settings() -> Settings:
    """The CIPHERD_* settings, or an exit naming each one that is wrong."""
    try:
        return get_settings()
    except ValidationError as exc:
        raise _invalid(exc, lambda loc: f"CIPHERD_{loc[0]}".upper()) from None


def main(argv: Sequence[str] | None = None) -> None:
    from app.ops.errors import Problem
    from app.server.bootstrap import BootstrapError
    from app.server.tls import TlsError
    from app.store import KeyStoreError

    args = parser().parse_args(argv)
    if getattr(args, "client", False):
        raise SystemExit(run_client_command(args))
    # What the service and the store commands create (the SQLite store, its -wal and -shm, the
    # metrics files of the workers, which inherit it, audit files) is for this user only.
    umask = os.umask(0o077)
    try:
        args.run(args, _settings())
        sys.stdout.flush()
    except (BootstrapError, KeyStoreError, Problem, TlsError) as exc:
        raise SystemExit(str(exc)) from None
    except BrokenPipeError:
        # The reader left (`cipherd tokens list | head`): nothing is wrong, and nothing more can
        # be written; stdout goes to /dev/null so that the exit's own flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    finally:
        os.umask(umask)
