"""Logins with TLS client certificates (Vault's `auth/cert`): a workload that connects with a
certificate gets a token with the policies of the rule (`auth/cert/certs/:name`) that trusts it.

A rule holds a certificate to trust (a CA, or the client's own certificate) and the names the
client's certificate may carry (`allowed_common_names`, `allowed_dns_sans`, `allowed_uri_sans`,
globs; empty: any). A login takes the certificate the client showed in the TLS handshake of its
connection (which the server already required to chain to `CIPHERD_TLS_CLIENT_CA_FILE`), verifies
its chain to the rule's certificate with pyca/cryptography's verifier at the store's clock (the
validity dates, the signatures, the CA's constraints; a certificate without a subject
alternative name or an authority key identifier is taken, as Vault takes it), then its names.
The identity's stable name is `cert:<subject>` (RFC 4514).
"""

import datetime
import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.x509.verification import (
    Criticality,
    ExtensionPolicy,
    PolicyBuilder,
    Store,
    VerificationError,
)

from app.ops.errors import Problem, invalid_input
from app.ops.identity import Identity, IssuedToken, TokenLimits
from app.ops.role_tokens import TOKEN_ALIASES, TOKEN_DEFAULTS, check_token_fields, role_token
from app.store import AuthMount, KeyStore

RULE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
MAX_RULES_PER_MOUNT = 1000
MAX_CERTIFICATES = 16
MAX_NAMES = 256
MAX_PEM_BYTES = 64 * 1024

# A rule's fields, as Vault names them, with Vault's defaults.
RULE_DEFAULTS: dict[str, Any] = {
    "allowed_common_names": [],
    "allowed_dns_sans": [],
    "allowed_uri_sans": [],
    "certificate": "",
    "display_name": "",
    **TOKEN_DEFAULTS,
}
_NAME_FIELDS = ("allowed_common_names", "allowed_dns_sans", "allowed_uri_sans")
# A client's certificate need not carry a subject alternative name nor an authority key
# identifier, which the web PKI's rules require: a private CA's client is often named by its
# common name alone. The rest of those rules hold (an extended key usage, when present, must
# allow client authentication).
_CLIENT_POLICY = (
    ExtensionPolicy.webpki_defaults_ee()
    .may_be_present(x509.SubjectAlternativeName, Criticality.AGNOSTIC, None)
    .may_be_present(x509.AuthorityKeyIdentifier, Criticality.AGNOSTIC, None)
)
INVALID_CERTIFICATE = "invalid certificate or no client certificate supplied"


def refused(detail: str = INVALID_CERTIFICATE) -> Problem:
    """A login refused (400, as Vault answers it); it counts as a failed authentication."""
    return Problem(400, "login-refused", "Login refused", detail)


def certificates(pem: str) -> list[x509.Certificate]:
    """The certificates of a rule's PEM (400 unless 1 to MAX_CERTIFICATES of them)."""
    if len(pem) > MAX_PEM_BYTES:
        raise invalid_input(f"certificate: at most {MAX_PEM_BYTES} bytes of PEM")
    try:
        found = x509.load_pem_x509_certificates(pem.encode())
    except ValueError:
        raise invalid_input("failed to parse certificate: no PEM certificate in it") from None
    if len(found) > MAX_CERTIFICATES:
        raise invalid_input(f"certificate: at most {MAX_CERTIFICATES} certificates")
    return found


def rule_of(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A rule's settings once `changes` apply to `current`, checked."""
    rule = {**RULE_DEFAULTS, **current}
    for field, value in changes.items():
        field = TOKEN_ALIASES.get(field, field)
        if field in RULE_DEFAULTS and value is not None:
            rule[field] = value
    if not rule["certificate"]:
        raise invalid_input("missing certificate")
    certificates(rule["certificate"])
    for field in _NAME_FIELDS:
        if len(rule[field]) > MAX_NAMES:
            raise invalid_input(f"{field}: at most {MAX_NAMES} names")
    check_token_fields(rule)
    return rule


@dataclass(frozen=True)
class ClientCertificate:
    """The certificate a client showed, and what a rule matches in it."""

    certificate: x509.Certificate
    subject: str
    common_names: tuple[str, ...]
    dns_sans: tuple[str, ...]
    uri_sans: tuple[str, ...]


def client_certificate(der: bytes) -> ClientCertificate:
    """The names of a client's certificate (DER, as the TLS connection gave it)."""
    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        raise refused() from None
    try:
        sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = tuple(sans.get_values_for_type(x509.DNSName))
        uris = tuple(sans.get_values_for_type(x509.UniformResourceIdentifier))
    except x509.ExtensionNotFound:
        dns, uris = (), ()
    common = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return ClientCertificate(
        certificate=certificate,
        subject=certificate.subject.rfc4514_string(),
        common_names=tuple(str(attribute.value) for attribute in common),
        dns_sans=dns,
        uri_sans=uris,
    )


def _chains_to(client: ClientCertificate, rule: Mapping[str, Any], now: float) -> bool:
    anchors = certificates(rule["certificate"])
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC)
    verifier = (
        PolicyBuilder()
        .store(Store(anchors))
        .time(moment)
        .extension_policies(
            ca_policy=ExtensionPolicy.webpki_defaults_ca(), ee_policy=_CLIENT_POLICY
        )
        .build_client_verifier()
    )
    try:
        verifier.verify(client.certificate, [])
    except VerificationError:
        return False
    return True


def _allowed(names: Sequence[str], patterns: Sequence[str]) -> bool:
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in patterns)


def _names_match(client: ClientCertificate, rule: Mapping[str, Any]) -> bool:
    return (
        _allowed(client.common_names, rule["allowed_common_names"])
        and _allowed(client.dns_sans, rule["allowed_dns_sans"])
        and _allowed(client.uri_sans, rule["allowed_uri_sans"])
    )


def matching_rule(
    client: ClientCertificate, rules: Mapping[str, Mapping[str, Any]], now: float
) -> tuple[str, Mapping[str, Any]]:
    """The first rule (by name) that trusts the client's certificate and allows its names
    (400 if none: the answer does not say which check failed, as Vault's does not)."""
    for name in sorted(rules):
        rule = rules[name]
        if _chains_to(client, rule, now) and _names_match(client, rule):
            return name, rule
    raise refused()


def login(
    store: KeyStore, limits: TokenLimits, mount: AuthMount, name: str, der: bytes | None
) -> IssuedToken:
    """`POST auth/<mount>/login {name?}` with the connection's client certificate (DER): a
    token for `cert:<subject>` on the policies of the rule `name`, or of the first rule that
    trusts the certificate when no name is given (400 `refused` otherwise)."""
    if der is None:
        raise refused("no client certificate: log in over a TLS connection that shows one")
    client = client_certificate(der)
    if name:
        named = store.auth_roles.get(mount.accessor, name)
        rules = {} if named is None else {name: named}
    else:
        rules = store.auth_roles.all(mount.accessor)
    matched, rule = matching_rule(client, rules, store.clock.now())
    identity = Identity("cert", mount.path, matched, f"cert:{client.subject}"[:512])
    metadata = {
        "cert_name": matched,
        "common_name": client.common_names[0] if client.common_names else "",
        "serial_number": str(client.certificate.serial_number),
        "subject_key_id": _key_id(client.certificate),
        "authority_key_id": _authority_key_id(client.certificate),
    }
    return role_token(store, limits, identity, rule, metadata)


def _key_id(certificate: x509.Certificate) -> str:
    try:
        ski = certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return ""
    return ":".join(f"{byte:02x}" for byte in ski.digest)


def _authority_key_id(certificate: x509.Certificate) -> str:
    try:
        aki = certificate.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    except x509.ExtensionNotFound:
        return ""
    return ":".join(f"{byte:02x}" for byte in aki.key_identifier or b"")
