"""Response wrapping (Vault's `X-Vault-Wrap-TTL` and `sys/wrapping/*`): an answer given not to
the caller but to the store, behind a single-use wrapping token that the caller hands on.

Whoever holds the token can read the answer once (`unwrap`), and anyone who intercepted and
used it first is found out, since the rightful holder's unwrap then fails. The answer is kept
sealed under the keyring (`app.store.wrapped`) and only the token's SHA-256 is stored; the
token expires after its TTL, at most `CIPHERD_WRAP_MAX_TTL_SECONDS`, and an answer larger than
`CIPHERD_WRAP_MAX_BYTES` is refused rather than stored.
"""

import secrets
from typing import Any

from app.ops.errors import Problem, invalid_input
from app.ops.token_values import hash_token
from app.ops.vault_fields import duration_seconds, vault_time
from app.store import KeyStore, WrappedResponse

WRAP_TOKEN_PREFIX = "cdw_"
INVALID_TOKEN = "wrapping token is not valid or does not exist"


def is_wrapping_token(token: str | None) -> bool:
    return bool(token) and str(token).startswith(WRAP_TOKEN_PREFIX)


class ResponseWrapping:
    def __init__(self, store: KeyStore, max_ttl_seconds: int, max_bytes: int) -> None:
        self._store = store
        self.max_ttl_seconds = max_ttl_seconds
        self.max_bytes = max_bytes

    def ttl(self, header: str) -> int:
        """The TTL an `X-Vault-Wrap-TTL` header asks for (0: no wrapping); 400 if it is not a
        duration or is longer than the service allows."""
        try:
            seconds = duration_seconds(header)
        except ValueError as exc:
            raise invalid_input(f"error parsing X-Vault-Wrap-TTL header: {exc}") from None
        if seconds > self.max_ttl_seconds:
            raise invalid_input(
                f"X-Vault-Wrap-TTL: at most {self.max_ttl_seconds} s (CIPHERD_WRAP_MAX_TTL_SECONDS)"
            )
        return seconds

    def wrap(
        self, answer: bytes, creation_path: str, ttl: int, wrapped_accessor: str = ""
    ) -> dict[str, Any]:
        """Keep `answer` (a JSON document) behind a new wrapping token: Vault's `wrap_info`."""
        if len(answer) > self.max_bytes:
            raise Problem(
                413,
                "too-large-to-wrap",
                "Too large to wrap",
                f"the answer is {len(answer)} bytes; a wrapped answer is at most "
                f"{self.max_bytes} (CIPHERD_WRAP_MAX_BYTES)",
            )
        token = f"{WRAP_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"
        record = WrappedResponse(
            accessor=secrets.token_urlsafe(18),
            token_hash=hash_token(token),
            creation_path=creation_path[:512],
            created_at=self._store.clock.now(),
            ttl_seconds=ttl,
            wrapped_accessor=wrapped_accessor,
        )
        self._store.wrapped.add(record, answer)
        return wrap_info(token, record)

    def lookup(self, token: str) -> dict[str, Any]:
        """What Vault's `sys/wrapping/lookup` tells of a live wrapping token."""
        found = self._store.wrapped.lookup(self._hash(token), self._store.clock.now())
        if found is None:
            raise invalid_input(INVALID_TOKEN)
        return {
            "creation_path": found.creation_path,
            "creation_time": vault_time(found.created_at),
            "creation_ttl": found.ttl_seconds,
        }

    def unwrap(self, token: str) -> tuple[WrappedResponse, bytes]:
        """The wrapped answer (and what was known of it), once: the token is spent by this
        call."""
        taken = self._store.wrapped.take(self._hash(token), self._store.clock.now())
        if taken is None:
            raise invalid_input(INVALID_TOKEN)
        return taken

    def rewrap(self, token: str) -> dict[str, Any]:
        """The same answer behind a new token with the old one's TTL; the old one is spent."""
        now = self._store.clock.now()
        new_token = f"{WRAP_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"
        with self._store.transaction() as held:
            taken = held.wrapped.take(self._hash(token), now)
            if taken is None:
                raise invalid_input(INVALID_TOKEN)
            old, answer = taken
            record = WrappedResponse(
                accessor=secrets.token_urlsafe(18),
                token_hash=hash_token(new_token),
                creation_path=old.creation_path,
                created_at=now,
                ttl_seconds=old.ttl_seconds,
                wrapped_accessor=old.wrapped_accessor,
            )
            held.wrapped.add(record, answer)
        return wrap_info(new_token, record)

    def _hash(self, token: str) -> bytes:
        if not is_wrapping_token(token) or len(token) > 128:
            raise invalid_input(INVALID_TOKEN)
        return hash_token(token)


def wrap_info(token: str, record: WrappedResponse) -> dict[str, Any]:
    info: dict[str, Any] = {
        "token": token,
        "accessor": record.accessor,
        "ttl": record.ttl_seconds,
        "creation_time": vault_time(record.created_at),
        "creation_path": record.creation_path,
    }
    if record.wrapped_accessor:
        info["wrapped_accessor"] = record.wrapped_accessor
    return info
