"""Scoped tokens: which key names (glob patterns) and which operations (admin only)."""

import time
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Request, status
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from app.auth import Operation, hash_token, new_scoped_token
from app.body import json_body, read_json
from app.deps import Admin, KeyringDep
from app.errors import Problem
from app.keystore import KeyStore, TokenRecord
from app.routing import operation_id
from app.schemas import RequestBody, timestamp

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], generate_unique_id_function=operation_id)


# A glob over key names: their characters and fnmatch's `*`, `?`, `[seq]` and `[!seq]`. Anything
# else could never match a name, and a NUL is not even storable in PostgreSQL text.
KEY_PATTERN = r"^[A-Za-z0-9._*?\[\]!-]{1,128}$"


class TokenCreate(RequestBody):
    description: str = Field(
        "", max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$", description="no control characters"
    )
    keys: list[Annotated[str, Field(pattern=KEY_PATTERN)]] = Field(
        min_length=1, max_length=100, description="glob patterns of key names, e.g. 'orders-*'"
    )
    operations: list[Operation] = Field(min_length=1)
    ttl_seconds: int | None = Field(None, ge=1, le=10 * 365 * 86400)


class TokenOut(BaseModel):
    id: str
    description: str
    keys: list[str]
    operations: list[Operation]
    created_at: datetime
    expires_at: datetime | None


class TokenCreated(TokenOut):
    token: str = Field(description="the bearer token; shown only in this response")


class TokenList(BaseModel):
    tokens: list[TokenOut]


def token_out(record: TokenRecord) -> TokenOut:
    return TokenOut(
        id=record.id,
        description=record.description,
        keys=list(record.key_patterns),
        operations=[Operation(op) for op in record.operations],
        created_at=timestamp(record.created_at),
        expires_at=None if record.expires_at is None else timestamp(record.expires_at),
    )


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenCreated,
    summary="Issue a scoped token (admin)",
    openapi_extra=json_body(TokenCreate),
)
async def create_token(request: Request, keyring: KeyringDep, _: Admin) -> TokenCreated:
    body = await read_json(request, TokenCreate)  # after the token check
    return await run_in_threadpool(issue_token, keyring.store, body)


def issue_token(store: KeyStore, body: TokenCreate) -> TokenCreated:
    """Draw a scoped token and store its hash: what `POST /v1/tokens` and `cipherd tokens
    create` both do. The token itself is only in the answer."""
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
    )
    store.add_token(record)
    return TokenCreated(**token_out(record).model_dump(), token=token)


@router.get("", response_model=TokenList, summary="List scoped tokens (admin)")
def list_tokens(keyring: KeyringDep, _: Admin) -> TokenList:
    return TokenList(tokens=[token_out(record) for record in keyring.store.list_tokens()])


@router.delete(
    "/{token_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Revoke a scoped token (admin)"
)
def delete_token(
    token_id: Annotated[str, Path(pattern=r"^[0-9a-f]{16}$")],
    request: Request,
    keyring: KeyringDep,
    _: Admin,
) -> None:
    if not keyring.store.delete_token(token_id):
        raise Problem(404, "token-not-found", "Token not found", f"no token with id {token_id!r}")
    request.app.state.auth.forget(token_id)
