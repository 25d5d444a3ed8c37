"""Vault's token method at `auth/token/...`: create (as a child, an orphan, through a role),
look up, renew and revoke (a token itself, another by its value or its accessor), tidy, and
token roles; and `sys/leases/revoke-prefix`, which revokes the tokens made under a path (tokens
are the only leases here). In Vault's shapes over the native verbs (`app.ops.tokens`,
`app.ops.vault_tokens`). Another token's lookup, renewal and revocation, orphans, roles and
revocations by prefix take the admin operation `tokens`; a token's own, none."""

from typing import Any

from fastapi import Request, Response
from pydantic import Field

from app.http.auth_mounts import login_router
from app.http.deps import arrival, audit_note, services
from app.http.identity import note_token
from app.http.vault import (
    answer,
    caller,
    keys_of,
    listing,
    no_content,
    read_body,
    tidied,
    vault_admin,
    vault_body,
    vault_router,
    vault_token,
    written,
)
from app.ops import policies, tokens, vault_tokens
from app.ops.errors import Problem, forbidden, invalid_input
from app.ops.grants import AdminOperation, Principal
from app.ops.identity import IssuedToken, vault_auth
from app.ops.token_values import hash_token
from app.ops.vault_fields import Duration, VaultBody
from app.ops.vault_tokens import VaultTokenCreate, VaultTokenRole
from app.ops.work import in_thread

router = login_router("token")
leases_router = vault_router("/v1/sys", "sys-leases")


class VaultTokenRef(VaultBody):
    token: str = Field("", max_length=512)
    accessor: str = Field("", max_length=64)
    increment: Duration = Field(0, ge=0)


REF = vault_body(VaultTokenRef)
# Vault warns of a chosen token's weaker hashing; here every token is hashed alike, and what
# is weaker is the value itself.
CHOSEN_TOKEN_WARNING = (
    "The token's value was chosen by its maker: it is as hard to guess as that choice, where a "
    "drawn one has 256 random bits."
)


async def _changing(request: Request) -> None:
    """A change: only once the audit trail can take its record (503 otherwise)."""
    await services(request).audit.admit_change(audit_note(request.scope))


async def _create(request: Request, orphan: bool, role_name: str | None) -> Response:
    maker = await caller(request)
    await _changing(request)
    body = await read_body(request, VaultTokenCreate)
    service = services(request)
    role_name = role_name or body.role_name
    path = "auth/token/create"
    if role_name:
        role = await in_thread(vault_tokens.read_role, service.store, role_name)
        terms, orphan = vault_tokens.role_terms(role_name, role, body, maker.policies)
        path = f"auth/token/create/{role_name}"
    else:
        terms = vault_tokens.terms_of(body, maker.policies)
        # Vault's 400 for a maker that may make tokens (one that may not: `tokens.create`'s 403).
        if maker.may(AdminOperation.TOKENS) and tokens.policies_lacking(maker, terms.policies):
            raise invalid_input("child policies must be subset of parent")
        orphan = orphan or body.no_parent
        if orphan and not maker.may(AdminOperation.TOKENS):
            raise forbidden("an orphan token needs the admin operation 'tokens'")
    # A chosen value may not be the admin token's, which no table holds: asked only of root
    # (another maker is refused by `tokens.create`), lest it tell anyone what that value is.
    if terms.value is not None and maker.admin:
        state = await service.auth.current_state(arrival(request.scope))
        if service.auth.is_admin(state, hash_token(terms.value)):
            raise invalid_input("cannot create a token with a duplicate ID")
    issued = await in_thread(
        tokens.create, service.store, service.token_limits, maker, terms, orphan, path
    )
    note_token(audit_note(request.scope), "create", issued.record)
    absent = await in_thread(policies.missing, service.store, issued.record.policies)
    warnings = [f'Policy "{name}" does not exist' for name in absent]
    if terms.value is not None:
        warnings.append(CHOSEN_TOKEN_WARNING)
    now = service.store.clock.now()
    return await answer(request, auth=vault_auth(issued, now), warnings=warnings or None)


@router.post("/create", summary="Make a token (a child of the caller's)")
async def create(request: Request) -> Response:
    return await _create(request, False, None)


@router.post("/create-orphan", summary="Make an orphan token")
async def create_orphan(request: Request) -> Response:
    return await _create(request, True, None)


@router.post("/create/{role_name}", summary="Make a token through a token role")
async def create_with_role(request: Request, role_name: str) -> Response:
    return await _create(request, False, role_name)


async def _caller_and_ref(request: Request) -> tuple[Principal, VaultTokenRef]:
    """The caller (any valid token, before the body is read) and the body naming a token."""
    return await caller(request), await read_body(request, VaultTokenRef)


async def _find(request: Request, principal: Principal, token: str) -> Any:
    """The stored token `token` names (403 `bad token` as Vault, if none)."""
    if not principal.may(AdminOperation.TOKENS):
        raise forbidden("looking up another token needs the admin operation 'tokens'")
    record = await in_thread(vault_tokens.by_token, services(request).store, token)
    if record is None:
        raise Problem(403, "forbidden", "Forbidden", "bad token")
    return record


@router.get("/lookup-self", summary="The calling token")
async def lookup_self(request: Request) -> Response:
    principal = await caller(request)
    store = services(request).store
    now = store.clock.now()
    presented = vault_token(request.scope) or ""
    if principal.token_id is None:
        return await answer(request, vault_tokens.admin_lookup_data(presented))
    record = principal.last_use_of
    if record is None:
        record = await in_thread(tokens.own, store, principal)
    return await answer(request, vault_tokens.lookup_data(record, now, presented))


@router.post("/lookup", summary="A token, by its value", openapi_extra=REF)
async def lookup(request: Request) -> Response:
    principal, body = await _caller_and_ref(request)
    record = await _find(request, principal, body.token)
    now = services(request).store.clock.now()
    return await answer(request, vault_tokens.lookup_data(record, now, body.token))


async def _by_accessor(request: Request) -> tuple[Any, VaultTokenRef]:
    """The stored token the body's `accessor` names (None if none), for a caller with the
    admin operation `tokens`, and the body."""
    await vault_admin(request, AdminOperation.TOKENS)  # the token before the body
    body = await read_body(request, VaultTokenRef)
    record = await in_thread(vault_tokens.by_accessor, services(request).store, body.accessor)
    return record, body


def _found(record: Any) -> Any:
    if record is None:
        raise invalid_input("invalid accessor")  # Vault's words
    return record


@router.post("/lookup-accessor", summary="A token, by its accessor", openapi_extra=REF)
async def lookup_accessor(request: Request) -> Response:
    record = _found((await _by_accessor(request))[0])
    now = services(request).store.clock.now()
    return await answer(request, vault_tokens.lookup_data(record, now))


async def _renewed(request: Request, record: Any, token: str, increment: int) -> Response:
    await _changing(request)
    store = services(request).store
    renewed = await in_thread(tokens.renew, store, record, increment or None)
    note_token(audit_note(request.scope), "renew", renewed)
    return await answer(request, auth=vault_auth(IssuedToken(token, renewed), store.clock.now()))


@router.post("/renew-self", summary="Renew the calling token", openapi_extra=REF)
async def renew_self(request: Request) -> Response:
    principal, body = await _caller_and_ref(request)
    if principal.token_id is None:
        raise invalid_input("lease is not renewable")
    if principal.last_use_of is not None:  # revoked by this very use: nothing left to renew
        raise invalid_input("token not found")
    record = await in_thread(tokens.own, services(request).store, principal)
    return await _renewed(request, record, vault_token(request.scope) or "", body.increment)


@router.post("/renew", summary="Renew a token, by its value", openapi_extra=REF)
async def renew(request: Request) -> Response:
    principal, body = await _caller_and_ref(request)
    if not principal.may(AdminOperation.TOKENS):
        raise forbidden("renewing another token needs the admin operation 'tokens'")
    record = await in_thread(vault_tokens.by_token, services(request).store, body.token)
    if record is None:
        raise invalid_input("token not found")
    return await _renewed(request, record, body.token, body.increment)


@router.post(
    "/renew-accessor",
    summary="Renew a token, by its accessor",
    openapi_extra=REF,
)
async def renew_accessor(request: Request) -> Response:
    record, body = await _by_accessor(request)
    return await _renewed(request, _found(record), "", body.increment)


async def _revoke(request: Request, record: Any, orphaning: bool = False) -> Response:
    await _changing(request)
    store = services(request).store
    if orphaning:
        await in_thread(tokens.revoke_orphaning, store, record.id)
    else:
        await in_thread(tokens.revoke, store, record.id)
    note_token(audit_note(request.scope), "revoke", record)
    return no_content()


@router.post("/revoke-self", summary="Revoke the calling token and its children", status_code=204)
async def revoke_self(request: Request) -> Response:
    principal = await caller(request)
    if principal.token_id is None:
        raise invalid_input(
            "the admin token is revoked by rotating it (cipherd admin-token rotate)"
        )
    if principal.last_use_of is not None:  # revoked already, by this very use
        note_token(audit_note(request.scope), "revoke", principal.last_use_of)
        return no_content()
    return await _revoke(request, await in_thread(tokens.own, services(request).store, principal))


@router.post(
    "/revoke",
    summary="Revoke a token, by its value, and its children",
    status_code=204,
    openapi_extra=REF,
)
async def revoke(request: Request) -> Response:
    principal, body = await _caller_and_ref(request)
    record = await in_thread(vault_tokens.by_token, services(request).store, body.token)
    own = record is not None and record.id == principal.token_id
    if not own and not principal.may(AdminOperation.TOKENS):
        raise forbidden("revoking another token needs the admin operation 'tokens'")
    if record is None:  # Vault answers an unknown token's revocation 204 too
        return no_content()
    return await _revoke(request, record)


@router.post(
    "/revoke-orphan",
    summary="Revoke a token, by its value; its children become orphans",
    status_code=204,
    openapi_extra=REF,
)
async def revoke_orphan(request: Request) -> Response:
    principal, body = await _caller_and_ref(request)
    return await _revoke(request, await _find(request, principal, body.token), orphaning=True)


@router.post(
    "/revoke-accessor",
    summary="Revoke a token, by its accessor, and its children",
    status_code=204,
    openapi_extra=REF,
    responses={200: {"description": "no live token has the accessor: Vault's warning"}},
)
async def revoke_accessor(request: Request) -> Response:
    record, _ = await _by_accessor(request)
    if record is None:  # as Vault: a revocation is done when there is nothing left to revoke
        return await answer(request, None, warnings=["No token found with this accessor"])
    return await _revoke(request, record)


@listing(router, "/accessors", "The live tokens' accessors (at most 10,000)")
async def list_accessors(request: Request) -> Response:
    await vault_admin(request, AdminOperation.TOKENS)
    names, more = await in_thread(vault_tokens.accessors, services(request).store)
    cut = f"the first {len(names):,} listed; GET /v1/tokens pages through them all"
    return await answer(request, keys_of(names), warnings=[cut] if more else None)


@listing(router, "/roles", "The token roles")
async def list_roles(request: Request) -> Response:
    await vault_admin(request, AdminOperation.TOKENS)
    names = await in_thread(vault_tokens.role_names, services(request).store)
    return await answer(request, keys_of(names))


@router.get("/roles/{role_name}", summary="A token role")
async def read_role(request: Request, role_name: str) -> Response:
    await vault_admin(request, AdminOperation.TOKENS)
    role = await in_thread(vault_tokens.read_role, services(request).store, role_name)
    return await answer(request, vault_tokens.role_data(role_name, role))


async def _write_role(request: Request, role_name: str) -> Response:
    await vault_admin(request, AdminOperation.TOKENS, change=True)
    body = await read_body(request, VaultTokenRole)
    await in_thread(vault_tokens.write_role, services(request).store, role_name, body)
    audit_note(request.scope).details.update(token_role=role_name[:128])
    return no_content()


written(
    router,
    "/roles/{role_name}",
    _write_role,
    methods=("POST", "PUT"),
    summary="Create or replace a token role",
    name="write_token_role",
    body=VaultTokenRole,
)


@router.delete("/roles/{role_name}", summary="Delete a token role", status_code=204)
async def delete_role(request: Request, role_name: str) -> Response:
    await vault_admin(request, AdminOperation.TOKENS, change=True)
    await in_thread(vault_tokens.delete_role, services(request).store, role_name)
    audit_note(request.scope).details.update(token_role=role_name[:128])
    return no_content()


@router.post(
    "/tidy",
    summary="Remove expired tokens now (they are refused already)",
    status_code=202,
)
async def tidy(request: Request) -> Response:
    await vault_admin(request, AdminOperation.TOKENS, change=True)
    return tidied(request, await in_thread(tokens.tidy, services(request).store), "tokens")


async def _revoke_prefix(request: Request, prefix: str) -> Response:
    await vault_admin(request, AdminOperation.TOKENS, change=True)
    revoked = await in_thread(tokens.revoke_under, services(request).store, prefix)
    audit_note(request.scope).details.update(lease_prefix=prefix[:512], tokens_revoked=revoked)
    return no_content()


for _path, _name in (
    ("/leases/revoke-prefix/{prefix:path}", "revoke_lease_prefix"),
    ("/leases/revoke-force/{prefix:path}", "revoke_lease_prefix_force"),
):
    leases_router.add_api_route(
        _path,
        _revoke_prefix,
        methods=["POST"],
        status_code=204,
        summary="Revoke every token made at a path under the prefix (e.g. auth/approle/login), "
        "with its children (admin operation tokens)",
        name=_name,
    )
