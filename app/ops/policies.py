"""Named policies: what the tokens that carry a name may do, changed for all of them at once.

A policy is a document of rules, each a list of key-name patterns and the key operations
allowed on the keys they match (as a scoped token's scope), and a list of admin operations
(`app.ops.grants.AdminOperation`). Each change counts a version and moves the auth generation
on, so every token that carries the policy follows it from its next request on any replica.

Two names are the service's own, as Vault's: `root` (everything: the admin token's; never
written or deleted) and `default` (carried by every token unless it was made without it; empty
until written; never deleted).
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.ops.errors import Problem, invalid_input
from app.ops.grants import (
    DEFAULT_POLICY,
    ROOT_POLICY,
    AdminOperation,
    Operation,
    check_pattern_count,
    compile_policy,
)
from app.ops.identity import checked_policy_name
from app.ops.keys import timestamp
from app.ops.transit.mounts import PATH_PATTERN
from app.store import KeyStore, PolicyRecord
from app.store.patterns import PatternError, parse

# A glob over key names: their characters and fnmatch's `*`, `?`, `[seq]` and `[!seq]`. Anything
# else could never match a name, and a NUL is not even storable in PostgreSQL text; the grammar
# of `app.store.patterns` then checks the form.
KEY_PATTERN = r"^[A-Za-z0-9._*?\[\]!-]{1,128}$"
MAX_RULES = 100
BUILT_IN = (DEFAULT_POLICY, ROOT_POLICY)


def checked_patterns(keys: list[str]) -> list[str]:
    """Each pattern in the grammar both stores match by (`app.store.patterns`), once."""
    for glob in keys:
        try:
            parse(glob)
        except PatternError as exc:
            raise ValueError(str(exc)) from None
    return list(dict.fromkeys(keys))


# Key-name globs as a rule or a token's inline rule takes them: each in the grammar, once.
KeyPatterns = Annotated[
    list[Annotated[str, Field(pattern=KEY_PATTERN)]], AfterValidator(checked_patterns)
]


class PolicyRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: KeyPatterns = Field(
        min_length=1, max_length=100, description="glob patterns of key names, e.g. 'orders-*'"
    )
    operations: list[Operation] = Field(min_length=1, max_length=len(Operation))
    mount: str | None = Field(
        None,
        pattern=f"^{PATH_PATTERN}$",
        description="a Transit mount's path: `keys` name that mount's keys as its paths do "
        "(`orders-*` under `payments` is `payments/encrypt/orders-*`), and no other mount's; "
        "none: native key names, every mount's",
    )


# What `POST /v1/policies/{name}` takes (a docstring would reach the OpenAPI document).
class PolicyDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        "", max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$", description="no control characters"
    )
    rules: list[PolicyRule] = Field(default_factory=list, max_length=MAX_RULES)
    admin: list[AdminOperation] = Field(
        default_factory=list,
        max_length=len(AdminOperation),
        description="the admin operations allowed, by name",
    )
    hcl: str | None = Field(
        None,
        max_length=64 * 1024,
        description="the Vault policy it was written as at sys/policies/acl, if it was: kept "
        "to be read back there",
    )


class PolicyOut(PolicyDocument):
    name: str
    version: int = Field(description="counted from 1 by each change; 0: a built-in never written")
    created_at: datetime | None
    updated_at: datetime | None


class PolicyList(BaseModel):
    policies: list[str]


def _out(record: PolicyRecord) -> PolicyOut:
    return PolicyOut(
        name=record.name,
        version=record.version,
        created_at=timestamp(record.created_at),
        updated_at=timestamp(record.updated_at),
        **PolicyDocument.model_validate(record.document).model_dump(),
    )


def put(store: KeyStore, name: str, document: PolicyDocument) -> PolicyOut:
    """Create or replace the policy `name` (400 for `root`; 422 past MAX_PATTERNS, which no
    token could then carry). Tokens that carry it and would pass MAX_PATTERNS with it are
    refused from their next request (`app.ops.auth.Authenticator`)."""
    checked_policy_name(name)
    if name == ROOT_POLICY:
        raise invalid_input("cannot update the root policy")
    stored = document.model_dump(mode="json")
    check_pattern_count(compile_policy(stored).patterns, "the policy", invalid_input)
    record = store.policies.put(name, stored, store.clock.now())
    return _out(record)


def get(store: KeyStore, name: str) -> PolicyOut:
    """The policy `name` (404 if none); `root` and `default` always exist."""
    record = store.policies.get(name)
    if record is not None:
        return _out(record)
    if name == ROOT_POLICY:
        return PolicyOut(
            name=name,
            version=0,
            created_at=None,
            updated_at=None,
            description="everything: the admin token's",
            rules=[PolicyRule(keys=["*"], operations=list(Operation))],
            admin=list(AdminOperation),
        )
    if name == DEFAULT_POLICY:
        return PolicyOut(name=name, version=0, created_at=None, updated_at=None)
    raise not_found(name)


def names(store: KeyStore) -> Sequence[str]:
    """Every policy's name, the built-in ones too, sorted."""
    return sorted({*store.policies.names(), *BUILT_IN})


def missing(store: KeyStore, names: Sequence[str]) -> list[str]:
    """The names among `names` that no policy has (yet), built-in ones aside."""
    wanted = [name for name in names if name not in BUILT_IN]
    found = {record.name for record in store.policies.get_many(wanted)}
    return [name for name in wanted if name not in found]


def delete(store: KeyStore, name: str) -> None:
    """Delete the policy `name` (400 for a built-in, 404 if none). Tokens that carry the name
    keep it, and gain nothing from it unless a policy of that name is made again."""
    if name in BUILT_IN:
        raise invalid_input(f"cannot delete the {name} policy")
    if not store.policies.delete(name):
        raise not_found(name)


def not_found(name: str) -> Problem:
    return Problem(404, "policy-not-found", "Policy not found", f"no policy named {name[:64]!r}")
