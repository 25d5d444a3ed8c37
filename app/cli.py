"""The `cipherd` command: run the service, print its OpenAPI document, manage keys and tokens.

Key and token commands work on the configured store directly (same settings as the service), so
an operator can bootstrap a deployment without a running server.
"""

import argparse
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Sequence

from app.settings import Settings, get_settings


def _serve(args: argparse.Namespace, settings: Settings) -> None:
    import uvicorn

    from app.bootstrap import load_admin_token, load_root_key
    from app.logs import configure_logging
    from app.workers import Supervisor

    # The supervising process logs too (worker deaths, restarts): the same JSON lines.
    configure_logging(settings.log_format, settings.log_level)
    # Generate the embedded default's secrets once, before any worker starts.
    load_root_key(settings)
    load_admin_token(settings)
    if args.workers > 1:
        metrics_dir = settings.data_dir / "metrics"
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    if not settings.admin_token:
        logging.getLogger("cipherd").warning("admin token: in %s", settings.admin_token_file)
    options = {
        "app": "app.main:create_app",
        "factory": True,
        "host": args.host,
        "port": args.port,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": 3,
        # What "auto" picks when uvicorn[standard] is installed, named so that a missing C
        # parser or loop fails at start instead of halving throughput unnoticed (h11, asyncio).
        "http": "httptools",
        "loop": "uvloop",
    }
    if args.workers > 1:
        sys.exit(Supervisor(options, args.workers).run())
    uvicorn.run(**options)


def _openapi(args: argparse.Namespace, settings: Settings) -> None:
    from app.main import create_app
    from app.openapi import openapi_yaml

    sys.stdout.write(openapi_yaml(create_app(settings)))


def _store(settings: Settings):  # type: ignore[no-untyped-def]
    from app.bootstrap import load_root_key
    from app.keystore import KeyWrapper, open_store

    return open_store(settings.resolved_database_url, KeyWrapper(load_root_key(settings)))


def _print(value: object) -> None:
    print(json.dumps(value, indent=2, default=str))


def _keys(args: argparse.Namespace, settings: Settings) -> None:
    from dataclasses import asdict

    from app.keytypes import KEY_TYPES

    store = _store(settings)
    try:
        if args.action == "list":
            _print([asdict(info) for info in store.list()])
        elif args.action == "create":
            if args.type not in KEY_TYPES:
                raise SystemExit(f"unknown key type {args.type!r}; one of {sorted(KEY_TYPES)}")
            params = {"dimension": args.dimension} if args.dimension else {}
            secret, public = KEY_TYPES[args.type].generate(params)
            _print(asdict(store.create(args.name, args.type, params, False, secret, public)))
        elif args.action == "rotate":
            info = store.get(args.name)
            secret, public = KEY_TYPES[info.type].generate(info.params)
            _print(asdict(store.rotate(args.name, secret, public)))
        elif args.action == "delete":
            store.delete(args.name)
    finally:
        store.close()


def _tokens(args: argparse.Namespace, settings: Settings) -> None:
    from app.auth import Operation, hash_token, new_scoped_token
    from app.keystore import TokenRecord

    store = _store(settings)
    try:
        if args.action == "create":
            operations = [Operation(op).value for op in args.operations.split(",")]
            token_id, token = new_scoped_token()
            now = time.time()
            store.add_token(
                TokenRecord(
                    id=token_id,
                    token_hash=hash_token(token),
                    description=args.description,
                    key_patterns=tuple(args.keys.split(",")),
                    operations=tuple(sorted(operations)),
                    created_at=now,
                    expires_at=now + args.ttl if args.ttl else None,
                )
            )
            _print({"id": token_id, "token": token})
        elif args.action == "list":
            _print(
                [
                    {
                        "id": t.id,
                        "description": t.description,
                        "keys": t.key_patterns,
                        "operations": t.operations,
                        "expires_at": t.expires_at,
                    }
                    for t in store.list_tokens()
                ]
            )
        elif args.action == "revoke" and not store.delete_token(args.id):
            raise SystemExit(f"no token with id {args.id!r}")
    finally:
        store.close()


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="cipherd", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    serve.set_defaults(run=_serve)

    commands.add_parser("openapi", help="print the OpenAPI document as YAML").set_defaults(
        run=_openapi
    )

    keys = commands.add_parser("keys", help="manage keys in the store").add_subparsers(
        dest="action", required=True
    )
    keys.add_parser("list")
    create = keys.add_parser("create")
    create.add_argument("name")
    create.add_argument("type")
    create.add_argument("--dimension", type=int)
    for action in ("rotate", "delete"):
        keys.add_parser(action).add_argument("name")
    commands.choices["keys"].set_defaults(run=_keys)

    tokens = commands.add_parser("tokens", help="manage scoped tokens").add_subparsers(
        dest="action", required=True
    )
    token_create = tokens.add_parser("create")
    token_create.add_argument("--keys", required=True, help="comma-separated name patterns")
    token_create.add_argument("--operations", required=True, help="comma-separated operations")
    token_create.add_argument("--description", default="")
    token_create.add_argument("--ttl", type=int, help="lifetime in seconds")
    tokens.add_parser("list")
    tokens.add_parser("revoke").add_argument("id")
    commands.choices["tokens"].set_defaults(run=_tokens)
    return top


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    args.run(args, get_settings())
