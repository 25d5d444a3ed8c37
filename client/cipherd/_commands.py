"""The client's commands: one function each, declared with its arguments (`cipherd._declare`).

Each function takes the client and the parsed arguments and returns the answer to print, None
when it wrote its output itself, or a `Verdict` whose exit status says whether a check held.
"""

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from cipherd._declare import (
    AEAD_OPTIONS,
    AEZ_OPTIONS,
    COMMANDS,
    CONTEXT,
    ECIES_OPTIONS,
    HPKE_OPTIONS,
    IN,
    KEY_TYPES,
    KEY_VERSION,
    NAME,
    NO_ENVELOPE,
    OPERATIONS,
    OUT,
    SIGN_OPTIONS,
    SIGNING_TYPES,
    Arg,
    UsageError,
    Verdict,
    arg,
    base64_bytes,
    binary,
    command,
    integers,
    json_object,
    json_value,
    options,
    read_all,
    stream,
    values,
    words,
    write,
)
from cipherd.client import Client
from cipherd.completion import KEY_NAMES
from cipherd.models import AuditFault

__all__ = ["COMMANDS"]  # filled by the declarations below

# Keys


@command(
    "keys create",
    "create a key",
    arg("name", metavar="NAME", help="the new key's name"),
    arg("type", metavar="TYPE", help=f"one of: {', '.join(KEY_TYPES)}", complete=KEY_TYPES),
    arg("--dimension", type=int, metavar="N", help="FE key types: the vector length"),
    arg("--curve", choices=("bls12-381", "bn254"), help="FE key types (default bls12-381)"),
    arg("--exportable", action="store_true", default=None, help="the admin may export it"),
    arg(
        "--allow-backup",
        action="store_true",
        default=None,
        help="the admin may back it up to another instance (at creation only)",
    ),
    arg(
        "--deletion-protection",
        action="store_true",
        default=None,
        help="deletion is refused until it is turned off",
    ),
    arg("--fe-policy", type=json_object, metavar="JSON", help="FE key types: the function policy"),
    arg(
        "--derived",
        action="store_true",
        default=None,
        help="AEAD key types: every call gives a --context the key is derived from",
    ),
    arg(
        "--convergent",
        action="store_true",
        default=None,
        help="AEAD key types, with --derived: equal inputs give equal ciphertexts",
    ),
)
def _keys_create(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.create(
        args.name,
        args.type,
        **options(
            args,
            "dimension",
            "curve",
            "exportable",
            "allow_backup",
            "deletion_protection",
            "fe_policy",
            "derived",
            "convergent",
        ),
    )


@command("keys list", "the keys the token may read")
def _keys_list(client: Client, args: argparse.Namespace) -> Any:
    return _every_page(lambda after: client.keys.list(limit=1000, after=after), "keys")


def _every_page(read: Callable[[str | None], Any], field: str) -> list[Any]:
    """The items under `field` of every page `read` answers, following each page's `next`."""
    items: list[Any] = []
    after = None
    while True:
        page = read(after)
        items.extend(getattr(page, field))
        if page.next is None:
            return items
        after = page.next


@command("keys get", "a key's metadata and versions", NAME)
def _keys_get(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.get(args.name)


@command(
    "keys update",
    "change a key's policies (the others stay)",
    NAME,
    arg(
        "--min-decryption-version", type=int, metavar="N", help="versions below N no longer decrypt"
    ),
    arg("--min-encryption-version", type=int, metavar="N", help="the oldest version to encrypt to"),
    arg("--auto-rotate-seconds", type=int, metavar="S", help="rotate when S old; 0 turns it off"),
    arg(
        "--deletion-protection",
        action=argparse.BooleanOptionalAction,
        help="refuse deletion (--no-deletion-protection allows it again)",
    ),
    arg(
        "--exportable",
        action="store_true",
        default=None,
        help="the admin may export it from now on (never undone)",
    ),
    arg("--fe-policy", type=json_object, metavar="JSON", help="FE key types: the function policy"),
    arg(
        "--enabled",
        action=argparse.BooleanOptionalAction,
        help="--no-enabled refuses every use of the key until --enabled",
    ),
)
def _keys_update(client: Client, args: argparse.Namespace) -> Any:
    names = ("min_decryption_version", "min_encryption_version", "auto_rotate_seconds")
    flags = ("deletion_protection", "exportable", "fe_policy", "enabled")
    return client.keys.update(args.name, **options(args, *names, *flags))


@command("keys rotate", "a new version of the key; older ones still decrypt", NAME)
def _keys_rotate(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.rotate(args.name)


@command("keys trim", "destroy the versions below min_decryption_version, for good", NAME)
def _keys_trim(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.trim(args.name)


@command(
    "keys delete",
    "schedule the key's deletion (`keys restore` takes it back until then)",
    NAME,
    arg(
        "--window-seconds", type=int, metavar="S", help="delete S from now (default: the service's)"
    ),
)
def _keys_delete(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.delete(args.name, window_seconds=args.window_seconds)


@command("keys restore", "cancel the key's scheduled deletion", NAME)
def _keys_restore(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.restore(args.name)


VERSION = arg("--version", type=int, metavar="N", help="this version (default: the latest)")


@command(
    "keys public",
    "the public part of a key version",
    NAME,
    VERSION,
    arg(
        "--format",
        choices=("raw", "der", "pem", "jwk"),
        help="der: SubjectPublicKeyInfo; default raw (der for RSA)",
    ),
)
def _keys_public(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.public(args.name, version=args.version, format=args.format)


@command("keys jwks", "the JSON Web Key Set of a signing key's live versions", NAME)
def _keys_jwks(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.jwks(args.name)


@command("keys export", "the secret of an exportable key version", NAME, VERSION)
def _keys_export(client: Client, args: argparse.Namespace) -> Any:
    return client.keys.export(args.name, version=args.version)


@command(
    "keys backup",
    "a key created with --allow-backup, for another instance",
    NAME,
    arg(
        "--wrapping-key",
        type=base64_bytes,
        required=True,
        metavar="B64",
        help="the other instance's (`cipherd sys wrapping-key` there)",
    ),
    arg("--out", dest="sink", metavar="FILE", help="write the backup's bytes here"),
)
def _keys_backup(client: Client, args: argparse.Namespace) -> Any:
    """The key, every version and policy, encrypted to the wrapping key of the instance that
    will import it: JSON with the backup in base64, or its bytes in --out's file."""
    backup = client.keys.backup(args.name, args.wrapping_key)
    return binary(args, backup, {"backup": backup})


@command(
    "keys import",
    "a backup from another instance, or key material made elsewhere (--type)",
    arg("file", metavar="FILE", help="the backup (from `keys backup --out`), or - for stdin"),
    arg("--name", help="the key's name here (a backup's own by default)"),
    arg(
        "--type",
        metavar="TYPE",
        complete=KEY_TYPES,
        help="FILE is key material of this type, ECIES-encrypted to this instance's wrapping key "
        "(`cipherd sys wrapping-key`): a new key, or a new version of --name",
    ),
    arg(
        "--derived",
        action="store_true",
        default=None,
        help="with --type, an AEAD key: every call gives a --context the key is derived from",
    ),
    arg(
        "--convergent",
        action="store_true",
        default=None,
        help="with --type and --derived: equal inputs give equal ciphertexts",
    ),
)
def _keys_import(client: Client, args: argparse.Namespace) -> Any:
    data = read_all(args.file)
    if args.type is None:
        if args.derived or args.convergent:
            raise UsageError("keys import --derived and --convergent go with --type")
        return client.keys.import_backup(data, name=args.name)
    if args.name is None:
        raise UsageError("keys import --type needs --name")
    derivation = options(args, "derived", "convergent")
    return client.keys.import_material(args.name, args.type, data, **derivation)


# Tokens


@command(
    "tokens create",
    "a token: named policies and/or a scope; its secret is shown only now",
    arg("--keys", type=words, metavar="PATTERNS", help="key names, e.g. 'orders-*,b'"),
    arg(
        "--operations",
        type=words,
        metavar="OPERATIONS",
        help=f"comma-separated, of: {', '.join(OPERATIONS)}",
        complete=OPERATIONS,
    ),
    arg("--policies", type=words, metavar="NAMES", help="comma-separated policy names"),
    arg("--description"),
    arg("--ttl", type=int, metavar="S", help="lifetime in seconds (default: no end)"),
    arg("--max-ttl", type=int, metavar="S", help="no renewal past this, from its creation"),
    arg("--period", type=int, metavar="S", help="periodic: each renewal gives it this again"),
    arg("--uses", type=int, metavar="N", help="requests it may make, then it is revoked"),
    arg("--orphan", action="store_true", default=None, help="not revoked with its maker"),
    arg("--rate", type=float, metavar="R", help="requests a second on each worker process"),
)
def _tokens_create(client: Client, args: argparse.Namespace) -> Any:
    return client.tokens.create(
        args.keys or (),
        args.operations or (),
        policies=args.policies or (),
        description=args.description,
        ttl_seconds=args.ttl,
        max_ttl_seconds=args.max_ttl,
        period_seconds=args.period,
        num_uses=args.uses,
        orphan=args.orphan,
        rate_per_second=args.rate,
    )


@command(
    "login jwt",
    "a token for a JWT its issuer signed, with a JWT role's policies (prints the token)",
    arg("role", metavar="ROLE", help="the role of the JWT auth mount"),
    arg(
        "--jwt-file",
        dest="source",
        metavar="FILE",
        help="read the JWT from FILE, e.g. a Kubernetes service account's token (default: stdin)",
    ),
    arg("--mount", default="jwt", metavar="PATH", help="the JWT auth mount (default jwt)"),
)
def _login_jwt(client: Client, args: argparse.Namespace) -> Any:
    jwt = read_all(args.source).decode("ascii", errors="replace").strip()
    return client.auth.jwt_login(args.role, jwt, mount=args.mount)


@command(
    "login cert",
    "a token for this client's TLS certificate (CIPHERD_CLIENT_CERT_FILE and "
    "CIPHERD_CLIENT_KEY_FILE), with a certificate rule's policies (prints the token)",
    arg("--name", metavar="RULE", help="the rule to log in to (default: any that trusts it)"),
    arg(
        "--mount", default="cert", metavar="PATH", help="the certificate auth mount (default cert)"
    ),
)
def _login_cert(client: Client, args: argparse.Namespace) -> Any:
    return client.auth.cert_login(args.name, mount=args.mount)


@command("tokens list", "the tokens issued, without their secrets")
def _tokens_list(client: Client, args: argparse.Namespace) -> Any:
    return _every_page(lambda after: client.tokens.list(limit=1000, after=after), "tokens")


@command("tokens revoke", "revoke a token", arg("id", metavar="ID", help="the token's id"))
def _tokens_revoke(client: Client, args: argparse.Namespace) -> Any:
    client.tokens.revoke(args.id)


@command("tokens lookup", "a token, by its id", arg("id", metavar="ID", help="the token's id"))
def _tokens_lookup(client: Client, args: argparse.Namespace) -> Any:
    return client.tokens.lookup(args.id)


@command("tokens self", "the token this command uses")
def _tokens_self(client: Client, args: argparse.Namespace) -> Any:
    return client.tokens.lookup_self()


@command(
    "tokens renew-self",
    "renew the token this command uses",
    arg("--increment", type=int, metavar="S", help="seconds from now (default: its TTL)"),
)
def _tokens_renew_self(client: Client, args: argparse.Namespace) -> Any:
    return client.tokens.renew_self(args.increment)


@command("tokens revoke-self", "revoke the token this command uses, and its children")
def _tokens_revoke_self(client: Client, args: argparse.Namespace) -> Any:
    client.tokens.revoke_self()


# Named policies


def _rule(text: str) -> dict[str, list[str]]:
    """A rule as the command line writes one: `PATTERNS:OPERATIONS`, each comma-separated."""
    patterns, _, operations = text.partition(":")
    if not patterns or not operations:
        raise argparse.ArgumentTypeError(f"{text!r}: write PATTERNS:OPERATIONS, e.g. 'a-*:encrypt'")
    return {"keys": words(patterns), "operations": words(operations)}


@command(
    "policies put",
    "create or replace a policy: its tokens follow the change from their next request",
    arg("name", metavar="NAME"),
    arg(
        "--rule",
        type=_rule,
        action="append",
        default=[],
        metavar="PATTERNS:OPERATIONS",
        help="e.g. 'orders-*:encrypt,decrypt'; repeat for more",
    ),
    arg("--admin", type=words, metavar="OPERATIONS", help="tokens, policies, auth, audit, ..."),
    arg("--description"),
)
def _policies_put(client: Client, args: argparse.Namespace) -> Any:
    return client.policies.put(
        args.name, args.rule, admin=args.admin or (), description=args.description
    )


@command("policies get", "a policy", arg("name", metavar="NAME"))
def _policies_get(client: Client, args: argparse.Namespace) -> Any:
    return client.policies.get(args.name)


@command("policies list", "the policies' names")
def _policies_list(client: Client, args: argparse.Namespace) -> Any:
    return client.policies.list()


@command("policies delete", "delete a policy", arg("name", metavar="NAME"))
def _policies_delete(client: Client, args: argparse.Namespace) -> Any:
    client.policies.delete(args.name)


# Response wrapping


# AppRole and response wrapping

MOUNT = arg(
    "--mount", default="approle", metavar="PATH", help="the AppRole mount (default approle)"
)
ROLE = arg("role", metavar="ROLE", help="the AppRole role's name")


@command(
    "login approle",
    "a token for an AppRole role id and secret id (its secret shown only now)",
    arg("--role-id", required=True, metavar="ID", help="the role's role id"),
    arg(
        "--secret-id-file",
        metavar="FILE",
        help="read the secret id from FILE (default: stdin); never on the command line",
    ),
    MOUNT,
)
def _login_approle(client: Client, args: argparse.Namespace) -> Any:
    secret_id = read_all(args.secret_id_file).decode().strip()
    return client.auth.approle_login(args.role_id, secret_id, mount=args.mount)


ROLE_SETTINGS = (
    arg("--policies", type=words, metavar="NAMES", help="the tokens' policies, comma-separated"),
    arg("--token-ttl", type=int, metavar="S", help="the tokens' TTL in seconds"),
    arg("--token-max-ttl", type=int, metavar="S", help="the tokens' longest life in seconds"),
    arg("--token-num-uses", type=int, metavar="N", help="requests a token may make (0: any)"),
    arg("--secret-id-ttl", type=int, metavar="S", help="a secret id's TTL in seconds (0: none)"),
    arg("--secret-id-num-uses", type=int, metavar="N", help="logins a secret id allows (0: any)"),
    arg(
        "--secret-id-bound-cidrs",
        type=words,
        metavar="CIDRS",
        help="the addresses logins may come from, comma-separated",
    ),
)


@command(
    "approle write",
    "create an AppRole role, or change the settings given",
    ROLE,
    *ROLE_SETTINGS,
    MOUNT,
)
def _approle_write(client: Client, args: argparse.Namespace) -> Any:
    client.approle.write_role(args.role, mount=args.mount, **values(args, ROLE_SETTINGS))


@command("approle read", "an AppRole role's settings", ROLE, MOUNT)
def _approle_read(client: Client, args: argparse.Namespace) -> Any:
    return client.approle.read_role(args.role, mount=args.mount)


@command("approle list", "the AppRole roles of the mount", MOUNT)
def _approle_list(client: Client, args: argparse.Namespace) -> Any:
    return client.approle.list_roles(mount=args.mount)


@command("approle delete", "delete an AppRole role and its secret ids", ROLE, MOUNT)
def _approle_delete(client: Client, args: argparse.Namespace) -> Any:
    client.approle.delete_role(args.role, mount=args.mount)


@command("approle role-id", "an AppRole role's role id", ROLE, MOUNT)
def _approle_role_id(client: Client, args: argparse.Namespace) -> Any:
    return {"role_id": client.approle.role_id(args.role, mount=args.mount)}


SECRET_ID_OPTIONS = (
    arg("--metadata", type=json_object, metavar="JSON", help="an object of strings"),
    arg("--cidr-list", type=words, metavar="CIDRS", help="where it may log in from"),
    arg("--ttl", type=int, metavar="S", help="its TTL in seconds (default: the role's)"),
    arg("--num-uses", type=int, metavar="N", help="logins it allows (default: the role's)"),
)


@command(
    "approle secret-id",
    "a new secret id of an AppRole role (shown only now), or with --wrap-ttl a wrapping token "
    "that gives it once",
    ROLE,
    *SECRET_ID_OPTIONS,
    arg("--wrap-ttl", type=int, metavar="S", help="wrap it for S seconds"),
    MOUNT,
)
def _approle_secret_id(client: Client, args: argparse.Namespace) -> Any:
    chosen = values(args, SECRET_ID_OPTIONS)
    if args.wrap_ttl:
        return client.approle.wrapped_secret_id(
            args.role, args.wrap_ttl, mount=args.mount, **chosen
        )
    return client.approle.secret_id(args.role, mount=args.mount, **chosen)


@command(
    "sys unwrap",
    "the answer a wrapping token wraps, once",
    arg(
        "--wrapping-token-file",
        dest="wrapping_file",
        metavar="FILE",
        help="read the wrapping token from FILE (default: stdin)",
    ),
)
def _sys_unwrap(client: Client, args: argparse.Namespace) -> Any:
    return client.sys.unwrap(read_all(args.wrapping_file).decode().strip())


# ECIES and AEZ: the same commands, each family with its own options.

DATAKEY = (
    arg("--bytes", dest="size", type=int, metavar="N", help="the data key's length (default 32)"),
    arg(
        "--no-plaintext",
        dest="plaintext",
        action="store_false",
        default=None,
        help="only the encrypted data key",
    ),
)


def _payload_commands(
    family: str, extra: tuple[Arg, ...], datakey_options: tuple[Arg, ...] | None = ()
) -> None:
    """encrypt and decrypt (streamed), datakey and rewrap with a key of `family` (the SDK's
    family of that name), each taking the family's options `extra` (datakey those of
    `datakey_options`; None: the family has no datakey and rewrap)."""

    def calls(client: Client) -> Any:
        return getattr(client, family)

    @command(
        f"{family} encrypt",
        "encrypt --in (stdin) into --out (stdout) with a key",
        *(NAME, IN, OUT, KEY_VERSION, NO_ENVELOPE, *extra),
    )
    def encrypt(client: Client, args: argparse.Namespace) -> None:
        chosen = values(args, (KEY_VERSION, NO_ENVELOPE, *extra))
        stream(
            args,
            "encrypt",
            lambda data, out, progress: calls(client).encrypt_stream(
                args.name, data, out, progress=progress, **chosen
            ),
        )

    @command(
        f"{family} decrypt",
        "decrypt --in (stdin) into --out (stdout) with a key",
        *(NAME, IN, OUT, KEY_VERSION, *extra),
    )
    def decrypt(client: Client, args: argparse.Namespace) -> None:
        chosen = values(args, (KEY_VERSION, *extra))
        stream(
            args,
            "decrypt",
            lambda data, out, progress: calls(client).decrypt_stream(
                args.name, data, out, progress=progress, **chosen
            ),
        )

    if datakey_options is None:
        return
    datakey_arguments = (*DATAKEY, *datakey_options)

    @command(
        f"{family} datakey",
        "a fresh data key and its encryption under the key, with what its decryption takes",
        *(NAME, *datakey_arguments),
    )
    def datakey(client: Client, args: argparse.Namespace) -> Any:
        return calls(client).datakey(args.name, **values(args, datakey_arguments))

    @command(
        f"{family} rewrap",
        "re-encrypt a ciphertext (--in, stdin) under the key's latest version (--out, stdout)",
        *(NAME, IN, OUT, KEY_VERSION, NO_ENVELOPE, *extra),
    )
    def rewrap(client: Client, args: argparse.Namespace) -> None:
        chosen = values(args, (KEY_VERSION, NO_ENVELOPE, *extra))
        moved = calls(client).rewrap(args.name, read_all(args.source), **chosen)
        write(args.sink, moved.ciphertext)


_payload_commands("ecies", ECIES_OPTIONS)
_payload_commands("aez", AEZ_OPTIONS)
_payload_commands("aead", AEAD_OPTIONS, AEAD_OPTIONS)
_payload_commands("hpke", HPKE_OPTIONS, None)
_payload_commands("rsa", (), None)


@command(
    "hpke encrypt-to-public-key",
    "encrypt --in (stdin) into --out (stdout) to an HPKE public key, no stored key",
    arg("--public-key", type=base64_bytes, required=True, metavar="B64", help="the receiver's"),
    arg(
        "--type",
        choices=("hpke-x25519", "hpke-mlkem768-x25519"),
        required=True,
        help="the receiver's key type",
    ),
    arg("--format", choices=("raw", "der"), help="--public-key's encoding (default raw)"),
    IN,
    OUT,
    *HPKE_OPTIONS,
)
def _hpke_encrypt_to_public_key(client: Client, args: argparse.Namespace) -> Any:
    sealed = client.hpke.encrypt_to_public_key(
        args.type,
        args.public_key,
        read_all(args.source),
        format=args.format,
        **values(args, HPKE_OPTIONS),
    )
    write(args.sink, sealed)


@command(
    "ecies encrypt-to-public-key",
    "encrypt --in (stdin) into --out (stdout) to a public key, no stored key",
    arg("--public-key", type=base64_bytes, required=True, metavar="B64", help="the receiver's"),
    arg("--curve", choices=("secp256k1", "x25519", "ed25519"), help="default secp256k1"),
    IN,
    OUT,
    *ECIES_OPTIONS,
)
def _ecies_encrypt_to_public_key(client: Client, args: argparse.Namespace) -> Any:
    sealed = client.ecies.encrypt_to_public_key(
        args.public_key, read_all(args.source), curve=args.curve, **values(args, ECIES_OPTIONS)
    )
    write(args.sink, sealed)


# Signatures and HMAC: on the message of --in, else of stdin.

MESSAGE = arg("--in", dest="source", metavar="FILE", help="the message (default: stdin)")


ENVELOPE = arg(
    "--envelope",
    action=argparse.BooleanOptionalAction,
    default=None,
    help="the signature in the envelope that names its key version (default: all types but "
    "ecdsa-secp256k1 and ed25519)",
)


@command("sign", "sign a message with a key", NAME, MESSAGE, *SIGN_OPTIONS, CONTEXT, ENVELOPE)
def _sign(client: Client, args: argparse.Namespace) -> Any:
    chosen = values(args, (*SIGN_OPTIONS, CONTEXT, ENVELOPE))
    return client.signatures.sign(args.name, read_all(args.source), **chosen)


@command(
    "jwt sign",
    "a JWT of the claims, signed with a key (prints jwt and key_version)",
    NAME,
    arg("--claims", type=json_object, required=True, metavar="JSON", help='e.g. {"sub": "alice"}'),
    arg("--header", type=json_object, metavar="JSON", help="fields added to the token's header"),
    arg("--alg", metavar="ALG", help="the key's algorithm (RSA: PS256, the default, ... RS512)"),
)
def _jwt_sign(client: Client, args: argparse.Namespace) -> Any:
    return client.jwt.sign(args.name, args.claims, header=args.header, alg=args.alg)


@command(
    "verify",
    "check a signature; exit status 1 when it is not valid",
    arg("name", nargs="?", metavar="NAME", help="the key (or --public-key)", complete=KEY_NAMES),
    MESSAGE,
    arg("--signature", type=base64_bytes, required=True, metavar="B64"),
    arg("--public-key", type=base64_bytes, metavar="B64", help="a public key instead of NAME"),
    arg("--type", choices=SIGNING_TYPES, help="--public-key's type"),
    KEY_VERSION,
    *SIGN_OPTIONS,
    CONTEXT,
)
def _verify(client: Client, args: argparse.Namespace) -> Any:
    message = read_all(args.source)
    if (args.name is None) == (args.public_key is None):
        raise UsageError("verify takes a key NAME or --public-key (with --type), not both")
    if args.public_key is not None:
        if args.type is None:
            raise UsageError("verify --public-key needs --type")
        if args.context is not None:
            raise UsageError("verify --context is a derived key NAME's, not a --public-key's")
        valid = client.signatures.verify_with_public_key(
            args.type, args.public_key, message, args.signature, **values(args, SIGN_OPTIONS)
        )
    else:
        valid = client.signatures.verify(
            args.name,
            message,
            args.signature,
            key_version=args.key_version,
            **values(args, (*SIGN_OPTIONS, CONTEXT)),
        )
    return Verdict({"valid": valid}, valid, "the signature is not valid")


@command(
    "hmac",
    "the HMAC of a message, or with --verify its check (exit status 1 when it fails)",
    NAME,
    MESSAGE,
    arg("--algorithm", choices=("sha256", "sha384", "sha512"), help="default sha256"),
    arg("--verify", type=base64_bytes, metavar="HMAC", help="check this HMAC (base64)"),
    KEY_VERSION,
)
def _hmac(client: Client, args: argparse.Namespace) -> Any:
    message = read_all(args.source)
    if args.verify is None:
        return client.hmac.compute(args.name, message, algorithm=args.algorithm)
    valid = client.hmac.verify(
        args.name, message, args.verify, algorithm=args.algorithm, key_version=args.key_version
    )
    return Verdict({"valid": valid}, valid, "the HMAC does not match")


# Functional encryption


@command(
    "fe keygen",
    "a functional key for a vector y, or for a matrix f (quadratic key types)",
    NAME,
    arg("--y", type=integers, metavar="INTS", help="the function vector, e.g. 1,2,3"),
    arg("--f", type=json_value, metavar="JSON", help="the matrix, row by row: [[1,2],[3,4]]"),
    KEY_VERSION,
)
def _fe_keygen(client: Client, args: argparse.Namespace) -> Any:
    return client.fe.keygen(args.name, args.y, f=args.f, key_version=args.key_version)


@command(
    "fe encrypt",
    "a ciphertext of x (and y, quadratic key types)",
    NAME,
    arg("--x", type=integers, required=True, metavar="INTS", help="e.g. 4,5,6"),
    arg("--y", type=integers, metavar="INTS", help="quadratic key types: the second vector"),
    KEY_VERSION,
)
def _fe_encrypt(client: Client, args: argparse.Namespace) -> Any:
    return client.fe.encrypt(args.name, args.x, y=args.y, key_version=args.key_version)


@command(
    "fe decrypt",
    "the function's value on a ciphertext, searched in --bounds (null outside them)",
    NAME,
    arg("--functional-key", type=base64_bytes, required=True, metavar="B64"),
    arg("--ciphertext", type=base64_bytes, required=True, metavar="B64"),
    arg("--bounds", type=integers, required=True, metavar="LO,HI"),
    KEY_VERSION,
)
def _fe_decrypt(client: Client, args: argparse.Namespace) -> Any:
    if len(args.bounds) != 2:
        raise UsageError(f"--bounds: two integers LO,HI, not {len(args.bounds)}")
    result = client.fe.decrypt(
        args.name, args.functional_key, args.ciphertext, args.bounds, key_version=args.key_version
    )
    return {"result": result}


@command("fe functions", "the functions released under a key version, and its budget", NAME)
def _fe_functions(client: Client, args: argparse.Namespace) -> Any:
    page = client.fe.functions(args.name, limit=1000)
    functions = list(page.functions)
    while page.next is not None:  # the same version's, should the key rotate meanwhile
        version, after = page.key_version, page.next
        page = client.fe.functions(args.name, key_version=version, limit=1000, after=after)
        functions.extend(page.functions)
    return dataclasses.replace(page, functions=functions)


# The service


@command(
    "random",
    "random bytes from the service",
    arg("bytes", type=int, metavar="N", help="how many"),
    arg("--out", dest="sink", metavar="FILE", help="write the bytes here (else JSON, base64)"),
)
def _random(client: Client, args: argparse.Namespace) -> Any:
    data = client.sys.random(args.bytes)
    return binary(args, data, {"random": data})


@command(
    "audit list",
    "audit records, oldest first, one page",
    arg("--key", complete=KEY_NAMES),
    arg("--principal", help="admin, or a token's id"),
    arg("--operation", help="e.g. ecies_encrypt, keys_create_key"),
    arg("--outcome", help="success, failure, or a status such as 403"),
    arg("--since", metavar="TIME", help="ISO 8601"),
    arg("--until", metavar="TIME", help="ISO 8601"),
    arg("--limit", type=int, metavar="N", help="records in the page (default: the service's)"),
    arg("--after", metavar="CURSOR", help="the previous page's `next`"),
)
def _audit_list(client: Client, args: argparse.Namespace) -> Any:
    names = ("key", "principal", "operation", "outcome", "since", "until", "limit", "after")
    page = client.audit.list(**options(args, *names))
    if args.output == "json":
        return page
    if page.next is not None:
        print(f"more: cipherd audit list --after {page.next}", file=sys.stderr)
    return page.records


@command("audit verify", "check every chain of the trail against itself and its latest anchor")
def _audit_verify(client: Client, args: argparse.Namespace) -> Any:
    verification = client.audit.verify()
    faults = "".join(f"\n  {_place(fault)}{fault.problem}" for fault in verification.faults)
    return Verdict(verification, verification.verified, f"the audit trail does not verify:{faults}")


def _place(fault: AuditFault) -> str:
    """Where a fault is, as `cipherd local audit verify` says it: "chain C record N: "."""
    if fault.chain is None:
        return ""
    return f"chain {fault.chain}" + ("" if fault.seq is None else f" record {fault.seq}") + ": "


@command("sys keyring", "the keyring's term and the key versions still on older terms")
def _sys_keyring(client: Client, args: argparse.Namespace) -> Any:
    return client.sys.keyring()


@command("sys rotate-keyring", "a new keyring term; the service rewraps every version onto it")
def _sys_rotate_keyring(client: Client, args: argparse.Namespace) -> Any:
    return client.sys.rotate_keyring()


@command(
    "sys wrapping-key",
    "the public key backups and key material for here go to; the key signing backups made here",
)
def _sys_wrapping_key(client: Client, args: argparse.Namespace) -> Any:
    return {"public_key": client.sys.wrapping_key(), "signing_key": client.sys.signing_key()}


@command("sys ready", "whether the service is ready (its store answers)")
def _sys_ready(client: Client, args: argparse.Namespace) -> Any:
    return {"status": client.sys.ready()}
