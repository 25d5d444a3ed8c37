"""Vault's TLS certificate auth method (`auth/cert`, and every mount of type cert): the rules
that trust client certificates, and the login with the certificate of the request's TLS
connection (`app.ops.cert_auth`), in Vault's shapes. Rules are the admin operation `auth`; the
login takes no token."""

from functools import partial

from fastapi import Request, Response
from pydantic import Field

from app.http.auth_mounts import (
    RoleTokenFields,
    auth_mount_of,
    login_role_routes,
    login_router,
)
from app.http.deps import audit_note, services
from app.http.identity import logged_in
from app.http.tls import client_certificate
from app.http.vault import read_login, vault_body
from app.ops import cert_auth
from app.ops.vault_fields import Strings, VaultBody

router = login_router("cert")
_NAMES = Field(None, max_length=cert_auth.MAX_NAMES)


class CertRuleBody(RoleTokenFields):
    """A rule's fields, as Vault names them (the fields given change; the others stay)."""

    unenforced = (
        "allowed_names",
        "allowed_email_sans",
        "allowed_organizational_units",
        "required_extensions",
        "allowed_metadata_extensions",
        "ocsp_enabled",
        "bound_cidrs",
    )

    certificate: str | None = Field(None, max_length=cert_auth.MAX_PEM_BYTES)
    display_name: str | None = Field(None, max_length=256)
    allowed_common_names: Strings | None = _NAMES
    allowed_dns_sans: Strings | None = _NAMES
    allowed_uri_sans: Strings | None = _NAMES


class CertLoginBody(VaultBody):
    name: str = Field("", max_length=128, description="the rule to log in to; empty: any")


login_role_routes(
    router,
    "/certs",
    noun="rule",
    what="certificate rule",
    write_summary="Create or change a certificate rule: a CA or certificate to trust, the names "
    "allowed, and what a login gets",
    body=CertRuleBody,
    pattern=cert_auth.RULE_NAME,
    merged=cert_auth.rule_of,
    most=cert_auth.MAX_RULES_PER_MOUNT,
    shown={},
)


@router.post(
    "/login",
    summary="Log in with the TLS connection's client certificate: a token with the policies "
    "of the rule that trusts it (no token needed)",
    openapi_extra=vault_body(CertLoginBody),
)
async def login(request: Request) -> Response:
    mount = auth_mount_of(request)
    body = await read_login(request, CertLoginBody)
    audit_note(request.scope).details.update(auth_mount=mount.path, role=body.name)
    ours = services(request)
    der = client_certificate(request.scope)
    return await logged_in(
        request,
        partial(
            cert_auth.login, ours.store, ours.token_limits, ours.cert_rules, mount, body.name, der
        ),
    )
