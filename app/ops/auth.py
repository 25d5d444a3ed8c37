"""Who is calling, and what they may do: the admin token, and tokens that carry named policies
(`app.ops.policies`) and an inline rule (a scoped token's key-name patterns x operations).

A token's value is drawn and hashed by `app.ops.token_values`. The admin token acts as root
(every key and admin operation); it is the configured one until it is rotated, then the one
whose hash the store holds, and `CIPHERD_ADMIN_TOKEN_DISABLED` refuses it in favour of policies.

A change that narrows a token (a policy changed or deleted, a token revoked, the admin token
rotated, an auth mount disabled) moves the store's auth generation on in the transaction that
makes it, and a process that sees it moved drops what it cached of tokens and policies. A
request reuses this process's last reading of the generation if it began less than
`CIPHERD_AUTH_CHECK_SECONDS` ago and no change of this process's has committed since
(`app.store.database.Database.auth_moves`); else it reads it again, one read serving every
request that arrived before it started (`SharedRead` for the requests of an event loop, in one
hop to a worker thread; `SharedBlockingRead` for threads). So a narrowed policy narrows every token
that carries it from the next request on the process that changed it, and within that bound on
every other process and replica; and a request that needs nothing from the store
(`Authenticator.cached_principal`) is answered without leaving the event loop (the figures:
docs/performance/choices.md). Token records are otherwise cached for
`CIPHERD_TOKEN_CACHE_SECONDS`, and kept through a store outage for `CIPHERD_OUTAGE_GRACE_SECONDS`
(`app.ops.keyring.StoreCache`), as is the generation.
"""

import contextlib
import hmac
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace

from app.ops.cidrs import networks_of
from app.ops.errors import Problem, forbidden, unauthorized
from app.ops.globs import matcher
from app.ops.grants import (
    ADMIN,
    ROOT_POLICY,
    CompiledPolicy,
    MountPrefixes,
    Principal,
    Rule,
    any_mount_rule,
    check_pattern_count,
    compile_policy,
)
from app.ops.keyring import StoreCache, store_outage
from app.ops.ratelimit import RateLimits
from app.ops.token_values import hash_token
from app.ops.transit.mounts import ENGINE
from app.ops.work import SharedBlockingRead, SharedRead
from app.store import AuthState, AwsCredential, KeyStore, StoreUnavailableError, TokenRecord

MAX_CACHED_TOKENS = 10_000
MAX_CACHED_POLICIES = 10_000


class Authenticator:
    def __init__(
        self,
        store: KeyStore,
        admin_token: str | None,
        cache_seconds: float,
        grace_seconds: float,
        limits: RateLimits,
        check_seconds: float,
    ) -> None:
        """`admin_token`: the configured one (used until rotated); None: no admin token.
        `check_seconds`: how long a reading of the auth generation is reused (0: never)."""
        self._store = store
        self._configured_admin = None if admin_token is None else hash_token(admin_token)
        self._clock = store.clock
        self._grace_seconds = grace_seconds
        self._check_seconds = check_seconds
        self.limits = limits
        self._thread_read = SharedBlockingRead(store.auth_state.read)
        self._shared_read = SharedRead(self._read_state, self._read_state_at_once)
        self._outage = store_outage(store)
        self._lock = threading.Lock()
        self._seen: AuthState | None = None
        self._seen_at = 0.0  # when the read of `_seen` was asked for (monotonic)
        self._seen_moves = -1  # this process's moves of the generation counted before it
        # Unknown tokens too, so that a stream of bad ones does not reach the store each time.
        self._tokens: StoreCache[bytes, TokenRecord | None] = StoreCache(
            store, store.tokens.by_hash, cache_seconds, grace_seconds, MAX_CACHED_TOKENS
        )
        self._policies: dict[str, CompiledPolicy | None] = {}
        self._aws: StoreCache[str, AwsCredential | None] = StoreCache(
            store, store.aws_credentials.get, cache_seconds, grace_seconds, MAX_CACHED_TOKENS
        )

    @staticmethod
    def _digest(token: str | None) -> bytes:
        """The digest a token is stored and cached by; 401 when the request carries none."""
        if not token:
            raise unauthorized("this operation needs an Authorization: Bearer token")
        return hash_token(token)

    def principal(self, token: str | None, state: AuthState, address: str | None) -> Principal:
        """The principal a bearer token stands for under `state` (`current_state`), for a
        request from `address`; 401 if it is missing or not valid, 403 past MAX_PATTERNS. A
        token with a number of uses is charged one, unless it is bound to blocks that do not
        hold `address` (the caller refuses the request: `Principal.reachable_from`). Queries
        the store for a token not cached: call it off the event loop."""
        found = self._found(self._digest(token), state)
        if found is None:
            raise unauthorized("the token is unknown, revoked or expired")
        principal, record = found  # the principal before a use is spent: it may refuse
        if record is not None and principal.reachable_from(address):
            spent = self.spend_use(record)
            if spent.uses_left == 0:
                return replace(principal, last_use_of=spent)
        return principal

    def principal_named(self, token: str, state: AuthState) -> Principal | None:
        """What `token` may do, for another who asks (`sys/capabilities`), none of its uses
        spent; None for no live token. Queries the store: call it off the event loop."""
        found = self._found(hash_token(token), state) if token else None
        return None if found is None else found[0]

    def _found(
        self, digest: bytes, state: AuthState
    ) -> tuple[Principal, TokenRecord | None] | None:
        """The principal the token of that digest stands for, with its record (None for the
        admin token); None for no live token."""
        if self.is_admin(state, digest):
            return ADMIN, None
        record = self._tokens.load(digest)
        if record is None or not self.alive(record):
            return None
        return self.principal_of_record(record), record

    def cached_principal(self, token: str | None, state: AuthState) -> Principal | None:
        """What `principal` answers (its 401s and 403s too), if this process can tell without
        the store: the token's record cached with no number of uses to spend, and its policies
        cached. None: call `principal`. Safe on the event loop."""
        digest = self._digest(token)
        if self.is_admin(state, digest):
            return ADMIN
        hit = self._tokens.cached(digest)
        if hit is None:
            return None
        record = hit[0]
        if record is None or not self.alive(record):
            raise unauthorized("the token is unknown, revoked or expired")
        if record.uses_left is not None:
            return None
        policies = self._cached_policies(record.policies)
        return None if policies is None else self._principal_with(record, policies)

    def stored_admin_hash(self, token: str | None) -> bytes | None:
        """What the store holds for `token`, a caller's admin token: its hash, or None when it
        is the configured one (the store holds none until a rotation)."""
        digest = self._digest(token)
        configured = self._configured_admin
        return None if configured and hmac.compare_digest(digest, configured) else digest

    def is_admin(self, state: AuthState, digest: bytes) -> bool:
        admin = state.admin_token_hash or self._configured_admin
        return bool(
            self._configured_admin is not None and admin and hmac.compare_digest(digest, admin)
        )

    def aws_credential(self, access_key_id: str) -> tuple[AwsCredential, Principal] | None:
        """The AWS key pair of that id and the principal of its token (alive or not), if the
        token was not revoked, as of `current_state`. Queries the store as `principal` does:
        call it off the event loop. A token with a number of uses is charged one by
        `spend_use`, once the request's signature is checked."""
        credential = self._aws.load(access_key_id)
        if credential is None:
            return None
        return credential, self.principal_of_record(credential.token)

    def cached_aws_credential(
        self, access_key_id: str
    ) -> tuple[tuple[AwsCredential, Principal] | None] | None:
        """What `aws_credential` answers, in a 1-tuple, if this process can tell without the
        store (as `cached_principal`); None: call `aws_credential`. Safe on the event loop."""
        hit = self._aws.cached(access_key_id)
        if hit is None:
            return None
        credential = hit[0]
        if credential is None:
            return (None,)
        policies = self._cached_policies(credential.token.policies)
        if policies is None:
            return None
        return ((credential, self._principal_with(credential.token, policies)),)

    def spend_use(self, record: TokenRecord) -> TokenRecord:
        """Charge a token with a number of uses one of them (401 once they are spent): its
        record as the charge left it."""
        if record.uses_left is None:
            return record
        left = self._store.tokens.use(record.id)
        if left is None:
            raise unauthorized("the token is unknown, revoked or expired")
        return replace(record, uses_left=left)

    def alive(self, record: TokenRecord) -> bool:
        return record.expires_at is None or record.expires_at > self._clock.now()

    def recent_state(self) -> AuthState | None:
        """The auth state last read, if its read was asked for less than
        `CIPHERD_AUTH_CHECK_SECONDS` ago and no move of the generation by this process has
        committed since; else None."""
        with self._lock:
            seen, seen_at, seen_moves = self._seen, self._seen_at, self._seen_moves
        if (
            seen is None
            or seen_moves != self._store.database.auth_moves
            or time.monotonic() - seen_at >= self._check_seconds
        ):
            return None
        return seen

    def state(self) -> AuthState:
        """The store's auth state as of now (or as of a recent reading, `recent_state`), this
        process's caches dropped if it moved on; the last one read, through a store outage no
        longer than the grace."""
        recent = self.recent_state() or self._held_through_outage()
        if recent is not None:
            return recent
        try:
            return self._read_state()
        except StoreUnavailableError as exc:
            return self._last_within_grace(exc)

    async def current_state(self, arrived: float) -> AuthState:
        """`state` for a request that arrived at `arrived` (time.monotonic()), on the event
        loop, which every request's check begins with: a recent reading at once, else a read
        that started after the request arrived, which the requests of a worker share
        (`SharedRead`)."""
        recent = self.recent_state() or self._held_through_outage()
        if recent is not None:
            return recent
        try:
            return await self._shared_read(arrived)
        except StoreUnavailableError as exc:
            return self._last_within_grace(exc)

    def _last_within_grace(self, unanswered: StoreUnavailableError) -> AuthState:
        """The last reading when the store did not answer, if it is within the outage grace;
        else the store's error."""
        seen = self._seen_within_grace()
        if seen is None:
            raise unanswered
        return seen

    def _seen_within_grace(self) -> AuthState | None:
        """The last reading, if it is no older than the outage grace."""
        with self._lock:
            seen, seen_at = self._seen, self._seen_at
        if seen is None or time.monotonic() - seen_at > self._grace_seconds:
            return None
        return seen

    def _held_through_outage(self) -> AuthState | None:
        """While the store is taken to be down, the last reading if it is within the grace: the
        store is asked again on a thread of its own, at most once a second (the caches' retry),
        so that requests do not each wait for a store that does not answer."""
        if not self._outage.down:
            return None
        seen = self._seen_within_grace()
        if seen is None:
            return None
        if self._outage.claim_retry():
            threading.Thread(target=self._retry_read, daemon=True).start()
        return seen

    def _retry_read(self) -> None:
        with contextlib.suppress(StoreUnavailableError):  # marked down again by the read
            self._read_state()

    def _read_state(self) -> AuthState:
        """A read of the store's auth state, remembered, with the store's outage state kept."""
        # Both taken before the read starts: what it answers covers them.
        moves, asked_at = self._store.database.auth_moves, time.monotonic()
        try:
            state = self._thread_read()
        except StoreUnavailableError:
            self._outage.failed()
            raise
        self._outage.answered()
        return self._remember(state, moves, asked_at)

    def _read_state_at_once(self) -> AuthState | None:
        """`_read_state` made on the event loop, where the store reads without waiting; None
        where it cannot (a store across a network, or a busy one): then a thread reads."""
        moves, asked_at = self._store.database.auth_moves, time.monotonic()
        state = self._store.auth_state.read_at_once()
        if state is None:
            return None
        self._outage.answered()
        return self._remember(state, moves, asked_at)

    def _remember(self, state: AuthState, moves: int, asked_at: float) -> AuthState:
        """Keep `state`, read from `asked_at` on, unless a read asked for later was kept
        already; this process's caches are dropped if the generation moved."""
        with self._lock:
            if asked_at < self._seen_at:
                return state
            moved = self._seen is not None and self._seen.generation != state.generation
            self._seen, self._seen_at, self._seen_moves = state, asked_at, moves
            if moved:
                self._policies = {}
        if moved:
            self._tokens.discard(lambda _, __: True)
            self._aws.discard(lambda _, __: True)
        return state

    def principal_of_record(self, record: TokenRecord) -> Principal:
        """What a stored token may do: its rules as they are now, their globs compiled here, off
        the event loop, for the requests served from the caches (4,000 complex ones: 1.25 s)."""
        root = ROOT_POLICY in record.policies
        principal = self._principal_with(record, [] if root else self.policies(record.policies))
        for rule in principal.rules:
            matcher(rule.patterns)
        return principal

    def _principal_with(self, record: TokenRecord, policies: Sequence[CompiledPolicy]) -> Principal:
        """What a stored token may do with these (its) policies."""
        if ROOT_POLICY in record.policies:
            return Principal(
                admin=True,
                token_id=record.id,
                rate_per_second=record.rate_per_second,
                identity=record.identity,
                policies=record.policies,
                bound_networks=networks_of(record.bound_cidrs),
            )
        rules: list[Rule] = []
        if record.key_patterns and record.operations:
            rules.append(Rule(record.key_patterns, frozenset(record.operations)))
        # Its policies may have grown since it was made: then it is refused whole.
        carried = len(record.key_patterns) + sum(policy.patterns for policy in policies)
        check_pattern_count(carried, "the token and its policies", forbidden)
        admin_operations: set[str] = set()
        for policy in policies:
            rules.extend(policy.rules)
            admin_operations |= policy.admin_operations
        return Principal(
            admin=False,
            token_id=record.id,
            rules=tuple(rules),
            admin_operations=frozenset(admin_operations),
            rate_per_second=record.rate_per_second,
            identity=record.identity,
            policies=record.policies,
            bound_networks=networks_of(record.bound_cidrs),
        )

    def _mount_prefixes(self) -> MountPrefixes:
        """The Transit mounts' prefixes now: a change of mounts moves the generation, so the
        policies compiled with them are dropped with it."""
        held = self._store.secret_mounts.all()
        by_path = {ENGINE: "", **{m.path: m.key_prefix for m in held if m.path}}
        return MountPrefixes(by_path, frozenset(m.key_prefix for m in held))

    def policies(self, names: Iterable[str]) -> list[CompiledPolicy]:
        """The named policies that exist, from this process's cache (dropped at each new
        generation) or the store."""
        wanted = [name for name in names if name != ROOT_POLICY]
        with self._lock:
            missing = [name for name in wanted if name not in self._policies]
        if missing:
            stored = self._store.policies.get_many(missing)
            mounts = self._mount_prefixes() if any_mount_rule(stored) else None
            found = {policy.name: compile_policy(policy.document, mounts) for policy in stored}
            with self._lock:
                if len(self._policies) + len(missing) > MAX_CACHED_POLICIES:
                    self._policies = {}
                self._policies.update({name: found.get(name) for name in missing})
        with self._lock:
            cached = [self._policies.get(name) for name in wanted]
        return [policy for policy in cached if policy is not None]

    def _cached_policies(self, names: Iterable[str]) -> list[CompiledPolicy] | None:
        """The named policies that exist, if this process has every one of them cached (or
        knows it does not exist); else None."""
        wanted = [name for name in names if name != ROOT_POLICY]
        with self._lock:
            if any(name not in self._policies for name in wanted):
                return None
            cached = [self._policies[name] for name in wanted]
        return [policy for policy in cached if policy is not None]

    def admit(self, principal: Principal) -> Principal:
        """The principal, unless its token has a rate and is over it (429)."""
        if principal.rate_per_second is not None and principal.token_id is not None:
            self.limits.charge(principal.token_id, principal.rate_per_second)
        return principal

    def admit_batch(self, principal: Principal, items: int) -> None:
        """A batch counts each of its items against its token's rate: `admit` charged the
        request as one, this charges the rest once the items are counted (429 past it)."""
        if principal.rate_per_second is not None and principal.token_id is not None:
            self.limits.charge(principal.token_id, principal.rate_per_second, items - 1, taken=1)

    def refusal(self, address: str | None, problem: Problem) -> Problem:
        """What to answer a request from `address` whose token (or login) failed with
        `problem` (a 401 or 403): that problem, or a 429 once the address failed too often."""
        return self.limits.failed(address, problem)
