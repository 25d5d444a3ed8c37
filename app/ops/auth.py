"""Who is calling: one admin token and scoped tokens (key-name patterns × operations).

Scoped tokens are random 256-bit strings shown once at creation; the store keeps only their
SHA-256, which is enough for a secret of that entropy and lets a lookup be one indexed query.
The admin token is compared in constant time. Lookups are cached per process for
`CIPHERD_TOKEN_CACHE_SECONDS`, which bounds how long a revoked token keeps working, and kept
through a store outage for `CIPHERD_OUTAGE_GRACE_SECONDS` (`app.ops.keyring.StoreCache`).
"""

import enum
import fnmatch
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.ops.errors import Problem, unauthorized
from app.ops.keyring import StoreCache
from app.ops.ratelimit import RateLimits
from app.store import KeyStore, TokenRecord

SCOPED_TOKEN_PREFIX = "cdt_"
MAX_CACHED_TOKENS = 10_000


class Operation(enum.StrEnum):
    """What a scoped token may do with the keys its patterns match."""

    READ = "read"  # metadata of keys
    PUBLIC = "public"  # public parts of keys
    ENCRYPT = "encrypt"
    DECRYPT = "decrypt"
    KEYGEN = "keygen"  # FE functional keys
    SIGN = "sign"
    VERIFY = "verify"  # signatures; `public` allows it too
    HMAC = "hmac"  # HMACs and their verification


# A token with the value's operation may also do the key's: verifying a signature uses only
# the public part that `public` already hands out.
_IMPLIED = {Operation.VERIFY: Operation.PUBLIC}


@dataclass(frozen=True)
class Principal:
    """Who a request acts for."""

    admin: bool
    token_id: str | None = None
    key_patterns: tuple[str, ...] = ()
    operations: frozenset[str] = frozenset()
    rate_per_second: float | None = None

    @property
    def id(self) -> str:
        """Who this is in records (the ledger, the audit trail): the token's id, or `admin`;
        never a token."""
        return self.token_id or "admin"

    def allows(self, operation: Operation, key_name: str | None) -> bool:
        if self.admin:
            return True
        if operation not in self.operations and _IMPLIED.get(operation) not in self.operations:
            return False
        if key_name is None:
            return True
        return any(fnmatch.fnmatchcase(key_name, pattern) for pattern in self.key_patterns)


ADMIN = Principal(admin=True)


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_scoped_token() -> tuple[str, str]:
    """A fresh (token id, token) pair."""
    token_id = secrets.token_hex(8)
    return token_id, f"{SCOPED_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


class _NotCached(Exception):
    """The token's record is not in this process's cache."""


class Authenticator:
    def __init__(
        self,
        store: KeyStore,
        admin_token: str,
        cache_seconds: float,
        grace_seconds: float,
        limits: RateLimits,
    ) -> None:
        self._admin_digest = hash_token(admin_token)
        self.limits = limits
        # Unknown tokens too, so that a stream of bad ones does not reach the store each time.
        self._cache: StoreCache[bytes, TokenRecord | None] = StoreCache(
            store, store.token_by_hash, cache_seconds, grace_seconds, MAX_CACHED_TOKENS
        )

    def principal(self, token: str | None) -> Principal:
        """The principal a bearer token stands for; 401 if it is missing or not valid.

        May query the store (a scoped token not in the cache).
        """
        return self._principal(token, self._lookup)

    def cached_principal(self, token: str | None) -> Principal | None:
        """`principal` without touching the store: None when only the store can tell.

        Lets the event loop settle the common cases (the admin token, a cached scoped token, no
        token) without a hop to a worker thread.
        """
        try:
            return self._principal(token, self._cached)
        except _NotCached:
            return None

    def _principal(
        self, token: str | None, lookup: Callable[[bytes], TokenRecord | None]
    ) -> Principal:
        if not token:
            raise unauthorized("this operation needs an Authorization: Bearer token")
        digest = hash_token(token)
        if hmac.compare_digest(digest, self._admin_digest):
            return ADMIN
        record = lookup(digest)
        if record is None or (record.expires_at is not None and record.expires_at <= time.time()):
            raise unauthorized("the token is unknown, revoked or expired")
        return Principal(
            admin=False,
            token_id=record.id,
            key_patterns=record.key_patterns,
            operations=frozenset(record.operations),
            rate_per_second=record.rate_per_second,
        )

    def admit(self, principal: Principal) -> Principal:
        """The principal, unless its token has a rate and is over it (429)."""
        if principal.rate_per_second is not None and principal.token_id is not None:
            self.limits.charge(principal.token_id, principal.rate_per_second)
        return principal

    def refusal(self, address: str | None, problem: Problem) -> Problem:
        """What to answer a request from `address` whose token failed with `problem` (a 401):
        that problem, or a 429 once the address failed too often."""
        return self.limits.failed(address, problem)

    def _cached(self, digest: bytes) -> TokenRecord | None:
        hit = self._cache.cached(digest)
        if hit is None:
            raise _NotCached
        return hit[0]

    def _lookup(self, digest: bytes) -> TokenRecord | None:
        return self._cache.load(digest)

    def forget(self, token_id: str) -> None:
        """Drop a revoked token from this process's cache at once."""
        self._cache.discard(lambda _, record: record is not None and record.id == token_id)
