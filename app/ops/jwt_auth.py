"""Logins with JSON Web Tokens (Vault's JWT/OIDC auth method, roles of type `jwt`): a workload
shows a token its issuer signed (a CI system's OIDC token, a Kubernetes service account's) and
gets a cipherd token with the policies of the role whose bounds the token's claims meet.

A mount's configuration names where the issuer's keys come from: PEM public keys
(`jwt_validation_pubkeys`), a JWKS URL, or an OIDC discovery URL (`app.ops.jwks`). A login checks,
in this order, before any key is fetched or any signature computed: the token's size
(`MAX_JWT_BYTES`) and its form; then its signature (joserfc) under a key the issuer published,
with an algorithm the mount allows (never `none`, never a shared secret); then `exp`, `nbf` and
`iat` against the store's clock with the role's leeways; then the issuer, the audience, the
subject and the role's bound claims (exact, or globs). The identity's stable name is
`jwt:<the user claim's value>`, and the role's `claim_mappings` copy claims into the token's
metadata. A refusal says which check failed, never the token.
"""

import base64
import fnmatch
import hashlib
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, OKPKey, RSAKey

from app.ops.errors import Problem, invalid_input
from app.ops.identity import Identity, IssuedToken, TokenLimits
from app.ops.jwks import IssuerKeys, Source
from app.ops.role_tokens import TOKEN_ALIASES, TOKEN_DEFAULTS, check_token_fields, role_token
from app.ops.vault_fields import json_document
from app.store import AuthMount, KeyStore

# A login's token is refused past this size before it is parsed (a Kubernetes service account's
# token is about 1 KiB, a CI system's about 2).
MAX_JWT_BYTES = 16 * 1024
SUPPORTED_ALGS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
# The leeways of a role that gives none (or 0), as OpenBao applies them: 60 s of clock skew
# and nothing more for `exp` and `nbf` (a token expired 65 s ago is refused there); -1 turns
# a leeway off.
DEFAULT_CLOCK_SKEW_LEEWAY = 60
DEFAULT_EXPIRATION_LEEWAY = 0
DEFAULT_NOT_BEFORE_LEEWAY = 0
MAX_PUBKEYS = 100
MAX_BOUND_VALUES = 256
# The longest user claim an identity's name holds as it is (`_identity_part`).
MAX_USER_CHARS = 256
MAX_MAPPINGS = 64
ROLE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
MAX_ROLES_PER_MOUNT = 10_000

# A mount's configuration, as Vault names its fields, with Vault's defaults.
CONFIG_DEFAULTS: dict[str, Any] = {
    "bound_issuer": "",
    "default_role": "",
    "jwks_ca_pem": "",
    "jwks_url": "",
    "jwt_supported_algs": [],
    "jwt_validation_pubkeys": [],
    "oidc_discovery_ca_pem": "",
    "oidc_discovery_url": "",
}
# A role's fields, as Vault names them, with Vault's defaults. The OIDC (browser) flow's fields
# are kept and shown as Vault does, but only `jwt` roles log in here.
ROLE_DEFAULTS: dict[str, Any] = {
    "allowed_redirect_uris": [],
    "bound_audiences": [],
    "bound_claims": {},
    "bound_claims_type": "string",
    "bound_subject": "",
    "claim_mappings": {},
    "clock_skew_leeway": 0,
    "expiration_leeway": 0,
    "groups_claim": "",
    "not_before_leeway": 0,
    "oidc_scopes": None,
    "role_type": "oidc",
    **TOKEN_DEFAULTS,
    "user_claim": "",
    "user_claim_json_pointer": False,
    "verbose_oidc_logging": False,
}
# What Vault shows beside a configuration's and a role's fields, which this service does not
# take: the OIDC browser flow's and the token options it does not make.
CONFIG_SHOWN = {
    "namespace_in_state": True,
    "oidc_client_id": "",
    "oidc_response_mode": "",
    "oidc_response_types": [],
    "override_allowed_server_names": [],
    "provider_config": {},
    "status": "valid",
}
ROLE_SHOWN = {
    "callback_mode": "client",
    "max_age": 0,
    "oauth2_metadata": None,
    "oidc_disable_confirmation": False,
    "token_policies_template_claims": False,
    "token_strictly_bind_ip": False,
}
# The fields that are lists of strings (Vault takes a comma-separated string too).
_LISTS = ("allowed_redirect_uris", "bound_audiences", "token_bound_cidrs", "token_policies")


def refused(detail: str) -> Problem:
    """A login refused (400, as Vault answers it); it counts as a failed authentication."""
    return Problem(400, "login-refused", "Login refused", detail)


def _invalid_token(reason: str) -> Problem:
    return refused(f"error validating token: {reason}")


def _pubkey(pem: str) -> Key:
    """A PEM public key as a JWK (400 for anything else)."""
    try:
        public = load_pem_public_key(pem.encode())
    except (ValueError, TypeError):
        raise invalid_input(
            "error parsing public key: data does not contain any valid public keys"
        ) from None
    if isinstance(public, rsa.RSAPublicKey):
        return RSAKey.import_key(pem)
    if isinstance(public, ec.EllipticCurvePublicKey):
        return ECKey.import_key(pem)
    if isinstance(public, ed25519.Ed25519PublicKey):
        return OKPKey.import_key(pem)
    raise invalid_input("error parsing public key: RSA, EC or Ed25519 keys only")


def config_of(changes: Mapping[str, Any], issuer_keys: IssuerKeys) -> dict[str, Any]:
    """A mount's configuration from the fields written (Vault replaces it whole), checked: one
    key source exactly, public keys that parse, algorithms this service verifies, and the JWKS or
    discovery URL answering with keys now (as Vault checks them)."""
    config = {**CONFIG_DEFAULTS, **{k: v for k, v in changes.items() if k in CONFIG_DEFAULTS}}
    sources = [f for f in ("jwt_validation_pubkeys", "jwks_url", "oidc_discovery_url") if config[f]]
    if len(sources) != 1:
        raise invalid_input(
            "exactly one of 'jwt_validation_pubkeys', 'jwks_url' or 'oidc_discovery_url' must "
            "be set"
        )
    for alg in config["jwt_supported_algs"]:
        if alg not in SUPPORTED_ALGS:
            raise invalid_input(
                f"invalid jwt_supported_algs: unsupported signing algorithm {alg[:32]!r}"
            )
    pems = config["jwt_validation_pubkeys"]
    if len(pems) > MAX_PUBKEYS:
        raise invalid_input(f"at most {MAX_PUBKEYS} jwt_validation_pubkeys")
    for pem in pems:
        _pubkey(pem)
    source = source_of(config)
    if source is not None:
        try:
            issuer_keys.load(source)
        except Problem as exc:
            field = "OIDC discovery URL" if source.discovery else "jwks URL"
            raise invalid_input(f"error checking {field}: {exc.detail}") from None
    return config


def source_of(config: Mapping[str, Any]) -> Source | None:
    """Where a configuration's keys are fetched from (None: its PEM public keys)."""
    if config["jwks_url"]:
        return Source(config["jwks_url"], config["jwks_ca_pem"])
    if config["oidc_discovery_url"]:
        return Source(config["oidc_discovery_url"], config["oidc_discovery_ca_pem"], True)
    return None


def _leeway(field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= 86400:
        raise invalid_input(f"{field}: seconds from 0 to 86400, or -1 for none")
    return value


def role_of(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A role's settings once `changes` apply to `current` (Vault updates the fields given),
    checked: 400 for a value out of bounds, or a role that binds nothing."""
    role = {**ROLE_DEFAULTS, **current}
    for field, value in changes.items():
        field = TOKEN_ALIASES.get(field, field)
        if field in ROLE_DEFAULTS and value is not None:
            role[field] = value
    for field in _LISTS:
        if isinstance(role[field], str):
            role[field] = [item.strip() for item in role[field].split(",") if item.strip()]
        if not isinstance(role[field], list) or not all(isinstance(v, str) for v in role[field]):
            raise invalid_input(f"{field}: a list of strings")
    if role["role_type"] not in ("jwt", "oidc"):
        raise invalid_input(f"invalid 'role_type': {str(role['role_type'])[:32]}")
    if role["role_type"] == "oidc":
        raise invalid_input(
            "'role_type' oidc (the browser flow) is not served: use 'jwt' roles, which log in "
            "with a token"
        )
    if role["bound_claims_type"] not in ("string", "glob"):
        raise invalid_input(f"invalid 'bound_claims_type': {str(role['bound_claims_type'])[:32]}")
    if not isinstance(role["user_claim"], str) or not role["user_claim"]:
        raise invalid_input("a user claim must be defined on the role")
    bound = role["bound_claims"]
    if not isinstance(bound, dict) or len(bound) > MAX_MAPPINGS:
        raise invalid_input(f"bound_claims: an object of at most {MAX_MAPPINGS} claims")
    for name, expected in bound.items():
        values = expected if isinstance(expected, list) else [expected]
        if len(values) > MAX_BOUND_VALUES or not all(
            isinstance(value, str | int | bool) and not isinstance(value, float) for value in values
        ):
            raise invalid_input(f"bound_claims[{name[:64]!r}]: strings, at most {MAX_BOUND_VALUES}")
    mappings = role["claim_mappings"]
    if not isinstance(mappings, dict) or len(mappings) > MAX_MAPPINGS:
        raise invalid_input(f"claim_mappings: an object of at most {MAX_MAPPINGS} claims")
    if len(set(mappings.values())) != len(mappings):
        raise invalid_input("claim_mappings: two claims map to the same metadata field")
    if "role" in mappings.values():  # a login's metadata names its role there
        raise invalid_input('metadata key "role" is reserved and may not be a mapping destination')
    if len(role["bound_audiences"]) > MAX_BOUND_VALUES:
        raise invalid_input(f"bound_audiences: at most {MAX_BOUND_VALUES}")
    if not (role["bound_audiences"] or role["bound_subject"] or role["bound_claims"]):
        raise invalid_input("must have at least one bound constraint when creating/updating a role")
    for field in ("clock_skew_leeway", "expiration_leeway", "not_before_leeway"):
        role[field] = _leeway(field, role[field])
    check_token_fields(role)
    return role


@dataclass(frozen=True)
class Verified:
    """What a login established: the user claim's value and the token's metadata."""

    user: str
    metadata: dict[str, str]


def claim(claims: Mapping[str, Any], name: str) -> Any:
    """A claim by name, or by JSON pointer (RFC 6901) when the name starts with '/':
    `/kubernetes.io/namespace` reaches a nested one."""
    if not name.startswith("/"):
        return claims.get(name)
    value: Any = claims
    for part in name[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        index = _index(part, value) if isinstance(value, list) else None
        if isinstance(value, dict):
            value = value.get(part)
        elif index is not None:
            value = value[index]
        else:
            return None
    return value


def _index(part: str, items: list[Any]) -> int | None:
    """The element an RFC 6901 array index names: ASCII digits (Python's `isdigit` takes "²",
    which `int` refuses) with no leading zero, no longer than the list's length is written
    (`int` refuses 4,301 digits); None if it names none."""
    digits = part.isascii() and part.isdigit() and (part == "0" or not part.startswith("0"))
    if not digits or len(part) > len(str(len(items))):
        return None
    index = int(part)
    return index if index < len(items) else None


def _keys(
    config: Mapping[str, Any], issuer_keys: IssuerKeys, kid: str | None
) -> tuple[list[Key], str]:
    """The keys that may have signed a token naming `kid` (all of a mount's PEM keys, which have
    no kid; those of the issuer's set that have that kid), and the issuer it must name."""
    source = source_of(config)
    if source is None:
        keys = [_pubkey(pem) for pem in config["jwt_validation_pubkeys"]]
        return keys, config["bound_issuer"]
    published, discovered = issuer_keys.keys_for(source, kid)
    candidates = [key for key in published if kid is None or key.get("kid") in (None, kid)]
    return candidates, config["bound_issuer"] or discovered or ""


def _signed_claims(
    jwt: str, config: Mapping[str, Any], issuer_keys: IssuerKeys
) -> tuple[dict[str, Any], str]:
    if len(jwt) > MAX_JWT_BYTES:
        raise _invalid_token(f"the token is over {MAX_JWT_BYTES} bytes")
    compact = "".join(jwt.split())  # as Vault's parser: `jwt=@file` sends the file's line break
    # The header first, read here: joserfc refuses to parse a token of an algorithm it lacks
    # (ML-DSA), which is rather a token of an algorithm the mount does not take.
    try:
        encoded = compact.partition(".")[0].encode("ascii")
        header = _json_object(base64.b64decode(encoded + b"=" * (-len(encoded) % 4), b"-_", True))
    except (ValueError, UnicodeError):
        raise _invalid_token("the token is not a compact JWS") from None
    algs = config["jwt_supported_algs"] or list(SUPPORTED_ALGS)
    alg, kid = header.get("alg"), header.get("kid")
    if not isinstance(alg, str) or alg not in algs:
        raise _invalid_token(f"the token's algorithm {str(alg)[:16]!r} is not one of {algs}")
    crit = header.get("crit")
    if crit is not None and not (isinstance(crit, list) and all(isinstance(c, str) for c in crit)):
        raise _invalid_token("the token's crit is not a list of names")
    try:
        token = jws.extract_compact(compact.encode("ascii"))
    except (JoseError, ValueError, UnicodeError):
        raise _invalid_token("the token is not a compact JWS") from None
    if kid is not None and not isinstance(kid, str):
        raise _invalid_token("the token's kid is not a string")
    candidates, issuer = _keys(config, issuer_keys, kid)
    for key in candidates:
        try:
            if jws.validate_compact(token, key, algorithms=[alg]):
                break
        except (JoseError, ValueError, TypeError):
            continue
    else:
        raise _invalid_token("failed to verify id token signature")
    try:
        claims = _json_object(token.payload)
    except ValueError:
        raise _invalid_token("the token's claims are not a JSON object") from None
    return claims, issuer


def _json_object(payload: bytes) -> dict[str, Any]:
    value = json_document(payload)
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value


def _leeway_seconds(value: int, default: int) -> int:
    return 0 if value < 0 else value or default


def _check_times(claims: Mapping[str, Any], role: Mapping[str, Any], now: float) -> None:
    skew = _leeway_seconds(role["clock_skew_leeway"], DEFAULT_CLOCK_SKEW_LEEWAY)
    exp_leeway = _leeway_seconds(role["expiration_leeway"], DEFAULT_EXPIRATION_LEEWAY)
    nbf_leeway = _leeway_seconds(role["not_before_leeway"], DEFAULT_NOT_BEFORE_LEEWAY)
    times = {}
    for name in ("exp", "nbf", "iat"):
        value = claims.get(name)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise _invalid_token(f"the token's {name} is not a number")
        times[name] = value
    if times["exp"] is None:
        raise _invalid_token("the token has no exp claim")
    if now > times["exp"] + skew + exp_leeway:
        raise _invalid_token("token is expired (exp)")
    if times["nbf"] is not None and now < times["nbf"] - skew - nbf_leeway:
        raise _invalid_token("token not valid yet (nbf)")
    if times["iat"] is not None and now < times["iat"] - skew:
        raise _invalid_token("token issued in the future (iat)")


def _matches(actual: Any, expected: Any, glob: bool) -> bool:
    """Whether a claim's value meets a bound: one of the expected values equals (or, for globs,
    matches) the claim, or one of the claim's values when it is a list."""
    values = actual if isinstance(actual, list) else [actual]
    wanted = expected if isinstance(expected, list) else [expected]
    for value in values:
        if isinstance(value, dict | list) or value is None:
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        for pattern in wanted:
            pattern = str(pattern).lower() if isinstance(pattern, bool) else str(pattern)
            if fnmatch.fnmatchcase(text, pattern) if glob else text == pattern:
                return True
    return False


def _check_bounds(claims: Mapping[str, Any], role: Mapping[str, Any], issuer: str) -> None:
    if issuer and claims.get("iss") != issuer:
        raise _invalid_token("the token's issuer (iss) is not the mount's bound_issuer")
    audiences = claims.get("aud")
    audiences = audiences if isinstance(audiences, list) else [audiences]
    if role["bound_audiences"] and not set(role["bound_audiences"]) & set(map(str, audiences)):
        raise _invalid_token("aud claim does not match any bound audience")
    if role["bound_subject"] and claims.get("sub") != role["bound_subject"]:
        raise _invalid_token("sub claim does not match bound subject")
    glob = role["bound_claims_type"] == "glob"
    for name, expected in role["bound_claims"].items():
        actual = claim(claims, name)
        if actual is None:
            raise _invalid_token(f"claim {name[:64]!r} is missing")
        if not _matches(actual, expected, glob):
            raise _invalid_token(
                f"claim {name[:64]!r} does not match any associated bound claim values"
            )


def verify(
    jwt: str,
    config: Mapping[str, Any],
    role: Mapping[str, Any],
    issuer_keys: IssuerKeys,
    now: float,
) -> Verified:
    """Check a login's token against a mount's configuration and a role (401 `refused`
    otherwise, or IssuerUnreachable when the keys cannot be had)."""
    claims, issuer = _signed_claims(jwt, config, issuer_keys)
    _check_times(claims, role, now)
    _check_bounds(claims, role, issuer)
    user = claim(claims, role["user_claim"])
    if isinstance(user, int | float) and not isinstance(user, bool):
        user = str(user)
    if not isinstance(user, str) or not user:
        raise _invalid_token(f"claim {role['user_claim'][:64]!r} not found in token")
    metadata = {}
    for source, target in role["claim_mappings"].items():
        value = claim(claims, source)
        if isinstance(value, str | int | float | bool):
            metadata[target] = _storable(source, str(value))
    return Verified(_identity_part(_storable(role["user_claim"], user)), metadata)


def _storable(name: str, value: str) -> str:
    """A claim's value as a token keeps it: no control characters (a NUL, which PostgreSQL
    text cannot hold; line breaks in what the audit trail names)."""
    if any(unicodedata.category(char) == "Cc" for char in value):
        raise _invalid_token(f"claim {name[:64]!r} has control characters")
    return value


def _identity_part(user: str) -> str:
    """The user claim as the identity's name holds it: whole up to MAX_USER_CHARS; a longer one
    cut, with the digest of the whole after the cut, so that two that differ past it (long CI
    subjects that share a prefix) stay two identities."""
    if len(user) <= MAX_USER_CHARS:
        return user
    digest = hashlib.sha256(user.encode()).hexdigest()
    return f"{user[: MAX_USER_CHARS - len(digest) - 1]}#{digest}"


def login(
    store: KeyStore,
    limits: TokenLimits,
    issuer_keys: IssuerKeys,
    mount: AuthMount,
    role_name: str,
    jwt: str,
) -> IssuedToken:
    """`POST auth/<mount>/login {role, jwt}`: a token for the identity `jwt:<user claim>` on
    the role's policies, once the token passes every check (400 `refused` otherwise). Without
    a role, the mount's `default_role`."""
    role_name = role_name or mount.config.get("default_role", "")
    if not role_name:
        raise refused("missing role")
    if not jwt:
        raise refused("missing token")
    role = store.auth_roles.get(mount.accessor, role_name)
    if role is None:
        raise refused(f'role "{role_name[:128]}" could not be found')
    if not mount.config:
        raise refused("could not load configuration")
    verified = verify(jwt, mount.config, role, issuer_keys, store.clock.now())
    identity = Identity("jwt", mount.path, role_name, f"jwt:{verified.user}")
    return role_token(store, limits, identity, role, {"role": role_name, **verified.metadata})
