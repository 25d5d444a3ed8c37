"""Vault's JWT/OIDC auth method (`auth/jwt`, and every mount of type jwt or oidc): the mount's
configuration, its roles and the login (`app.ops.jwt_auth`), in Vault's shapes. Configuration
and roles are the admin operation `auth`; the login takes no token."""

from functools import partial
from typing import Annotated, Any

from fastapi import Request, Response
from pydantic import AfterValidator, Field

from app.http.auth_mounts import (
    RoleTokenFields,
    administered_mount,
    auth_mount_of,
    login_role_routes,
    login_router,
)
from app.http.deps import audit_note, services
from app.http.identity import logged_in
from app.http.vault import answer, no_content, read_body, read_login, vault_body
from app.ops import jwt_auth
from app.ops.errors import Problem
from app.ops.jwks import shown_url
from app.ops.vault_fields import Strings, VaultBody, VaultBool, VaultInt, writable_json
from app.ops.work import in_thread

router = login_router("jwt")
_URL = Field(None, max_length=2048)
_PEM = Field(None, max_length=64 * 1024)


class JwtConfigBody(VaultBody):
    """A JWT mount's configuration: one of the three key sources, and the checks every role
    shares."""

    jwks_url: str | None = _URL
    jwks_ca_pem: str | None = _PEM
    oidc_discovery_url: str | None = _URL
    oidc_discovery_ca_pem: str | None = _PEM
    jwt_validation_pubkeys: Strings | None = Field(None, max_length=jwt_auth.MAX_PUBKEYS)
    bound_issuer: str | None = _URL
    jwt_supported_algs: Strings | None = Field(None, max_length=len(jwt_auth.SUPPORTED_ALGS))
    default_role: str | None = Field(None, max_length=128)


class JwtRoleBody(RoleTokenFields):
    """A JWT role's fields, as Vault names them (the fields given change; the others stay)."""

    unenforced = ("bound_cidrs", "max_age")

    role_type: str | None = Field(None, max_length=16)
    user_claim: str | None = Field(None, max_length=256)
    bound_audiences: Strings | None = Field(None, max_length=jwt_auth.MAX_BOUND_VALUES)
    bound_subject: str | None = Field(None, max_length=1024)
    # Finite numbers only, as for a JsonObject; the bound before the check (which pydantic would
    # otherwise document as a string's `maxLength`).
    bound_claims: (
        Annotated[
            dict[str, Any],
            Field(max_length=jwt_auth.MAX_MAPPINGS),
            AfterValidator(writable_json),
        ]
        | None
    ) = None
    bound_claims_type: str | None = Field(None, max_length=16)
    claim_mappings: dict[str, str] | None = Field(None, max_length=jwt_auth.MAX_MAPPINGS)
    clock_skew_leeway: VaultInt | None = None
    expiration_leeway: VaultInt | None = None
    not_before_leeway: VaultInt | None = None
    allowed_redirect_uris: Strings | None = Field(None, max_length=64)
    groups_claim: str | None = Field(None, max_length=256)
    oidc_scopes: Strings | None = Field(None, max_length=64)
    verbose_oidc_logging: VaultBool | None = None
    user_claim_json_pointer: VaultBool | None = None


class JwtLoginBody(VaultBody):
    role: str = Field("", max_length=128)
    # The size bound is the login's first check, before the token is parsed.
    jwt: str = Field("", max_length=jwt_auth.MAX_JWT_BYTES)


@router.post(
    "/config",
    summary="Configure a JWT mount: its issuer's keys (JWKS URL, OIDC discovery, PEM keys)",
    status_code=204,
    openapi_extra=vault_body(JwtConfigBody),
)
async def write_config(request: Request) -> Response:
    mount = await administered_mount(request, change=True)
    body = await read_body(request, JwtConfigBody)
    ours = services(request)
    changes = body.model_dump(exclude_none=True)
    config = await in_thread(jwt_auth.config_of, changes, ours.issuer_keys)
    await in_thread(ours.auth_mounts.configure, mount.path, config)
    audit_note(request.scope).details.update(auth_mount=mount.path, source=_source_of(config))
    return no_content()


def _source_of(config: dict[str, Any]) -> str:
    """The configuration's key source as the audit record names it: a URL without its userinfo
    and query, which may hold credentials."""
    for field in ("jwks_url", "oidc_discovery_url"):
        if config[field]:
            return f"{field}={shown_url(config[field])}"
    return f"jwt_validation_pubkeys={len(config['jwt_validation_pubkeys'])}"


@router.get("/config", summary="A JWT mount's configuration")
async def read_config(request: Request) -> Response:
    mount = await administered_mount(request)
    if not mount.config:
        raise Problem(404, "not-found", "Not found", "")
    return await answer(request, {**jwt_auth.CONFIG_SHOWN, **mount.config})


login_role_routes(
    router,
    "/role",
    noun="role",
    what="JWT role",
    write_summary="Create or change a JWT role: the claims a token must carry, and what it gets",
    body=JwtRoleBody,
    pattern=jwt_auth.ROLE_NAME,
    merged=jwt_auth.role_of,
    most=jwt_auth.MAX_ROLES_PER_MOUNT,
    shown=jwt_auth.ROLE_SHOWN,
)


@router.post(
    "/login",
    summary="Log in with a JWT: a token with the role's policies (no token needed)",
    openapi_extra=vault_body(JwtLoginBody),
)
async def login(request: Request) -> Response:
    mount = auth_mount_of(request)
    ours = services(request)
    body = await read_login(request, JwtLoginBody)
    audit_note(request.scope).details.update(auth_mount=mount.path, role=body.role[:128])
    return await logged_in(
        request,
        partial(
            jwt_auth.login,
            ours.store,
            ours.token_limits,
            ours.issuer_keys,
            mount,
            body.role,
            body.jwt,
        ),
    )
