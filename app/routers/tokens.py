"""Token routes: make, list, look up, renew and revoke tokens (the admin operation `tokens`),
and a token's own: look itself up, renew and revoke itself (`app.ops.tokens`)."""

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status
from pydantic import BaseModel, Field

from app.http.body import json_body, read_json
from app.http.deps import Caller, ServicesDep, admin_of, audit_note
from app.http.identity import note_token
from app.http.operation import operation_id
from app.http.schemas import PageSize
from app.ops import Services, tokens
from app.ops.grants import AdminOperation, Principal
from app.ops.token_values import TOKEN_ID_PATTERN
from app.ops.tokens import TokenCreate, TokenCreated, TokenOut, TokenRenew
from app.ops.work import in_thread

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], generate_unique_id_function=operation_id)
TokenId = Annotated[str, Path(pattern=TOKEN_ID_PATTERN, description="the token's id (accessor)")]
Manager = Annotated[Principal, admin_of(AdminOperation.TOKENS)]
Changer = Annotated[Principal, admin_of(AdminOperation.TOKENS, change=True)]


class TokenList(BaseModel):
    tokens: list[TokenOut]
    next: str | None = Field(
        None, description="pass as `after` for the next page; null on the last page"
    )


async def _renew(request: Request, services: Services, find: tokens.TokenLookup) -> TokenOut:
    """Renew the token `find` finds by the body's increment (the body read after the token
    check, the token found after the body), and audit the renewal."""
    body = await read_json(request, TokenRenew)
    record = await in_thread(find, services.store)
    renewed = await in_thread(tokens.renew, services.store, record, body.increment_seconds)
    note_token(audit_note(request.scope), "renew", renewed)
    return tokens.token_out(renewed)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenCreated,
    response_model_exclude_unset=True,  # the AWS key pair only when asked for
    summary="Make a token: named policies, an inline rule, a life (admin operation tokens)",
    openapi_extra=json_body(TokenCreate),
)
async def create_token(request: Request, services: ServicesDep, maker: Changer) -> TokenCreated:
    body = await read_json(request, TokenCreate)  # after the token check
    issued = await in_thread(tokens.issue, services.store, services.token_limits, maker, body)
    note_token(audit_note(request.scope), "create", issued.record)
    audit_note(request.scope).details.update(
        keys=list(issued.record.key_patterns),
        operations=list(issued.record.operations),
    )
    created = tokens.created_out(issued)
    if body.aws_credentials:
        created = await in_thread(tokens.with_aws_credentials, services.store, created)
        audit_note(request.scope).details["aws_access_key_id"] = created.aws_access_key_id
    return created


@router.get("", response_model=TokenList, summary="List tokens by id (admin operation tokens)")
async def list_tokens(
    services: ServicesDep,
    _: Manager,
    limit: PageSize = 100,
    after: Annotated[
        str | None, Query(pattern=TOKEN_ID_PATTERN, description="a page's `next`")
    ] = None,
) -> TokenList:
    page, next_after = await in_thread(tokens.page, services.store, after, limit)
    return TokenList(tokens=page, next=next_after)


@router.get("/self", response_model=TokenOut, summary="The calling token (any token)")
async def lookup_self(services: ServicesDep, caller: Caller) -> TokenOut:
    record = caller.last_use_of
    if record is None:
        record = await in_thread(tokens.own, services.store, caller)
    return tokens.token_out(record)


@router.post(
    "/self/renew",
    response_model=TokenOut,
    summary="Renew the calling token (any renewable token)",
    openapi_extra=json_body(TokenRenew),
)
async def renew_self(request: Request, services: ServicesDep, caller: Caller) -> TokenOut:
    await services.audit.admit_change(audit_note(request.scope))
    return await _renew(request, services, partial(tokens.own, caller=caller))


@router.delete(
    "/self",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Revoke the calling token and its children (any token)",
)
async def revoke_self(request: Request, services: ServicesDep, caller: Caller) -> None:
    if caller.last_use_of is not None:  # revoked already, by this very use
        note_token(audit_note(request.scope), "revoke", caller.last_use_of)
        return
    record = await in_thread(tokens.own, services.store, caller)
    await services.audit.admit_change(audit_note(request.scope))
    revoked = await in_thread(tokens.revoke, services.store, record.id)
    note_token(audit_note(request.scope), "revoke", record)
    audit_note(request.scope).details["revoked"] = len(revoked)


@router.get(
    "/{token_id}", response_model=TokenOut, summary="A token by its id (admin operation tokens)"
)
async def lookup_token(token_id: TokenId, services: ServicesDep, _: Manager) -> TokenOut:
    return tokens.token_out(await in_thread(tokens.by_id, services.store, token_id))


@router.post(
    "/{token_id}/renew",
    response_model=TokenOut,
    summary="Renew a token by its id (admin operation tokens)",
    openapi_extra=json_body(TokenRenew),
)
async def renew_token(
    request: Request, token_id: TokenId, services: ServicesDep, _: Changer
) -> TokenOut:
    return await _renew(request, services, partial(tokens.by_id, token_id=token_id))


@router.delete(
    "/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Revoke a token and its children, at once on every replica (admin operation tokens)",
)
async def delete_token(
    request: Request, token_id: TokenId, services: ServicesDep, _: Changer
) -> None:
    revoked = await in_thread(tokens.revoke, services.store, token_id)
    audit_note(request.scope).details.update(
        token=token_id, token_action="revoke", revoked=len(revoked)
    )
