"""Tokens' verbs: make, list, look up, renew and revoke, for the native API (`/v1/tokens`) and
Vault's (`auth/token/...`, `app.ops.vault_tokens`) alike.

A token carries named policies and an inline rule (a scoped token's key-name patterns x
operations). Making one for someone else needs the admin operation `tokens`; a token so made
is a child of the maker's (revoked with it) unless it is an orphan, and carries no policy its
maker lacks. A token may always look itself up, renew and revoke itself. Every token is drawn
by `app.ops.identity.mint` and shown once; the store keeps only its SHA-256.
"""

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
)

from app.ops.errors import Problem, forbidden, invalid_input
from app.ops.grants import DEFAULT_POLICY, AdminOperation, Operation, Principal
from app.ops.identity import (
    POLICY_NAME,
    Identity,
    IssuedToken,
    TokenLimits,
    TokenTerms,
    maker_gone,
    mint,
)
from app.ops.keys import timestamp
from app.ops.lifecycle import EXPIRED_PER_PASS
from app.ops.policies import KeyPatterns
from app.store import KeyStore, TokenRecord
from app.store.patterns import covers
from app.store.tokens import MAX_DEPTH

MAX_TTL = 10 * 365 * 86400
# The slowest rate a token may be given, one request a day: a slower one would answer its 429s
# with a Retry-After of any length (1e-300 a second: 301 digits).
MIN_RATE_PER_SECOND = 1 / 86400
# The most pattern characters x pattern characters the making of one token may compare with its
# maker's (`_scope_lacking`), a pattern counting COMPARISON_OVERHEAD more for the call it costs:
# at most some 0.2 s of `covers`.
MAX_SCOPE_COMPARISON = 2_000_000
COMPARISON_OVERHEAD = 16
Metadata = dict[Annotated[str, Field(max_length=128)], Annotated[str, Field(max_length=512)]]


# What `POST /v1/tokens` and `cipherd tokens create` take (a docstring would reach the OpenAPI
# document as the schema's description).
class TokenCreate(BaseModel):
    # Strict, as the rest of the native API: `"ttl_seconds": true` is no TTL of 1 s.
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        "", max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$", description="no control characters"
    )
    keys: KeyPatterns = Field(
        default_factory=list,
        max_length=100,
        description="glob patterns of key names, e.g. 'orders-*': with `operations`, the "
        "token's inline rule",
    )
    operations: list[Operation] = Field(default_factory=list, max_length=len(Operation))
    policies: list[Annotated[str, Field(pattern=POLICY_NAME)]] = Field(
        default_factory=list, max_length=64, description="named policies the token carries"
    )
    no_default_policy: StrictBool = Field(False, description="without the `default` policy")
    ttl_seconds: StrictInt | None = Field(None, ge=1, le=MAX_TTL, description="default: no expiry")
    max_ttl_seconds: StrictInt | None = Field(
        None, ge=1, le=MAX_TTL, description="renewals never take it past this from its creation"
    )
    period_seconds: StrictInt | None = Field(
        None, ge=1, le=MAX_TTL, description="periodic: each renewal gives it this life again"
    )
    renewable: StrictBool = True
    num_uses: StrictInt | None = Field(None, ge=1, le=1_000_000, description="default: any number")
    metadata: Metadata = Field(default_factory=dict, max_length=64)
    orphan: StrictBool = Field(False, description="not revoked with the token that made it")
    rate_per_second: StrictFloat | None = Field(
        None,
        ge=MIN_RATE_PER_SECOND,
        le=1_000_000,
        allow_inf_nan=False,
        description="requests a second the token may make on each worker process (a second's "
        "worth, at least one, at once), at least one a day; past it 429 with Retry-After; "
        "default: no limit",
    )
    aws_credentials: StrictBool = Field(
        False,
        description="also answer an AWS access key pair that signs requests to the KMS API "
        "(POST /) as this token",
    )


class TokenOut(BaseModel):
    id: str = Field(description="the token's id, also its accessor: never the token")
    description: str
    keys: list[str]
    operations: list[Operation]
    policies: list[str]
    identity: str = Field(description="whom it was issued to, e.g. approle:ci")
    method: str
    role: str
    parent: str | None
    created_at: datetime
    expires_at: datetime | None
    max_expires_at: datetime | None
    renewable: bool
    period_seconds: float | None
    uses_left: int | None
    metadata: dict[str, str]
    rate_per_second: float | None = Field(
        None, description="requests a second per worker process; null: no limit"
    )
    bound_cidrs: list[str] = Field(
        [], description="the address blocks it may be used from; empty: any"
    )


class TokenCreated(TokenOut):
    token: str = Field(description="the bearer token; shown only in this response")
    aws_access_key_id: str | None = Field(
        None, description="with aws_credentials: the access key id of the token's AWS key pair"
    )
    aws_secret_access_key: str | None = Field(
        None, description="with aws_credentials: its secret access key; shown only here"
    )


class TokenRenew(BaseModel):
    model_config = ConfigDict(extra="forbid")

    increment_seconds: int | None = Field(
        None, ge=1, le=MAX_TTL, description="the life asked for from now; default: its TTL"
    )


def _time(seconds: float | None) -> datetime | None:
    return None if seconds is None else timestamp(seconds)


def token_out(record: TokenRecord) -> TokenOut:
    return TokenOut(
        id=record.id,
        description=record.description,
        keys=list(record.key_patterns),
        operations=[Operation(op) for op in record.operations if op in set(Operation)],
        policies=list(record.policies),
        identity=record.identity,
        method=record.method,
        role=record.role,
        parent=record.parent_id,
        created_at=timestamp(record.created_at),
        expires_at=_time(record.expires_at),
        max_expires_at=_time(record.max_expires_at),
        renewable=record.renewable,
        period_seconds=record.period_seconds,
        uses_left=record.uses_left,
        metadata=record.metadata,
        rate_per_second=record.rate_per_second,
        bound_cidrs=list(record.bound_cidrs),
    )


def create(
    store: KeyStore,
    limits: TokenLimits,
    maker: Principal,
    terms: TokenTerms,
    orphan: bool,
    path: str = "auth/token/create",
) -> IssuedToken:
    """A token made by `maker` on `terms`: its child unless `orphan` (or made by the admin
    token). 403 unless the maker may make tokens, carries every policy it gives and may do
    every operation it gives on every key the given patterns match. It is bound to the terms'
    address blocks, else to the maker's: a token bound to addresses makes none that is not."""
    if not maker.may(AdminOperation.TOKENS):
        raise forbidden("making tokens needs the admin operation 'tokens'")
    if terms.value is not None and not maker.admin:
        raise invalid_input("root or sudo privileges required to specify token id")
    if not maker.admin:
        extra = policies_lacking(maker, terms.policies)
        if extra:
            raise forbidden(f"the token lacks the policies it would give: {', '.join(extra)}")
        lacking = _scope_lacking(maker, terms.key_patterns, terms.operations)
        if lacking:
            raise forbidden(f"the token lacks the scope it would give: {', '.join(lacking[:5])}")
    if not terms.policies and not terms.key_patterns:
        raise invalid_input("a token needs policies, or keys and operations")
    if bool(terms.key_patterns) != bool(terms.operations):
        raise invalid_input("keys and operations go together")
    if maker.token_id is not None:
        terms = _within_maker(store, maker.token_id, terms, orphan)
    # A token carries the identity of the chain it was made in: the admin's, or a login's.
    made_by = "token:admin" if maker.token_id is None else maker.identity
    identity = Identity("token", "token", "", made_by)
    parent = None if orphan or maker.token_id is None else maker.token_id
    if not terms.bound_cidrs and maker.bound_networks:
        terms = replace(terms, bound_cidrs=[str(network) for network in maker.bound_networks])
    return mint(store, limits, identity, terms, parent, path)


def _within_maker(store: KeyStore, maker_id: str, terms: TokenTerms, orphan: bool) -> TokenTerms:
    """The terms of a token a stored token makes, held within its maker's life: a maker with
    a use count makes none (as Vault refuses it), the token ends when the maker would (its
    explicit maximum), at its maker's rate at most, and, a child, no deeper than a revocation
    of the chain reaches (MAX_DEPTH)."""
    record = store.tokens.by_id(maker_id)
    if record is None:
        raise maker_gone()
    if record.uses_left is not None:
        raise invalid_input("restricted use token cannot generate child tokens")
    if not orphan and store.tokens.ancestors(maker_id) >= MAX_DEPTH:
        raise invalid_input(f"a chain of tokens is at most {MAX_DEPTH} deep")
    changes: dict[str, Any] = {}
    if record.expires_at is not None:
        left = int(record.expires_at - store.clock.now())  # whole seconds: never past it
        if left < 1:
            raise forbidden("the token expires before it could make another")
        explicit = terms.explicit_max_seconds
        changes["explicit_max_seconds"] = left if not explicit else min(explicit, left)
    if record.rate_per_second is not None:
        rate = terms.rate_per_second
        changes["rate_per_second"] = (
            record.rate_per_second if rate is None else min(rate, record.rate_per_second)
        )
    return replace(terms, **changes)


def policies_lacking(maker: Principal, policies: Iterable[str]) -> list[str]:
    """The policies of `policies` a token made by `maker` may not carry: those it lacks
    (`default` aside; none for the admin)."""
    if maker.admin:
        return []
    return sorted(set(policies) - {*maker.policies, DEFAULT_POLICY})


def _scope_lacking(
    maker: Principal, patterns: Sequence[str], operations: Sequence[str]
) -> list[str]:
    """What of `operations` on the keys `patterns` match the maker may not do: a pattern it
    does not hold as it is, `covers` compares with each it holds; 403 before any comparison if
    they would pass MAX_SCOPE_COMPARISON together."""
    open_ = []
    for operation in operations:
        held = maker.held_for(Operation(operation))
        if ("*", ()) not in held:
            whole = {own for own, excluded in held if not excluded}
            open_.append((operation, held, [p for p in patterns if p not in whole]))
    weights = (_weight(left) * _weight(own for own, _ in held) for _, held, left in open_)
    if sum(weights) > MAX_SCOPE_COMPARISON:
        raise forbidden(
            "the scope to give is too wide to check against the maker's: name fewer patterns, "
            "or give policies"
        )
    return [
        f"{operation} on {pattern!r}"
        for operation, held, left in open_
        for pattern in left
        if not any(
            covers(own, pattern) and not _may_reach(pattern, excluded) for own, excluded in held
        )
    ]


def _may_reach(pattern: str, prefixes: tuple[str, ...]) -> bool:
    """Whether `pattern` may match a name that starts with one of `prefixes` (cautious: a
    wildcard before the prefix ends may): a rule that excludes another mount's keys gives no
    pattern that reaches them, by any way of writing it."""
    wild = min((i for i, c in enumerate(pattern) if c in "*?["), default=len(pattern))
    head = pattern[:wild]
    exact = wild == len(pattern)
    return any(
        head.startswith(prefix) or (not exact and prefix.startswith(head)) for prefix in prefixes
    )


def _weight(patterns: Iterable[str]) -> int:
    # What comparing with `patterns` costs: their characters, and a call's worth for each.
    return sum(len(pattern) + COMPARISON_OVERHEAD for pattern in patterns)


def issue(store: KeyStore, limits: TokenLimits, maker: Principal, body: TokenCreate) -> IssuedToken:
    """`POST /v1/tokens`: a token on the body's terms. The token itself is only in the answer."""
    terms = TokenTerms(
        policies=body.policies,
        ttl_seconds=body.ttl_seconds,
        max_ttl_seconds=body.max_ttl_seconds,
        period_seconds=body.period_seconds,
        renewable=body.renewable,
        num_uses=body.num_uses,
        metadata=body.metadata,
        no_default_policy=body.no_default_policy,
        description=body.description,
        key_patterns=body.keys,
        operations=[op.value for op in body.operations],
        rate_per_second=body.rate_per_second,
    )
    if body.ttl_seconds is None and body.period_seconds is None:
        # The native API's tokens live until revoked unless given a life.
        limits = TokenLimits(None, limits.max_ttl_seconds)
    return create(store, limits, maker, terms, body.orphan, "tokens")


def created_out(issued: IssuedToken) -> TokenCreated:
    """A new token as the native API answers it: the only time the token itself is shown."""
    return TokenCreated(**token_out(issued.record).model_dump(), token=issued.token)


def new_aws_credentials() -> tuple[str, str]:
    """A fresh AWS access key pair: an id in AWS's form (`AKIA` and 16 characters of A-Z and
    2-7: 80 random bits, so that ids never collide) and a 40-character secret (240 bits)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    access_key_id = "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16))
    return access_key_id, secrets.token_urlsafe(30)


def with_aws_credentials(store: KeyStore, created: TokenCreated) -> TokenCreated:
    """A new token's answer with the AWS key pair drawn and stored for it (its secret sealed:
    `app.store.aws_credentials`); revoked with the token."""
    access_key_id, secret = new_aws_credentials()
    if not store.aws_credentials.add(access_key_id, created.id, secret.encode()):
        raise Problem(
            409,
            "token-revoked",
            "Token revoked",
            f"token {created.id} was revoked (with its parent) before its AWS key pair was "
            "stored: make another",
        )
    return created.model_copy(
        update={"aws_access_key_id": access_key_id, "aws_secret_access_key": secret}
    )


def page(store: KeyStore, after: str | None, limit: int) -> tuple[list[TokenOut], str | None]:
    """Up to `limit` tokens past the id `after`, in id order, without the tokens themselves;
    and the `after` of the next page (None on the last)."""
    records, more = store.tokens.page(after, limit)
    return [token_out(record) for record in records], records[-1].id if more else None


# How a route finds the token it acts on (`by_id`, `own`), given the store.
TokenLookup = Callable[[KeyStore], TokenRecord]


def by_id(store: KeyStore, token_id: str) -> TokenRecord:
    """The live token with id (accessor) `token_id` (404 otherwise)."""
    record = store.tokens.by_id(token_id)
    if record is None or (record.expires_at is not None and record.expires_at <= store.clock.now()):
        raise not_found(token_id)
    return record


def own(store: KeyStore, caller: Principal) -> TokenRecord:
    """The caller's own token (422 for the admin token, which is no stored token)."""
    if caller.token_id is None:
        raise invalid_input("the admin token is not a stored token: it has no life to look up")
    return by_id(store, caller.token_id)


def renew(store: KeyStore, record: TokenRecord, increment: float | None) -> TokenRecord:
    """Extend a token's life: by its period (periodic), else by `increment` or its TTL, never
    past its maximum (400 if it is not renewable)."""
    if not record.renewable:
        raise invalid_input("lease is not renewable")
    now = store.clock.now()
    life = record.period_seconds or increment or record.ttl_seconds or 0
    expires_at = now + life
    if record.max_expires_at is not None:
        expires_at = min(expires_at, record.max_expires_at)
    renewed = store.tokens.renew(record.id, expires_at, now)
    if renewed is None:
        raise not_found(record.id)
    return renewed


def revoke(store: KeyStore, token_id: str) -> Sequence[str]:
    """Revoke a token and its children, at once on every replica (their next request): the
    ids revoked (404 if there is no such token)."""
    revoked = store.tokens.delete(token_id)
    if not revoked:
        raise not_found(token_id)
    return revoked


def tidy(store: KeyStore) -> int:
    """Free the rows of up to EXPIRED_PER_PASS expired tokens now (Vault's `auth/token/tidy`;
    the maintenance pass does the same on its own): how many."""
    return store.tokens.delete_expired(store.clock.now(), EXPIRED_PER_PASS)


# The tokens one transaction of a revocation by prefix takes (with their children).
REVOKED_PER_PASS = 1000


def revoke_under(store: KeyStore, prefix: str) -> int:
    """Revoke every token made at a path under `prefix` (Vault's lease prefix, e.g.
    `auth/approle/login`: every token an AppRole login gave there), with its children: how
    many. In transactions of REVOKED_PER_PASS tokens, so that none holds the store long; the
    work is that of the tokens there are, each pass revoking at least one."""
    if prefix.endswith("/"):
        raise invalid_input("cannot write to a path ending in '/'")  # Vault's words
    if not prefix or len(prefix) > 512 or not prefix.isprintable():
        raise invalid_input("a lease prefix has 1 to 512 printable characters")
    revoked = 0
    while batch := store.tokens.delete_under(prefix + "/", REVOKED_PER_PASS):
        revoked += len(batch)
    return revoked


def revoke_orphaning(store: KeyStore, token_id: str) -> None:
    """Revoke one token; its children become orphans (404 if there is no such token)."""
    if not store.tokens.delete_orphaning(token_id):
        raise not_found(token_id)


def not_found(token_id: str) -> Problem:
    return Problem(404, "token-not-found", "Token not found", f"no token with id {token_id[:64]!r}")
