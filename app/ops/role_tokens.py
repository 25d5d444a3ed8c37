"""The token a login gets from the role it matched: Vault's `token_*` fields, which every kind
of role has (AppRole, JWT, certificate) and which are checked here for all of them; a JWT role's
or a certificate rule's are handed to the one function that makes login tokens."""

from collections.abc import Mapping
from typing import Any

from app.ops.cidrs import cidr_blocks
from app.ops.errors import invalid_input
from app.ops.identity import (
    Identity,
    IssuedToken,
    TokenLimits,
    TokenTerms,
    check_login_terms,
    issue_login_token,
)
from app.store import KeyStore

# The `token_*` fields every kind of role has (Vault's tokenutil), with Vault's defaults.
TOKEN_DEFAULTS: dict[str, Any] = {
    "token_bound_cidrs": [],
    "token_explicit_max_ttl": 0,
    "token_max_ttl": 0,
    "token_no_default_policy": False,
    "token_num_uses": 0,
    "token_period": 0,
    "token_policies": [],
    "token_ttl": 0,
    "token_type": "default",
}
# Older names Vault still takes for some of them.
TOKEN_ALIASES = {"policies": "token_policies", "period": "token_period", "ttl": "token_ttl"}


def check_token_fields(role: dict[str, Any]) -> None:
    """400 for a token type this service does not make, a TTL above the maximum or an address
    block that is not one; the policies trimmed, each once, sorted; the blocks as networks."""
    if role["token_type"] not in ("default", "service"):
        raise invalid_input("token_type: 'default' or 'service' (batch tokens are not made)")
    if role["token_max_ttl"] and role["token_ttl"] > role["token_max_ttl"]:
        raise invalid_input("token_ttl cannot be greater than token_max_ttl")
    role["token_policies"] = sorted({p.strip() for p in role["token_policies"] if p.strip()})
    role["token_bound_cidrs"] = cidr_blocks("token_bound_cidrs", role["token_bound_cidrs"])


def role_token(
    store: KeyStore,
    limits: TokenLimits,
    identity: Identity,
    role: Mapping[str, Any],
    metadata: Mapping[str, str],
) -> IssuedToken:
    """A token for `identity` on the role's policies and TTLs (0: the service's defaults),
    with `metadata` as Vault's `meta` (strings, e.g. `{"role_name": "ci"}`): lookups show it,
    so it never holds a secret."""
    return issue_login_token(store, limits, identity, _terms(role, metadata))


def check_role_token(store: KeyStore, role: Mapping[str, Any]) -> None:
    """422 for a role whose token no login could get, before a login spends anything on it."""
    check_login_terms(store, _terms(role, {}))


def _terms(stored: Mapping[str, Any], metadata: Mapping[str, str]) -> TokenTerms:
    """The terms of a role as stored, which a role written before a field was known lacks:
    Vault's default stands for it."""
    role = {**TOKEN_DEFAULTS, **stored}
    return TokenTerms(
        policies=role["token_policies"],
        ttl_seconds=role["token_ttl"] or None,
        max_ttl_seconds=role["token_max_ttl"] or None,
        period_seconds=role["token_period"] or None,
        explicit_max_seconds=role["token_explicit_max_ttl"] or None,
        num_uses=role["token_num_uses"] or None,
        metadata=dict(metadata),
        no_default_policy=role["token_no_default_policy"],
        bound_cidrs=role["token_bound_cidrs"],
    )
