"""How the client's commands are declared, and what they share: arguments, their types, files.

`@command("keys create", help, *arguments)` registers a function of (client, arguments) that
returns the answer to print (or None when it wrote its output itself, or a `Verdict`). The
command line (`cipherd.cli`) builds its parsers, its help and its completion from these
declarations (`cipherd._commands`).
"""

import argparse
import base64
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, get_args

from cipherd._calls import SigningType
from cipherd._output import progress_bar
from cipherd._transport import Progress, content_length
from cipherd.client import Client
from cipherd.completion import KEY_NAMES

# The service's key types, for help and completion (the service checks the type).
KEY_TYPES = (
    "aes128-gcm",
    "aes256-gcm",
    "aez",
    "chacha20-poly1305",
    "ecdsa-p256",
    "ecdsa-p384",
    "ecdsa-p521",
    "ecdsa-secp256k1",
    "ecies-ed25519",
    "ecies-secp256k1",
    "ecies-x25519",
    "ed25519",
    "hmac",
    "hpke-mlkem768-x25519",
    "hpke-x25519",
    "ipfe-bjk",
    "ipfe-kim",
    "ipfe-kks",
    "ipfe-lin",
    "ipfe-opt",
    "ipfe-tao",
    "ml-dsa-44",
    "ml-dsa-65",
    "ml-dsa-87",
    "qfe-bcfg",
    "qfe-sgp",
    "rsa-2048",
    "rsa-3072",
    "rsa-4096",
    "xchacha20-poly1305",
)
OPERATIONS = (
    "read",
    "public",
    "encrypt",
    "decrypt",
    "keygen",
    "sign",
    "verify",
    "hmac",
    "create",
    "configure",
    "rotate",
    "delete",
)


class UsageError(Exception):
    """A command's arguments or local files are wrong: nothing was asked of the service."""


@dataclass(frozen=True)
class Verdict:
    """A check's answer: printed, and the exit status 1 when it does not hold."""

    answer: Any
    holds: bool
    why: str = ""


@dataclass(frozen=True)
class Arg:
    """One argument of a command: argparse's flags and options, and what completes it (fixed
    words, or KEY_NAMES)."""

    flags: tuple[str, ...]
    options: dict[str, Any]
    complete: tuple[str, ...] | str | None = None


def arg(*flags: str, complete: tuple[str, ...] | str | None = None, **options: Any) -> Arg:
    return Arg(flags, options, complete)


Run = Callable[[Client, argparse.Namespace], Any]


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    help: str
    arguments: tuple[Arg, ...]
    run: Run
    description: str = field(default="")


COMMANDS: list[Command] = []
FAMILIES = {
    "keys": "keys: create, list, read, change, rotate, delete, back up and import",
    "tokens": "tokens: make, list, look up, renew and revoke (their own too)",
    "policies": "named policies: put, get, list, delete",
    "login": "a token for a JWT, this client's TLS certificate or an AppRole secret id",
    "approle": "AppRole roles: settings, role ids, secret ids (plain or wrapped)",
    "ecies": "ECIES with a key (raw bytes streamed), to a public key, data keys, rewrap",
    "aez": "AEZ with a key (raw bytes streamed), data keys, rewrap",
    "aead": "AES-GCM and ChaCha20-Poly1305 with a key (raw bytes streamed), data keys, rewrap",
    "hpke": "HPKE (RFC 9180) with a key (raw bytes streamed), to a public key",
    "rsa": "RSA-OAEP encryption with a key",
    "jwt": "JSON Web Tokens signed with a key (their key set: keys jwks)",
    "fe": "functional encryption: functional keys, ciphertexts, decryption, released functions",
    "audit": "the service's audit trail",
    "sys": "the service itself: keyring, wrapping key, readiness, unwrapping",
}


def command(words: str, help: str, *arguments: Arg) -> Callable[[Run], Run]:
    """Register the decorated function as the command `words` (e.g. "keys create")."""

    def register(run: Run) -> Run:
        description = (run.__doc__ or help).strip()
        COMMANDS.append(Command(tuple(words.split()), help, arguments, run, description))
        return run

    return register


# Argument types: a wrong value is a usage error named by argparse.


def base64_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not base64: {text!r}") from None


def integers(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not integers separated by commas: {text!r}") from None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text[:16]} is past the largest float")
    return number


def json_value(text: str) -> Any:
    """Strict JSON, as the service reads it: no NaN or Infinity, no number past a float."""
    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise argparse.ArgumentTypeError("not JSON: nested too deeply") from None
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error}): {text[:64]!r}") from None


def json_object(text: str) -> dict[str, Any]:
    value = json_value(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text[:64]!r}")
    return value


def words(text: str) -> list[str]:
    return [word for word in text.split(",") if word]


# Arguments many commands share.

NAME = arg("name", metavar="NAME", help="the key's name", complete=KEY_NAMES)
KEY_VERSION = arg("--key-version", type=int, metavar="N", help="this key version, not the latest")
IN = arg("--in", dest="source", metavar="FILE", help="read FILE (default: stdin)")
OUT = arg("--out", dest="sink", metavar="FILE", help="write FILE (default: stdout)")
NO_ENVELOPE = arg(
    "--no-envelope",
    dest="envelope",
    action="store_false",
    default=None,
    help="leave out the cipherd:v<N>: prefix that names the key version",
)
ECIES_OPTIONS = (
    arg(
        "--symmetric-algorithm",
        choices=("aes-256-gcm", "xchacha20"),
        help="the payload's cipher (default aes-256-gcm)",
    ),
    arg("--symmetric-nonce-length", type=int, choices=(12, 16), help="AES-GCM's (default 16)"),
    arg(
        "--compressed-ephemeral-key",
        action="store_true",
        default=None,
        help="secp256k1: a 33-byte ephemeral key (eciespy's option)",
    ),
    arg(
        "--compressed-hkdf-key",
        action="store_true",
        default=None,
        help="secp256k1: HKDF over compressed points (eciespy's option)",
    ),
)
AEZ_OPTIONS = (
    arg("--nonce", type=base64_bytes, metavar="B64", help="the nonce, base64"),
    arg(
        "--ad",
        type=base64_bytes,
        action="append",
        metavar="B64",
        help="associated data, base64; repeat for a vector",
    ),
    arg("--tau", type=int, metavar="BYTES", help="bytes of expansion (default 16)"),
)
CONTEXT = arg("--context", type=base64_bytes, metavar="B64", help="a derived key's context, base64")
AEAD_OPTIONS = (
    arg(
        "--associated-data",
        type=base64_bytes,
        metavar="B64",
        help="authenticated, not encrypted, base64",
    ),
    CONTEXT,
)
HPKE_OPTIONS = (
    arg("--info", type=base64_bytes, metavar="B64", help="RFC 9180's info, base64"),
    arg("--aad", type=base64_bytes, metavar="B64", help="associated data, base64"),
)
SIGN_OPTIONS = (
    arg(
        "--hash",
        choices=("sha256", "sha384", "sha512", "keccak256"),
        help="ECDSA and RSA: the message's hash (keccak256: ecdsa-secp256k1 only)",
    ),
    arg(
        "--prehashed",
        action="store_true",
        default=None,
        help="ECDSA and RSA: the message is the hash's digest",
    ),
    arg(
        "--format",
        choices=("der", "compact", "recoverable"),
        help="ECDSA's encoding (recoverable: ecdsa-secp256k1 only)",
    ),
    arg("--padding", choices=("pss", "pkcs1v15"), help="RSA: default pss"),
    arg(
        "--mu",
        action="store_true",
        default=None,
        help="ML-DSA: the message is FIPS 204's 64-byte mu",
    ),
)
SIGNING_TYPES = get_args(SigningType)


def options(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The arguments `names` as keyword arguments of an SDK call."""
    return {name: getattr(args, name) for name in names}


def values(args: argparse.Namespace, arguments: Sequence[Arg]) -> dict[str, Any]:
    """The declared `arguments` as keyword arguments of an SDK call (named as their dest)."""
    return options(args, *(dest(argument) for argument in arguments))


def dest(argument: Arg) -> str:
    """The attribute argparse gives an argument: its `dest`, or its first long flag's name."""
    name: str = argument.options.get("dest") or argument.flags[0].lstrip("-")
    return name.replace("-", "_")


# Files: what a command reads, and what it writes (whole, or not at all).


@contextmanager
def source(path: str | None) -> Iterator[IO[bytes]]:
    if path is None or path == "-":
        yield sys.stdin.buffer
        return
    try:
        file = open(path, "rb")  # noqa: SIM115 (closed below, after the caller's work)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    with file:
        yield file


def read_all(path: str | None) -> bytes:
    with source(path) as file:
        return file.read()


@contextmanager
def sink(path: str | None) -> Iterator[IO[bytes]]:
    """stdout, or a new file that replaces `path` only once everything is written: a failed
    request leaves no half-written file (and no file at all where there was none)."""
    if path is None or path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".cipherd-")
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None
    try:
        with open(handle, "wb") as file:
            yield file
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write(path: str | None, data: bytes) -> None:
    with sink(path) as file:
        file.write(data)


def stream(
    args: argparse.Namespace,
    label: str,
    send: Callable[[IO[bytes], IO[bytes], Progress | None], Any],
) -> None:
    """A raw-form call from `--in` (stdin) to `--out` (stdout), with a progress bar."""
    with (
        source(args.source) as data,
        sink(args.sink) as out,
        progress_bar(label, content_length(data) if data.seekable() else None) as progress,
    ):
        send(data, out, progress)


def binary(args: argparse.Namespace, data: bytes, answer: Any) -> Any:
    """Bytes to `--out` if given (and nothing printed), else `answer` printed."""
    if args.sink is None:
        return answer
    write(args.sink, data)
    return None
