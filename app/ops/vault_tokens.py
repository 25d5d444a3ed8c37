"""Vault's token API (`auth/token/...`) over the native token verbs (`app.ops.tokens`): its
request fields, its roles, and the `data` of its lookups, in Vault's shapes."""

import re
from typing import Annotated, Any

from pydantic import Field, field_validator

from app.ops.auth_mounts import TOKEN
from app.ops.cidrs import MAX_CIDRS, cidr_blocks
from app.ops.errors import Problem, invalid_input
from app.ops.identity import TokenTerms, remaining_seconds
from app.ops.token_values import TOKEN_ID_PATTERN, hash_token
from app.ops.vault_fields import Duration, Strings, VaultBody, VaultBool, VaultInt, vault_time
from app.store import KeyStore, TokenRecord

MAX_SECONDS = 10 * 365 * 86400
MAX_ROLES = 1000
ROLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class VaultTokenCreate(VaultBody):
    """What `auth/token/create` takes."""

    id: str | None = Field(None, repr=False)  # a token's value, when its maker chooses it
    role_name: str | None = None
    policies: Strings = Field(default_factory=list, max_length=64)
    meta: dict[Annotated[str, Field(max_length=128)], Annotated[str, Field(max_length=512)]] = (
        Field(default_factory=dict, max_length=64)
    )
    no_parent: VaultBool = False
    no_default_policy: VaultBool = False
    renewable: VaultBool = True
    ttl: Duration = Field(0, ge=0, le=MAX_SECONDS)
    explicit_max_ttl: Duration = Field(0, ge=0, le=MAX_SECONDS)
    period: Duration = Field(0, ge=0, le=MAX_SECONDS)
    display_name: str = Field("", max_length=128)
    num_uses: VaultInt = Field(0, ge=0, le=1_000_000)
    type: str | None = None
    # The bao command sends it with every creation, empty; identities' aliases are not kept here.
    entity_alias: str = ""

    @field_validator("entity_alias")
    @classmethod
    def _no_entity_alias(cls, alias: str) -> str:
        if alias:
            raise ValueError("entity aliases are not kept by this service: leave it empty")
        return alias


class VaultTokenRole(VaultBody):
    """What `auth/token/roles/:name` takes."""

    allowed_policies: Strings = Field(default_factory=list, max_length=64)
    disallowed_policies: Strings = Field(default_factory=list, max_length=64)
    orphan: VaultBool = False
    renewable: VaultBool = True
    path_suffix: str = Field("", max_length=128)
    token_period: Duration = Field(0, ge=0, le=MAX_SECONDS)
    period: Duration = Field(0, ge=0, le=MAX_SECONDS)
    token_explicit_max_ttl: Duration = Field(0, ge=0, le=MAX_SECONDS)
    explicit_max_ttl: Duration = Field(0, ge=0, le=MAX_SECONDS)
    token_no_default_policy: VaultBool = False
    token_bound_cidrs: Strings = Field(default_factory=list, max_length=MAX_CIDRS)
    bound_cidrs: Strings = Field(default_factory=list, max_length=MAX_CIDRS)


def role_terms(
    role_name: str, role: dict[str, Any], body: VaultTokenCreate, inherited: tuple[str, ...]
) -> tuple[TokenTerms, bool]:
    """A creation through a role: its terms, and whether the token is an orphan (400 for a
    policy the role does not allow). Without policies asked, the token has the role's allowed
    policies, or, for a role that names none, its maker's (`inherited`), as in Vault."""
    allowed = set(role["allowed_policies"])
    asked = set(body.policies) or allowed or set(inherited)
    if allowed and not asked <= allowed | {"default"}:
        raise invalid_input(
            f"token policies ({sorted(asked | {'default'})}) must be subset of the role's "
            f"allowed policies ({sorted(allowed | {'default'})})"
        )
    refused = sorted(asked & set(role["disallowed_policies"]))
    if refused:
        raise invalid_input(f'token policy "{refused[0]}" is disallowed by this role')
    period = role["token_period"] or role["period"] or body.period
    explicit = role["token_explicit_max_ttl"] or role["explicit_max_ttl"] or body.explicit_max_ttl
    terms = TokenTerms(
        policies=sorted(asked),
        ttl_seconds=body.ttl or None,
        explicit_max_seconds=explicit or None,
        period_seconds=period or None,
        renewable=role["renewable"] and body.renewable,
        num_uses=body.num_uses or None,
        metadata=body.meta,
        no_default_policy=role["token_no_default_policy"] or body.no_default_policy,
        description=body.display_name,
        bound_cidrs=role.get("token_bound_cidrs", []),
        value=body.id or None,
    )
    return terms, role["orphan"]


def terms_of(body: VaultTokenCreate, inherited: tuple[str, ...]) -> TokenTerms:
    """A creation's terms; without policies, the maker's (as Vault)."""
    if body.type not in (None, "", "service", "default"):
        raise invalid_input(f"token type {body.type[:32]!r}: only service tokens are made")
    return TokenTerms(
        policies=body.policies or list(inherited),
        ttl_seconds=body.ttl or None,
        explicit_max_seconds=body.explicit_max_ttl or None,
        period_seconds=body.period or None,
        renewable=body.renewable,
        num_uses=body.num_uses or None,
        metadata=body.meta,
        no_default_policy=body.no_default_policy,
        description=body.display_name,
        value=body.id or None,
    )


def role_data(name: str, role: dict[str, Any]) -> dict[str, Any]:
    """A role as `auth/token/roles/:name` reads (its address blocks only when it has any)."""
    data = {
        "allowed_entity_aliases": None,
        "allowed_policies": role["allowed_policies"],
        "allowed_policies_glob": [],
        "disallowed_policies": role["disallowed_policies"],
        "disallowed_policies_glob": [],
        "explicit_max_ttl": role["explicit_max_ttl"],
        "name": name,
        "orphan": role["orphan"],
        "path_suffix": role["path_suffix"],
        "period": role["period"],
        "renewable": role["renewable"],
        "token_explicit_max_ttl": role["token_explicit_max_ttl"],
        "token_no_default_policy": role["token_no_default_policy"],
        "token_period": role["token_period"],
        "token_type": "default-service",
    }
    for field in ("bound_cidrs", "token_bound_cidrs"):
        if role.get(field):
            data[field] = role[field]
    return dict(sorted(data.items()))


def by_token(store: KeyStore, token: str) -> TokenRecord | None:
    """The live token `token` is, if any."""
    record = store.tokens.by_hash(hash_token(token)) if token else None
    return record if record is not None and _alive(store, record) else None


# The most accessors `LIST auth/token/accessors` answers. Vault lists them all; past this many
# the answer says to page through `GET /v1/tokens`.
MAX_LISTED_ACCESSORS = 10_000
_ACCESSORS_PAGE = 1_000


def accessors(store: KeyStore) -> tuple[list[str], bool]:
    """The live tokens' accessors in id order, at most MAX_LISTED_ACCESSORS; and whether there
    are more."""
    found: list[str] = []
    after = None
    while len(found) < MAX_LISTED_ACCESSORS:
        limit = min(_ACCESSORS_PAGE, MAX_LISTED_ACCESSORS - len(found))
        records, more = store.tokens.page(after, limit)
        found += [r.id for r in records if _alive(store, r)]
        if not more:
            return found, False
        after = records[-1].id
    return found, True


def by_accessor(store: KeyStore, accessor: str) -> TokenRecord | None:
    """The live token whose accessor (id) is `accessor`, if any (none for text no token id
    has, such as a NUL, which PostgreSQL could not even compare)."""
    record = store.tokens.by_id(accessor) if re.fullmatch(TOKEN_ID_PATTERN, accessor) else None
    return record if record is not None and _alive(store, record) else None


def _alive(store: KeyStore, record: TokenRecord) -> bool:
    return record.expires_at is None or record.expires_at > store.clock.now()


def write_role(store: KeyStore, name: str, role: VaultTokenRole) -> None:
    """Store a token role, kept with the login methods' roles under the token mount."""
    if not ROLE_NAME.fullmatch(name):
        raise invalid_input(f"role name {name[:64]!r}: letters, digits, '_', '.', '-'")
    given = role.model_dump(include=role.model_fields_set)
    if {"token_bound_cidrs", "bound_cidrs"} & role.model_fields_set:
        # `bound_cidrs`: Vault's older name, taken when the newer is not given (and then read
        # back under both names, as Vault does).
        blocks = cidr_blocks("token_bound_cidrs", role.token_bound_cidrs or role.bound_cidrs)
        given["token_bound_cidrs"] = blocks
        given["bound_cidrs"] = [] if role.token_bound_cidrs else blocks

    def changed(current: dict[str, Any] | None) -> dict[str, Any]:
        """The fields given, on the role as stored (a new one's defaults), as Vault writes."""
        return {**(current or VaultTokenRole().model_dump()), **given}

    if store.auth_roles.write(TOKEN.accessor, name, changed, MAX_ROLES) is None:
        raise invalid_input(f"at most {MAX_ROLES} token roles")


def role_names(store: KeyStore) -> list[str]:
    return list(store.auth_roles.names(TOKEN.accessor))


def delete_role(store: KeyStore, name: str) -> None:
    store.auth_roles.delete(TOKEN.accessor, name)


def read_role(store: KeyStore, name: str) -> dict[str, Any]:
    role = store.auth_roles.get(TOKEN.accessor, name)
    if role is None:
        raise Problem(404, "not-found", "Not found", "")
    return role


def lookup_data(record: TokenRecord, now: float, token: str = "") -> dict[str, Any]:
    """A token as Vault's lookups answer it: `token` is its `id` (empty by accessor)."""
    data: dict[str, Any] = {
        "accessor": record.id,
        "creation_time": int(record.created_at),
        "creation_ttl": int(record.ttl_seconds or 0),
        "display_name": f"token-{record.description}" if record.description else "token",
        "entity_id": "",
        "expire_time": None if record.expires_at is None else vault_time(record.expires_at),
        "explicit_max_ttl": int(record.explicit_max_seconds or 0),
        "id": token,
        "issue_time": vault_time(record.created_at),
        "meta": record.metadata or None,
        # -1 for a token whose last use this is, revoked as the request ends (Vault's mark).
        "num_uses": -1 if record.uses_left == 0 else record.uses_left or 0,
        "orphan": record.parent_id is None,
        "path": record.path,
        "policies": list(record.policies),
        "renewable": record.renewable,
        "ttl": remaining_seconds(record, now),
        "type": "service",
    }
    if record.renewed_at is not None:
        data["last_renewal"] = vault_time(record.renewed_at)
        data["last_renewal_time"] = int(record.renewed_at)
    if record.period_seconds:
        data["period"] = int(record.period_seconds)
    if record.role:
        data["role"] = record.role
    if record.bound_cidrs:
        data["bound_cidrs"] = list(record.bound_cidrs)
    return dict(sorted(data.items()))


def admin_lookup_data(token: str) -> dict[str, Any]:
    """The admin token as Vault's lookup-self answers a root token, to its holder: with its
    `id`, which `bao login` keeps as the token to use (an empty one, it kept none)."""
    return {
        "accessor": "",
        "creation_time": 0,
        "creation_ttl": 0,
        "display_name": "root",
        "entity_id": "",
        "expire_time": None,
        "explicit_max_ttl": 0,
        "id": token,
        "issue_time": vault_time(0),
        "meta": None,
        "num_uses": 0,
        "orphan": True,
        "path": "auth/token/root",
        "policies": ["root"],
        "renewable": False,
        "ttl": 0,
        "type": "service",
    }
