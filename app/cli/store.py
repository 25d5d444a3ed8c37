"""The service's commands on its store, without a running service: `cipherd local keys|tokens|
audit`, `cipherd keyring` and `cipherd root`.

They call the same verbs as the REST API (`app.ops.keys`, `app.ops.tokens`, ...), with the same
checks and the same JSON, and record what they change in the audit trail (principal `cli`).
"""

import argparse
import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.settings import Settings

if TYPE_CHECKING:
    from app.ops.audit import AuditTrail
    from app.store import KeyStore

ModelT = TypeVar("ModelT", bound=BaseModel)


def configured_store(settings: Settings, create: bool = False) -> "KeyStore":
    """The configured store; unless `create`, only one that exists: a command run from another
    directory must not make a new empty store (and root key) under ./var and list nothing."""
    from app.server.bootstrap import open_configured_store, secure_data_dir, uses_generated_root_key

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
    return open_configured_store(settings)


def init(args: argparse.Namespace, settings: Settings) -> None:
    from app.server.bootstrap import load_admin_token

    configured_store(settings, create=True).close()
    load_admin_token(settings)
    _print({"data_dir": str(settings.data_dir.absolute())})


def _print(value: object) -> None:
    print(json.dumps(value, indent=2))


def _json(model: BaseModel) -> dict[str, Any]:
    """What the REST API answers for the same record."""
    return model.model_dump(mode="json")


def _every_page(
    read: Callable[[str | None], tuple[Sequence[BaseModel], str | None]],
) -> list[dict[str, Any]]:
    """Every item of a listing that `read` answers a page at a time, following its `next`."""
    items: list[dict[str, Any]] = []
    after = None
    while True:
        page, after = read(after)
        items.extend(_json(item) for item in page)
        if after is None:
            return items


def invalid(exc: ValidationError, name: Callable[[tuple[int | str, ...]], str]) -> SystemExit:
    """A one-line exit naming each invalid field and what is wrong with it, never its value."""
    return SystemExit("; ".join(f"{name(e['loc'])}: {e['msg']}" for e in exc.errors()))


def _checked(model: type[ModelT], values: dict[str, Any]) -> ModelT:
    """The arguments as the REST API's request body, with its checks."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise invalid(exc, lambda loc: ".".join(map(str, loc))) from None


@contextlib.contextmanager
def _audited_store(settings: Settings) -> Iterator[tuple["KeyStore", "AuditTrail"]]:
    """The store and its audit trail for a command that records what it changes; both closed
    after it, the trail first."""
    from app.ops.audit import AuditTrail

    store = configured_store(settings)
    trail = AuditTrail.for_settings(store, settings)
    try:
        yield store, trail
    finally:
        trail.close()
        store.close()


# Who the audit trail says made a change from the command line.
CLI_PRINCIPAL = "cli"


def keys(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import keys
    from app.ops.grants import ADMIN

    with _audited_store(settings) as (store, trail):
        if args.action == "list":
            _print(_every_page(lambda after: keys.readable_page(store, ADMIN, after, 1000)))
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
            with trail.changing() as record:
                created = keys.create(store, body, settings)
                record("keys_create_key", principal=CLI_PRINCIPAL, key=body.name, status=201)
            _print(_json(created))
        elif args.action == "rotate":
            with trail.changing() as record:
                rotated = keys.rotate(store, None, args.name)
                record(
                    "keys_rotate_key",
                    principal=CLI_PRINCIPAL,
                    key=args.name,
                    key_version=rotated.latest_version,
                )
            _print(_json(rotated))
        elif args.action == "delete":
            with trail.changing() as record:
                scheduled = keys.delete(store, None, args.name, args.window_seconds, settings)
                record("keys_delete_key", principal=CLI_PRINCIPAL, key=args.name, status=202)
            time.sleep(settings.key_cache_seconds)  # as the service answers (`keys.delete`)
            _print(_json(scheduled))
        elif args.action == "restore":
            with trail.changing() as record:
                restored = keys.restore(store, args.name)
                record("keys_restore_key", principal=CLI_PRINCIPAL, key=args.name)
            _print(_json(restored))


def tokens(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import tokens
    from app.ops.grants import ADMIN
    from app.ops.identity import TokenLimits

    with _audited_store(settings) as (store, trail):
        if args.action == "create":
            body = _checked(
                tokens.TokenCreate,
                {
                    "description": args.description,
                    "keys": args.keys.split(",") if args.keys else [],
                    "operations": args.operations.split(",") if args.operations else [],
                    "policies": args.policies.split(",") if args.policies else [],
                    "ttl_seconds": args.ttl,
                    "rate_per_second": args.rate,
                },
            )
            with trail.changing() as record:
                issued = tokens.issue(
                    store,
                    TokenLimits(settings.token_default_ttl_seconds, settings.token_max_ttl_seconds),
                    ADMIN,
                    body,
                )
                record(
                    "tokens_create_token",
                    principal=CLI_PRINCIPAL,
                    status=201,
                    details={"token": issued.record.id, "keys": list(issued.record.key_patterns)},
                )
            _print(_json(tokens.created_out(issued)))
        elif args.action == "list":
            _print(_every_page(lambda after: tokens.page(store, after, 1000)))
        elif args.action == "revoke":
            with trail.changing() as record:
                tokens.revoke(store, args.id)
                record(
                    "tokens_delete_token",
                    principal=CLI_PRINCIPAL,
                    status=204,
                    details={"token": args.id},
                )


def audit(args: argparse.Namespace, settings: Settings) -> None:
    from datetime import datetime

    from app.ops import audit
    from app.store import AuditQuery

    store = configured_store(settings)
    try:
        if args.action == "verify":
            verification = audit.report(store, settings, args.anchors)
            _print(verification)
            if not verification["verified"]:
                faults = (audit.ChainFault(**fault) for fault in verification["faults"])
                raise SystemExit("\n".join(f"audit trail does not verify: {f}" for f in faults))
            return
        # The journals of services that have stopped hold their last records.
        audit.adopt_orphans(store, settings.audit_journal_dir)
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


def admin_token(args: argparse.Namespace, settings: Settings) -> None:
    """`cipherd admin-token rotate`: print the new admin token (shown only here)."""
    from app.ops import admin_token

    with _audited_store(settings) as (store, trail):
        with trail.changing() as record:
            # Whatever the store holds now: the operator at the machine needs no admin token.
            token = admin_token.rotate(store, store.auth_state.read().admin_token_hash)
            record("sys_rotate_admin_token", principal=CLI_PRINCIPAL)
        _print({"admin_token": token})


def keyring(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import root

    with _audited_store(settings) as (store, trail):
        if args.action == "status":
            _print(_json(root.keyring_status(store)))
            return
        with trail.changing() as record:
            rotated = root.rotate_keyring(store)
            record("sys_rotate_keyring", principal=CLI_PRINCIPAL, details={"term": rotated.term})
        print(json.dumps(_json(rotated)), flush=True)
        # The service's processes rewrap too; this one reports the progress until none is left.
        rewrap = root.Rewrap(store, settings.keyring_rewrap_per_second)
        for status in rewrap.passes():
            print(json.dumps(_json(status)), flush=True)


def root(args: argparse.Namespace, settings: Settings) -> None:
    from app.ops import root
    from app.server.bootstrap import (
        read_root_key_file,
        root_key,
        root_rotation,
        uses_generated_root_key,
    )
    from app.store import KeyWrapper, RootKey

    new_key = b""
    new_root: RootKey
    if args.new_root_key_file is not None:
        new_key = read_root_key_file(args.new_root_key_file, settings)
        new_root = KeyWrapper(new_key)
    else:
        new_root = root_key(settings, args.new_root_key_pkcs11_key)
    generated = bool(new_key) and uses_generated_root_key(settings)
    with _audited_store(settings) as (store, trail), trail.changing() as record:
        # The generated root key file's new key is on disk before the commit, and replaces the
        # old one after it (a crash in between is settled by the next start).
        with root_rotation(settings, new_key) if generated else contextlib.nullcontext():
            terms = root.rotate_root(store, new_root)
        source = "file" if new_key else "pkcs11"
        record(
            "sys_rotate_root",
            principal=CLI_PRINCIPAL,
            details={"terms_rewrapped": terms, "new_root_key": source},
        )
    if generated:
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
