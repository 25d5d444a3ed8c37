"""Scoped-token routes: issue, list, revoke (admin only; `app.ops.tokens`)."""

from typing import Annotated

from fastapi import APIRouter, Path, Request, status
from pydantic import BaseModel

from app.http.body import json_body, read_json
from app.http.deps import Admin, AdminChange, ServicesDep, audit_note
from app.http.operation import operation_id
from app.ops import tokens
from app.ops.tokens import TokenCreate, TokenCreated, TokenOut
from app.ops.work import in_thread

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], generate_unique_id_function=operation_id)


class TokenList(BaseModel):
    tokens: list[TokenOut]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenCreated,
    summary="Issue a scoped token (admin)",
    openapi_extra=json_body(TokenCreate),
)
async def create_token(request: Request, services: ServicesDep, _: AdminChange) -> TokenCreated:
    body = await read_json(request, TokenCreate)  # after the token check
    created = await in_thread(tokens.issue, services.store, body)
    audit_note(request.scope).details.update(
        token=created.id, keys=created.keys, operations=[op.value for op in created.operations]
    )
    return created


@router.get("", response_model=TokenList, summary="List scoped tokens (admin)")
def list_tokens(services: ServicesDep, _: Admin) -> TokenList:
    return TokenList(tokens=list(tokens.listing(services.store)))


@router.delete(
    "/{token_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Revoke a scoped token (admin)"
)
def delete_token(
    token_id: Annotated[str, Path(pattern=r"^[0-9a-f]{16}$")],
    services: ServicesDep,
    _: AdminChange,
) -> None:
    tokens.revoke(services.store, services.auth, token_id)
