"""The `cipherd` command's client side: keys, tokens, ECIES, AEZ, FE, signatures and HMAC on a
running service.

`--address` (CIPHERD_ADDR, default http://127.0.0.1:8000) names the service; the token comes
from CIPHERD_TOKEN or `--token-file`. Raw payloads stream from stdin (or `--in`) to stdout (or
`--out`). Exit codes: 0 done, 2 a usage error, 3 the service refused (a 4xx problem), 4 the
service could not be reached, 5 the service failed (5xx).
"""

import argparse
import base64
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import IO, Any

import cipherd
from cipherd.errors import ProblemError, UnreachableError

USAGE, REFUSED, UNREACHABLE, FAILED = 2, 3, 4, 5
PROGRESS_EVERY = 8 << 20  # bytes between two progress updates on stderr


def add_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """The client commands, on the `cipherd` command's subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", help="the service (CIPHERD_ADDR, default %(default)s)")
    common.add_argument("--token-file", help="a file holding the token (else CIPHERD_TOKEN)")
    common.add_argument("--ca-file", help="CA certificates to verify an https service")
    common.add_argument("--output", choices=["json", "table"], default="json")

    def family(name: str, help: str) -> "argparse._SubParsersAction[argparse.ArgumentParser]":
        parser = commands.add_parser(name, help=help)
        parser.set_defaults(client=True)
        return parser.add_subparsers(dest="action", required=True)

    keys = family("keys", "keys on a running service")
    create = keys.add_parser("create", parents=[common])
    create.add_argument("name")
    create.add_argument("type")
    create.add_argument("--dimension", type=int, help="FE key types: the vector length")
    create.add_argument("--curve", help="FE key types: bls12-381 (default) or bn254")
    create.add_argument("--exportable", action="store_true")
    keys.add_parser("list", parents=[common])
    for action in ("get", "rotate", "restore", "public", "trim"):
        keys.add_parser(action, parents=[common]).add_argument("name")
    update = keys.add_parser("update", parents=[common], help="change a key's policies")
    update.add_argument("name")
    for policy in ("min-decryption-version", "min-encryption-version", "auto-rotate-seconds"):
        update.add_argument(f"--{policy}", type=int)
    for flag in ("deletion-protection", "exportable"):
        update.add_argument(f"--{flag}", action=argparse.BooleanOptionalAction)
    delete = keys.add_parser("delete", parents=[common], help="schedule the key's deletion")
    delete.add_argument("name")
    delete.add_argument("--window-seconds", type=int)

    tokens = family("tokens", "scoped tokens on a running service")
    token = tokens.add_parser("create", parents=[common])
    token.add_argument("--keys", required=True, help="comma-separated name patterns")
    token.add_argument("--operations", required=True, help="comma-separated operations")
    token.add_argument("--description")
    token.add_argument("--ttl", type=int, help="lifetime in seconds")
    token.add_argument(
        "--rate", type=float, help="requests a second on each worker process; default: no limit"
    )
    tokens.add_parser("list", parents=[common])
    tokens.add_parser("revoke", parents=[common]).add_argument("id")

    streams = argparse.ArgumentParser(add_help=False, parents=[common])
    streams.add_argument("name")
    streams.add_argument("--in", dest="source", help="read this file (default: stdin)")
    streams.add_argument("--out", dest="sink", help="write this file (default: stdout)")
    ecies = family("ecies", "ECIES with a key of a running service, raw bytes streamed")
    ecies.add_parser("encrypt", parents=[streams])
    ecies.add_parser("decrypt", parents=[streams]).add_argument("--key-version", type=int)
    aez = family("aez", "AEZ with a key of a running service, raw bytes streamed")
    for action in ("encrypt", "decrypt"):
        command = aez.add_parser(action, parents=[streams])
        command.add_argument("--nonce", help="base64")
        command.add_argument("--ad", action="append", help="base64; repeat for a vector")
        command.add_argument("--tau", type=int, help="bytes of expansion (default 16)")
        if action == "decrypt":
            command.add_argument("--key-version", type=int)

    # A message to sign, verify or MAC: the bytes of --in, else of stdin.
    message = argparse.ArgumentParser(add_help=False, parents=[common])
    message.add_argument("name")
    message.add_argument("--in", dest="source", help="read the message from this file")
    ecdsa = argparse.ArgumentParser(add_help=False)
    ecdsa.add_argument("--hash", choices=["sha256", "keccak256"], help="ecdsa-secp256k1 only")
    ecdsa.add_argument("--prehashed", action="store_true", help="the message is the digest")
    ecdsa.add_argument("--format", choices=["der", "compact", "recoverable"])

    def single(name: str, help: str, parents: list[argparse.ArgumentParser]) -> Any:
        parser = commands.add_parser(name, help=help, parents=parents)
        parser.set_defaults(client=True, action="")
        return parser

    single("sign", "sign a message with a key of a running service", [message, ecdsa])
    verify = single("verify", 'verify a signature: {"valid": true|false}', [message, ecdsa])
    verify.add_argument("--signature", required=True, help="base64")
    verify.add_argument("--key-version", type=int)
    mac = single("hmac", "the HMAC of a message, or with --verify its check", [message])
    mac.add_argument("--algorithm", choices=["sha256", "sha384", "sha512"])
    mac.add_argument("--verify", metavar="HMAC", help="check this HMAC (base64) instead")

    fe = family("fe", "functional encryption with a key of a running service")
    keygen = fe.add_parser("keygen", parents=[common], help="a functional key for y (or F)")
    keygen.add_argument("name")
    keygen.add_argument("--y", help="the function vector, comma-separated")
    keygen.add_argument("--f", help="quadratic keys: the matrix as JSON, row by row")
    fe_encrypt = fe.add_parser("encrypt", parents=[common])
    fe_encrypt.add_argument("name")
    fe_encrypt.add_argument("--x", required=True, help="comma-separated")
    fe_encrypt.add_argument("--y", help="quadratic keys: the second vector")
    fe_decrypt = fe.add_parser("decrypt", parents=[common])
    fe_decrypt.add_argument("name")
    fe_decrypt.add_argument("--functional-key", required=True, help="base64")
    fe_decrypt.add_argument("--ciphertext", required=True, help="base64")
    fe_decrypt.add_argument("--bounds", required=True, help="lo,hi")


def run(args: argparse.Namespace) -> int:
    """Run a client command; its exit code."""
    try:
        client = cipherd.Client(args.address, token_file=args.token_file, ca_file=args.ca_file)
    except OSError as exc:
        print(f"cipherd: {exc}", file=sys.stderr)
        return USAGE
    try:
        with client:
            result = COMMANDS[(args.command, args.action)](client, args)
    except ProblemError as problem:
        print(f"cipherd: {problem} (request {problem.request_id})", file=sys.stderr)
        return FAILED if problem.status >= 500 else REFUSED
    except UnreachableError as exc:
        print(f"cipherd: {exc}", file=sys.stderr)
        return UNREACHABLE
    except ValueError as exc:
        print(f"cipherd: {exc}", file=sys.stderr)
        return USAGE
    if result is not None:
        _show(result, args.output)
    return 0


def _plain(value: Any) -> Any:
    """A result as JSON values: bytes in base64, times in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _show(result: Any, output: str) -> None:
    plain = _plain(result)
    if output == "json":
        print(json.dumps(plain, indent=2))
        return
    rows = plain if isinstance(plain, list) else [plain]
    rows = [row if isinstance(row, dict) else {"value": row} for row in rows]
    columns = [c for c in dict.fromkeys(k for row in rows for k in row) if c != "versions"]
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _ints(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"not a comma-separated list of integers: {text!r}") from None


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise ValueError(f"not base64: {text!r}") from None


class _Progress:
    """Bytes read so far, on stderr when it is a terminal, for transfers of many megabytes."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.done = 0
        self.shown = 0
        self.visible = sys.stderr.isatty()

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.source.read(cipherd._transport.CHUNK):
            self.done += len(chunk)
            if self.visible and self.done - self.shown >= PROGRESS_EVERY:
                self.shown = self.done
                print(f"\r{self.done >> 20} MiB sent", end="", file=sys.stderr, flush=True)
            yield chunk
        if self.visible and self.shown:
            print(f"\r{self.done >> 20} MiB sent", file=sys.stderr)


def _stream(args: argparse.Namespace, send: Callable[[Any, IO[bytes]], cipherd.Streamed]) -> None:
    source = open(args.source, "rb") if args.source else sys.stdin.buffer  # noqa: SIM115
    sink = open(args.sink, "wb") if args.sink else sys.stdout.buffer  # noqa: SIM115
    try:
        send(source if source.seekable() and not sys.stderr.isatty() else _Progress(source), sink)
    finally:
        for file in (source, sink):
            if file not in (sys.stdin.buffer, sys.stdout.buffer):
                file.close()
        sink.flush()


def _message(args: argparse.Namespace) -> bytes:
    if args.source is None:
        return sys.stdin.buffer.read()
    with open(args.source, "rb") as source:
        return source.read()


def _ecdsa_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"hash": args.hash, "prehashed": args.prehashed or None, "format": args.format}


def _hmac(client: cipherd.Client, args: argparse.Namespace) -> Any:
    if args.verify is None:
        return client.hmac.compute(args.name, _message(args), algorithm=args.algorithm)
    valid = client.hmac.verify(
        args.name, _message(args), _b64(args.verify), algorithm=args.algorithm
    )
    return {"valid": valid}


def _aez_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "nonce": _b64(args.nonce) if args.nonce is not None else None,
        "ad": [_b64(a) for a in args.ad] if args.ad is not None else None,
        "tau": args.tau,
    }


Command = Callable[[cipherd.Client, argparse.Namespace], Any]
COMMANDS: dict[tuple[str, str], Command] = {
    ("keys", "create"): lambda c, a: c.keys.create(
        a.name, a.type, dimension=a.dimension, curve=a.curve, exportable=a.exportable or None
    ),
    ("keys", "list"): lambda c, a: c.keys.list(limit=1000).keys,
    ("keys", "get"): lambda c, a: c.keys.get(a.name),
    ("keys", "rotate"): lambda c, a: c.keys.rotate(a.name),
    ("keys", "restore"): lambda c, a: c.keys.restore(a.name),
    ("keys", "public"): lambda c, a: c.keys.public(a.name),
    ("keys", "trim"): lambda c, a: c.keys.trim(a.name),
    ("keys", "update"): lambda c, a: c.keys.update(
        a.name,
        min_decryption_version=a.min_decryption_version,
        min_encryption_version=a.min_encryption_version,
        auto_rotate_seconds=a.auto_rotate_seconds,
        deletion_protection=a.deletion_protection,
        exportable=a.exportable,
    ),
    ("keys", "delete"): lambda c, a: c.keys.delete(a.name, window_seconds=a.window_seconds),
    ("tokens", "create"): lambda c, a: c.tokens.create(
        a.keys.split(","),
        a.operations.split(","),
        description=a.description,
        ttl_seconds=a.ttl,
        rate_per_second=a.rate,
    ),
    ("tokens", "list"): lambda c, a: c.tokens.list(),
    ("tokens", "revoke"): lambda c, a: c.tokens.revoke(a.id),
    ("ecies", "encrypt"): lambda c, a: _stream(
        a, lambda source, sink: c.ecies.encrypt_stream(a.name, source, sink)
    ),
    ("ecies", "decrypt"): lambda c, a: _stream(
        a,
        lambda source, sink: c.ecies.decrypt_stream(
            a.name, source, sink, key_version=a.key_version
        ),
    ),
    ("aez", "encrypt"): lambda c, a: _stream(
        a, lambda source, sink: c.aez.encrypt_stream(a.name, source, sink, **_aez_options(a))
    ),
    ("aez", "decrypt"): lambda c, a: _stream(
        a,
        lambda source, sink: c.aez.decrypt_stream(
            a.name, source, sink, key_version=a.key_version, **_aez_options(a)
        ),
    ),
    ("sign", ""): lambda c, a: c.signatures.sign(a.name, _message(a), **_ecdsa_options(a)),
    ("verify", ""): lambda c, a: {
        "valid": c.signatures.verify(
            a.name,
            _message(a),
            _b64(a.signature),
            key_version=a.key_version,
            **_ecdsa_options(a),
        )
    },
    ("hmac", ""): _hmac,
    ("fe", "keygen"): lambda c, a: c.fe.keygen(
        a.name,
        y=_ints(a.y) if a.y else None,
        f=json.loads(a.f) if a.f else None,
    ),
    ("fe", "encrypt"): lambda c, a: c.fe.encrypt(a.name, _ints(a.x), y=_ints(a.y) if a.y else None),
    ("fe", "decrypt"): lambda c, a: {
        "result": c.fe.decrypt(a.name, _b64(a.functional_key), _b64(a.ciphertext), _ints(a.bounds))
    },
}
