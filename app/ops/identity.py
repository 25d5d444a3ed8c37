"""Identities and the tokens issued to them: the one way every token comes to be.

A login method (AppRole, JWT/OIDC, certificates) proves who is calling and calls
`app.ops.role_tokens.role_token` with the `Identity` it established and the role it matched,
which calls `issue_login_token`; the token API makes tokens through `mint` too. `vault_auth`
is the `auth` block of Vault's answer to either.
"""

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.ops.admin_token import ADMIN_TOKEN_PREFIX
from app.ops.auth_mounts import BUILT_IN
from app.ops.errors import Problem, forbidden, invalid_input
from app.ops.grants import DEFAULT_POLICY, ROOT_POLICY, check_pattern_count, compile_policy
from app.ops.token_values import TOKEN_ID_PATTERN, TOKEN_PREFIX, hash_token, new_token
from app.ops.wrapping import WRAP_TOKEN_PREFIX
from app.store import KeyStore, ParentTokenNotFoundError, TokenExistsError, TokenRecord

# A policy name, as Vault allows them (and no '/', which would not fit in a path).
POLICY_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$"
_POLICY_NAME = re.compile(POLICY_NAME)
MAX_POLICIES = 64
MAX_METADATA = 64
# A token value its maker chooses: visible ASCII, as it travels in a header.
CHOSEN_TOKEN = re.compile(r"[!-~]{1,256}")


@dataclass(frozen=True)
class Identity:
    """Who a token is issued to: the login `method` (approle, jwt, cert, token), the auth
    `mount` path it came by, the `role` it matched, and `name`, the identity's stable name
    (`approle:<role>`, `jwt:<sub or user claim>`, `cert:<subject>`): what the audit trail
    names for every request made with the token."""

    method: str
    mount: str
    role: str
    name: str


@dataclass(frozen=True)
class TokenLimits:
    """The service's bounds on a token's life (`CIPHERD_TOKEN_DEFAULT_TTL_SECONDS`,
    `CIPHERD_TOKEN_MAX_TTL_SECONDS`); a default of None: no expiry unless asked for."""

    default_ttl_seconds: float | None
    max_ttl_seconds: float


@dataclass(frozen=True)
class TokenTerms:
    """What a new token is to be: its policies, and its life. `ttl_seconds` None: the default
    TTL (no expiry for a root token); 0 for the others means the same. `max_ttl_seconds` caps
    its renewals (and its first TTL); `period_seconds` makes it periodic: each renewal gives
    it that period again, without a maximum but an explicit one. `bound_cidrs`: the addresses
    it may be used from (none: any). `value`: the token itself, chosen by its maker (None:
    drawn)."""

    policies: Sequence[str] = ()
    ttl_seconds: float | None = None
    max_ttl_seconds: float | None = None
    explicit_max_seconds: float | None = None
    period_seconds: float | None = None
    renewable: bool = True
    num_uses: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    no_default_policy: bool = False
    description: str = ""
    key_patterns: Sequence[str] = ()
    operations: Sequence[str] = ()
    rate_per_second: float | None = None
    bound_cidrs: Sequence[str] = ()
    value: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class IssuedToken:
    """A token just made: the token itself (shown once) and what the store keeps of it."""

    token: str = field(repr=False)
    record: TokenRecord


def checked_policy_name(name: str) -> str:
    """`name`, if a policy may be named so (400 otherwise)."""
    if not _POLICY_NAME.fullmatch(name):
        raise invalid_input(f"policy name {name[:64]!r}: letters, digits, '_', '.', '@', '-'")
    return name


def policy_names(names: Sequence[str], no_default: bool) -> tuple[str, ...]:
    """The policies a token carries: `names` checked, without duplicates, sorted, with
    `default` unless `no_default` (or the token is root)."""
    cleaned = sorted({checked_policy_name(name.strip()) for name in names if name.strip()})
    if not no_default and ROOT_POLICY not in cleaned:
        cleaned = sorted({*cleaned, DEFAULT_POLICY})
    if len(cleaned) > MAX_POLICIES:
        raise invalid_input(f"a token carries at most {MAX_POLICIES} policies")
    return tuple(cleaned)


def _check_patterns(store: KeyStore, policies: Sequence[str], inline: Sequence[str]) -> None:
    """422 if a token of these policies, as they are now, and these inline patterns would carry
    more than MAX_PATTERNS key-name patterns: refused when it is made rather than at each of its
    requests (`app.ops.auth.Authenticator` refuses one whose policies grew since)."""
    if ROOT_POLICY in policies:
        return  # root: no rules, every key
    stored = store.policies.get_many(policies)
    carried = len(inline) + sum(compile_policy(record.document).patterns for record in stored)
    check_pattern_count(carried, "the token and its policies", invalid_input)


def mint(
    store: KeyStore,
    limits: TokenLimits,
    identity: Identity,
    terms: TokenTerms,
    parent_id: str | None = None,
    path: str = "auth/token/create",
    mounted: str | None = None,
) -> IssuedToken:
    """Draw a token for `identity` on `terms`, a child of `parent_id` (None: an orphan), and
    store its hash. Its TTL is the terms', else the default (none for a root token), capped by
    its maximum: the terms' `max_ttl_seconds`, its explicit maximum and the service's.
    `mounted`: the auth method's path a login's token is issued by, unless built in (see
    `TokenRepository.add`)."""
    if len(terms.metadata) > MAX_METADATA:
        raise invalid_input(f"at most {MAX_METADATA} metadata entries")
    policies = policy_names(terms.policies, terms.no_default_policy)
    _check_patterns(store, policies, terms.key_patterns)
    now = store.clock.now()
    root = ROOT_POLICY in policies
    explicit = terms.explicit_max_seconds or None
    max_expires_at: float | None
    if terms.period_seconds:
        ttl: float | None = terms.period_seconds
        max_expires_at = None if explicit is None else now + explicit
    else:
        ttl = terms.ttl_seconds or (None if root else limits.default_ttl_seconds)
        if ttl is None and explicit is None:
            max_expires_at = None  # a root token without a life: it never expires
        else:
            caps = (terms.max_ttl_seconds or None, explicit, limits.max_ttl_seconds)
            max_expires_at = now + min(cap for cap in caps if cap is not None)
            ttl = ttl or max_expires_at - now
    expires_at = None if ttl is None else now + ttl
    if expires_at is not None and max_expires_at is not None:
        expires_at = min(expires_at, max_expires_at)
    token_id, token = new_token()
    if terms.value is not None:
        token = chosen_token(terms.value)
    record = TokenRecord(
        id=token_id,
        token_hash=hash_token(token),
        description=terms.description,
        key_patterns=tuple(terms.key_patterns),
        operations=tuple(sorted(set(terms.operations))),
        created_at=now,
        expires_at=expires_at,
        rate_per_second=terms.rate_per_second,
        policies=policies,
        parent_id=parent_id,
        ttl_seconds=None if expires_at is None else expires_at - now,
        explicit_max_seconds=terms.explicit_max_seconds or None,
        max_expires_at=max_expires_at,
        period_seconds=terms.period_seconds or None,
        renewable=terms.renewable and expires_at is not None,
        uses_left=terms.num_uses or None,
        metadata=dict(terms.metadata),
        method=identity.method,
        mount=identity.mount,
        role=identity.role,
        identity=identity.name,
        path=path,
        bound_cidrs=tuple(terms.bound_cidrs),
    )
    try:
        store.tokens.add(record, mounted)
    except TokenExistsError:
        raise invalid_input("cannot create a token with a duplicate ID") from None
    except ParentTokenNotFoundError:
        # The maker was revoked (or expired and freed) since it was checked: as if it had been
        # before, rather than a child that its revocation, already done, would not reach.
        raise maker_gone() from None
    return IssuedToken(token, record)


def maker_gone() -> Problem:
    """What a token that is no longer stored gets when it would make another."""
    return forbidden("the token is unknown, revoked or expired")


def chosen_token(value: str) -> str:
    """A token value its maker chose, unless it could pass for one the service or Vault draws
    (Vault's 400s): one of this service's prefixes, or a '.' as Vault's have; or for a token's
    id, which paths, errors and records show (the value would be shown with them)."""
    if not CHOSEN_TOKEN.fullmatch(value):
        raise invalid_input("a custom token ID is 1 to 256 visible ASCII characters")
    if re.fullmatch(TOKEN_ID_PATTERN, value):
        raise invalid_input("custom token ID cannot have the form of an accessor")
    if "." in value:
        raise invalid_input("custom token ID cannot have a '.' in the value")
    for prefix in (TOKEN_PREFIX, ADMIN_TOKEN_PREFIX, WRAP_TOKEN_PREFIX):
        if value.startswith(prefix):
            raise invalid_input(f"custom token ID cannot have the {prefix!r} prefix")
    return value


def _login_policies(terms: TokenTerms) -> tuple[str, ...]:
    """A login token's policies, which never hold root, whoever logs in."""
    policies = policy_names(terms.policies, terms.no_default_policy)
    if ROOT_POLICY in policies:
        raise invalid_input("a login cannot give the root policy")
    return policies


def check_login_terms(store: KeyStore, terms: TokenTerms) -> None:
    """What refuses a login's token whoever logs in (the root policy; more key-name patterns
    than a token may carry): a method checks it before it spends anything on the login (an
    AppRole secret id's use)."""
    _check_patterns(store, _login_policies(terms), terms.key_patterns)


def issue_login_token(
    store: KeyStore, limits: TokenLimits, identity: Identity, terms: TokenTerms
) -> IssuedToken:
    """The token a successful login gets, once the method has established `identity`: every
    login method comes here through `app.ops.role_tokens.role_token`, with its role's terms.

    `store`, `limits`: the service's (`services.store`, `services.token_limits`).
    `identity`: `Identity(method, mount, role, name)`, e.g. `Identity("approle", "approle",
    "ci", "approle:ci")`; `name` is what every audit record of the token's requests names.
    `terms`: the role's policies (`root` is refused: no login gives root) and TTLs; its
    description is the method's.

    The token is an orphan (no parent: revoking the login's caller is meaningless), its path
    `auth/<mount>/login`. Answer with `app.http.identity.login_answer` (Vault's `auth` block,
    and the audit record's details); a login that fails goes through
    `app.http.identity.auth_refused` (the failed-authentication throttle).
    """
    _login_policies(terms)  # `mint` counts the patterns
    terms = replace(terms, description=f"{identity.method} login")
    # A method moved or disabled while it logged this one in revokes it, or it is refused.
    mounted = None if identity.mount in BUILT_IN else identity.mount
    return mint(store, limits, identity, terms, None, f"auth/{identity.mount}/login", mounted)


def remaining_seconds(record: TokenRecord, now: float) -> int:
    """A token's TTL left, in whole seconds (0: no expiry)."""
    if record.expires_at is None:
        return 0
    return max(0, int(record.expires_at - now))


def vault_auth(issued: IssuedToken, now: float) -> dict[str, Any]:
    """The `auth` block of Vault's answer to a login or a token creation."""
    record = issued.record
    return {
        "client_token": issued.token,
        "accessor": record.id,
        "policies": list(record.policies),
        "token_policies": list(record.policies),
        "metadata": record.metadata or None,
        # The TTL just granted: the answer is made a moment after the grant, so the time left is
        # rounded up (3600, not 3599, for an hour).
        "lease_duration": 0
        if record.expires_at is None
        else max(0, math.ceil(record.expires_at - now)),
        "renewable": record.renewable,
        "entity_id": "",
        "token_type": "service",
        "orphan": record.parent_id is None,
        "mfa_requirement": None,
        "num_uses": record.uses_left or 0,
    }
