"""What a token may be granted, and who a request acts for: the key operations and the admin
operations, a rule of key-name patterns and operations, the rules of a stored policy as the
checks read them (a rule on a Transit mount's keys compiled with the mounts' prefixes of the
moment), and the principal a token stands for (`app.ops.auth` finds it for a request)."""

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.ops.cidrs import Network, address_within
from app.ops.errors import Problem
from app.ops.globs import matcher
from app.ops.transit.mounts import nested_prefixes
from app.store import PolicyRecord, TokenRecord
from app.store.patterns import Scope

ROOT_POLICY, DEFAULT_POLICY = "root", "default"
# The most key-name patterns a token carries, its own and its policies' (once per rule): as many
# as `app.ops.globs.matcher` and `patterns.parse` keep for reuse (docs/performance/choices.md).
MAX_PATTERNS = 4_096


class Operation(enum.StrEnum):
    """What a token may do with the keys a rule's patterns match."""

    READ = "read"  # metadata of keys
    PUBLIC = "public"  # public parts of keys
    ENCRYPT = "encrypt"
    DECRYPT = "decrypt"
    KEYGEN = "keygen"  # FE functional keys
    SIGN = "sign"
    VERIFY = "verify"  # signatures; `public` allows it too
    HMAC = "hmac"  # HMACs and their verification
    CREATE = "create"  # new keys (POST /v1/keys, KMS's CreateKey)
    CONFIGURE = "configure"  # policies, enabling, aliases and tags (PATCH /v1/keys/{name})
    ROTATE = "rotate"  # new versions and rotation settings
    DELETE = "delete"  # scheduling and cancelling deletion


class AdminOperation(enum.StrEnum):
    """What a token may administer, beside keys: each names a family of admin routes."""

    TOKENS = "tokens"  # make tokens for others, look up, renew and revoke any token
    POLICIES = "policies"  # write, read and delete named policies
    AUTH = "auth"  # enable and disable auth methods, their roles and settings
    AUDIT = "audit"  # read and verify the audit trail
    BACKUP = "backup"  # back keys up and restore them
    SYS = "sys"  # the keyring, the wrapping key, secrets-engine mounts, the admin token


# A token with the value's operation may also do the key's: verifying a signature uses only
# the public part that `public` already hands out.
_IMPLIED = {Operation.VERIFY: Operation.PUBLIC}


@dataclass(frozen=True)
class Rule:
    """Operations on the keys whose names match one of `patterns` (fnmatch globs) and start
    with none of the `excluded` prefixes (a Transit mount's rule: the other mounts' keys)."""

    patterns: tuple[str, ...]
    operations: frozenset[str]
    excluded: tuple[str, ...] = ()

    def gives(self, operation: Operation) -> bool:
        return operation in self.operations or _IMPLIED.get(operation) in self.operations

    def allows(self, operation: Operation, key_name: str | None) -> bool:
        return self.gives(operation) and (
            key_name is None
            or (
                matcher(self.patterns).match(key_name) is not None
                and not key_name.startswith(self.excluded)
            )
        )


@dataclass(frozen=True)
class MountPrefixes:
    """The Transit mounts' key prefixes, as a policy's mount rules are compiled with them:
    `by_path` for the mounted ones (the default mount's is ""), `every` with those of mounts
    disabled whose keys are still held."""

    by_path: Mapping[str, str]
    every: frozenset[str]

    def rule(self, mount: str, globs: Sequence[str], operations: frozenset[str]) -> Rule | None:
        """A rule on the keys of the mount at `mount` that `globs` name as that mount names
        them; None while no mount is there (a policy may name one before it is enabled)."""
        prefix = self.by_path.get(mount)
        if prefix is None:
            return None
        nested = tuple(sorted(nested_prefixes(prefix, self.every)))
        return Rule(tuple(prefix + glob for glob in globs), operations, nested)


def check_pattern_count(count: int, holder: str, refuse: Callable[[str], Problem]) -> None:
    """MAX_PATTERNS, stated once for every place that counts (`holder`: whose they are)."""
    if count > MAX_PATTERNS:
        raise refuse(
            f"{count:,} key-name patterns in {holder}, past the {MAX_PATTERNS:,} a token may carry"
        )


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: root (`admin`), or a token's rules and admin operations, and
    the identity it was issued to."""

    admin: bool
    token_id: str | None = None
    rules: tuple[Rule, ...] = ()
    admin_operations: frozenset[str] = frozenset()
    rate_per_second: float | None = None
    identity: str = "admin"
    policies: tuple[str, ...] = ()
    # The address blocks its token may be used from (none: any).
    bound_networks: tuple[Network, ...] = ()
    # The token's record as this request's use left it, when that was its last: the token is
    # revoked already (Vault revokes it as the request ends), yet the request still answers
    # for it, as Vault's lookup-self and revoke-self do.
    last_use_of: TokenRecord | None = None

    @property
    def id(self) -> str:
        """Who this is in records (the ledger, the audit trail): the token's id, or `admin`;
        never a token."""
        return self.token_id or "admin"

    def allows(self, operation: Operation, key_name: str | None) -> bool:
        return self.admin or any(rule.allows(operation, key_name) for rule in self.rules)

    def reach(self, operation: Operation) -> Scope | None:
        """The key names `allows` gives `operation` on, as a listing asks the store to filter
        by them: the patterns of the rules that give it, grouped by the prefixes their rules
        exclude (None for the admin: every key)."""
        if self.admin:
            return None
        groups: dict[tuple[str, ...], dict[str, None]] = {}
        for pattern, excluded in self.held_for(operation):
            groups.setdefault(excluded, {})[pattern] = None
        return [(tuple(patterns), excluded) for excluded, patterns in groups.items()]

    def held_for(self, operation: Operation) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each key-name pattern of the rules that give `operation`, with the prefixes its rule
        excludes (a Transit mount's rule: the other mounts'); the admin: `*`, excluding none."""
        if self.admin:
            return (("*", ()),)
        return tuple(
            (pattern, rule.excluded)
            for rule in self.rules
            if rule.gives(operation)
            for pattern in rule.patterns
        )

    def may(self, operation: AdminOperation) -> bool:
        """Whether it may do the admin operation."""
        return self.admin or operation in self.admin_operations

    def reachable_from(self, address: str | None) -> bool:
        """Whether a request from `address` may act for it: its token's blocks hold it."""
        return address_within(address, self.bound_networks)


ADMIN = Principal(admin=True, policies=(ROOT_POLICY,))


@dataclass(frozen=True)
class CompiledPolicy:
    """A stored policy document as the checks read it."""

    rules: tuple[Rule, ...]
    admin_operations: frozenset[str]
    patterns: int  # its rules' patterns, as MAX_PATTERNS counts them


def compile_policy(
    document: Mapping[str, Any], mounts: MountPrefixes | None = None
) -> CompiledPolicy:
    """A stored policy's document (`app.ops.policies.PolicyDocument`, already checked) as
    rules: a rule on a Transit mount's keys with the mounts' prefixes as they are now (without
    `mounts`, it grants nothing: its patterns are still counted)."""
    rules: list[Rule] = []
    for rule in document.get("rules", ()):
        operations = frozenset(rule["operations"])
        mount = rule.get("mount")
        if mount is None:
            rules.append(Rule(tuple(rule["keys"]), operations))
            continue
        compiled = None if mounts is None else mounts.rule(mount, rule["keys"], operations)
        if compiled is not None:
            rules.append(compiled)
    admin = frozenset(document.get("admin", ()))
    counted = sum(len(rule["keys"]) for rule in document.get("rules", ()))
    return CompiledPolicy(tuple(rules), admin, counted)


def any_mount_rule(policies: Iterable[PolicyRecord]) -> bool:
    return any(
        rule.get("mount") is not None
        for policy in policies
        for rule in policy.document.get("rules", ())
    )
