"""Scoped tokens, the admin's verbs on them: issue, list, revoke.

A token names glob patterns of key names and operations (`app.ops.auth`). It is drawn here and
shown once; the store keeps only its SHA-256.
"""

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.ops.auth import Authenticator, Operation, hash_token, new_scoped_token
from app.ops.errors import Problem
from app.ops.keys import timestamp
from app.store import KeyStore, TokenRecord
from app.store.patterns import PatternError, parse

# A glob over key names: their characters and fnmatch's `*`, `?`, `[seq]` and `[!seq]`. Anything
# else could never match a name, and a NUL is not even storable in PostgreSQL text; the grammar
# of `app.store.patterns` then checks the form.
KEY_PATTERN = r"^[A-Za-z0-9._*?\[\]!-]{1,128}$"


# What `POST /v1/tokens` and `cipherd tokens create` take (a docstring would reach the OpenAPI
# document as the schema's description).
class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        "", max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$", description="no control characters"
    )
    keys: list[Annotated[str, Field(pattern=KEY_PATTERN)]] = Field(
        min_length=1, max_length=100, description="glob patterns of key names, e.g. 'orders-*'"
    )
    operations: list[Operation] = Field(min_length=1)
    ttl_seconds: int | None = Field(None, ge=1, le=10 * 365 * 86400)
    rate_per_second: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        allow_inf_nan=False,
        description="requests a second the token may make on each worker process (a second's "
        "worth, at least one, at once); past it 429 with Retry-After; default: no limit",
    )

    @field_validator("keys")
    @classmethod
    def _in_the_grammar(cls, keys: list[str]) -> list[str]:
        """Each pattern in the grammar both stores match by (`app.store.patterns`), once."""
        for glob in keys:
            try:
                parse(glob)
            except PatternError as exc:
                raise ValueError(str(exc)) from None
        return list(dict.fromkeys(keys))


class TokenOut(BaseModel):
    id: str
    description: str
    keys: list[str]
    operations: list[Operation]
    created_at: datetime
    expires_at: datetime | None
    rate_per_second: float | None = Field(
        None, description="requests a second per worker process; null: no limit"
    )


class TokenCreated(TokenOut):
    token: str = Field(description="the bearer token; shown only in this response")


def token_out(record: TokenRecord) -> TokenOut:
    return TokenOut(
        id=record.id,
        description=record.description,
        keys=list(record.key_patterns),
        operations=[Operation(op) for op in record.operations],
        created_at=timestamp(record.created_at),
        expires_at=None if record.expires_at is None else timestamp(record.expires_at),
        rate_per_second=record.rate_per_second,
    )


def issue(store: KeyStore, body: TokenCreate) -> TokenCreated:
    """Draw a scoped token and store its hash. The token itself is only in the answer."""
    token_id, token = new_scoped_token()
    now = time.time()
    record = TokenRecord(
        id=token_id,
        token_hash=hash_token(token),
        description=body.description,
        key_patterns=tuple(body.keys),
        operations=tuple(sorted({op.value for op in body.operations})),
        created_at=now,
        expires_at=None if body.ttl_seconds is None else now + body.ttl_seconds,
        rate_per_second=body.rate_per_second,
    )
    store.add_token(record)
    return TokenCreated(**token_out(record).model_dump(), token=token)


def listing(store: KeyStore) -> Sequence[TokenOut]:
    """Every scoped token, oldest first, without the tokens themselves."""
    return [token_out(record) for record in store.list_tokens()]


def revoke(store: KeyStore, authenticator: Authenticator | None, token_id: str) -> None:
    """Revoke a token, at once in this process (other processes within their token cache)."""
    if not store.delete_token(token_id):
        raise Problem(404, "token-not-found", "Token not found", f"no token with id {token_id!r}")
    if authenticator is not None:
        authenticator.forget(token_id)
