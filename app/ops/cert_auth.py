"""Logins with TLS client certificates (Vault's `auth/cert`): a workload that connects with a
certificate gets a token with the policies of the rule (`auth/cert/certs/:name`) that trusts it.

A rule holds a certificate to trust (a CA, or the client's own certificate) and the names the
client's certificate may carry (`allowed_common_names`, `allowed_dns_sans`, `allowed_uri_sans`,
globs; empty: any). A login takes the certificate the client showed in the TLS handshake of its
connection (which the server already required to chain to `CIPHERD_TLS_CLIENT_CA_FILE`), verifies
its chain to the rule's certificate with pyca/cryptography's verifier at the store's clock (the
validity dates, the signatures, the CA's constraints; a certificate without a subject
alternative name or an authority key identifier is taken, as Vault takes it), and its names.
The identity's stable name is `cert:<subject>` (RFC 4514).

A login needs no token, so its work must not grow with the mount's rules: a process keeps each
mount's rules parsed, their certificates filed by subject name (`RuleIndex`, made again when
the store's revision of the rules moves on), and a login verifies the client's certificate only
against those filed under its issuer's name (or equal to it): no other could be in its chain,
as the verifier too looks its issuer up by name. Each of those is verified once, however many
rules trust it, and at most `MAX_ISSUERS_PER_LOGIN` of them.
"""

import datetime
import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

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
from app.ops.globs import glob_expression
from app.ops.identity import Identity, IssuedToken, TokenLimits
from app.ops.role_tokens import TOKEN_ALIASES, TOKEN_DEFAULTS, check_token_fields, role_token
from app.store import AuthMount, KeyStore

RULE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
MAX_RULES_PER_MOUNT = 1000
MAX_CERTIFICATES = 16
MAX_NAMES = 256
# A name glob's characters, and a field's characters and wildcards in all: compiled at the
# first login that tries the rule, 256 globs of 16,000 characters took 42 s; within these
# bounds a field takes at most a few milliseconds.
MAX_NAME_CHARACTERS = 255
MAX_FIELD_CHARACTERS = 8192
MAX_FIELD_WILDCARDS = 256
MAX_PEM_BYTES = 64 * 1024
# The trusted certificates one login may verify the client's certificate against: those that
# could be in its chain (filed under its issuer's name, or equal to it), each counted once
# whatever the rules that hold it. A login that names its rule has at most MAX_CERTIFICATES.
MAX_ISSUERS_PER_LOGIN = 32
# The mounts whose rules' index a process keeps (the least recently used is dropped).
MAX_INDEXED_MOUNTS = 64

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
        names = rule[field]
        if len(names) > MAX_NAMES:
            raise invalid_input(f"{field}: at most {MAX_NAMES} names")
        if any(len(name) > MAX_NAME_CHARACTERS for name in names):
            raise invalid_input(f"{field}: names of at most {MAX_NAME_CHARACTERS} characters")
        if sum(len(name) for name in names) > MAX_FIELD_CHARACTERS:
            raise invalid_input(f"{field}: at most {MAX_FIELD_CHARACTERS} characters in all")
        if sum(sum(map(name.count, "*?[")) for name in names) > MAX_FIELD_WILDCARDS:
            raise invalid_input(f"{field}: at most {MAX_FIELD_WILDCARDS} wildcards in all")
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


def _issued(
    certificate: x509.Certificate, anchor: x509.Certificate, moment: datetime.datetime
) -> bool:
    """Whether `certificate` chains to `anchor` (is it, or is signed by it, within its
    constraints) at `moment`."""
    verifier = (
        PolicyBuilder()
        .store(Store([anchor]))
        .time(moment)
        .extension_policies(
            ca_policy=ExtensionPolicy.webpki_defaults_ca(), ee_policy=_CLIENT_POLICY
        )
        .build_client_verifier()
    )
    try:
        verifier.verify(certificate, [])
    except VerificationError:
        return False
    return True


def _filed_under(
    certificate: x509.Certificate, which: Literal["subject", "issuer"]
) -> x509.Name | None:
    """The name a certificate is filed or looked up under; None when pyca cannot decode it (all
    such are filed together, and the verifier, which compares the encoded names, decides)."""
    try:
        return certificate.subject if which == "subject" else certificate.issuer
    except ValueError:
        return None


def _patterns(globs: Sequence[str]) -> re.Pattern[str] | None:
    """One expression for a rule's globs of a kind (None: there are none, any name will do)."""
    return glob_expression(globs) if globs else None


@dataclass(frozen=True)
class _Rule:
    """A rule as logins use it: its settings, its certificates with the name each is filed
    under, and its globs compiled (once a rule, not once a login)."""

    settings: Mapping[str, Any]
    anchors: tuple[tuple[x509.Name | None, x509.Certificate], ...]

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> "_Rule":
        anchors = certificates(settings["certificate"])
        return cls(settings, tuple((_filed_under(a, "subject"), a) for a in anchors))

    @functools.cached_property
    def patterns(self) -> tuple[re.Pattern[str] | None, ...]:
        """Compiled when a login first reaches the rule, not when the index is made: 1,000
        rules of 256 globs each took some 21 s to compile, under the index's lock."""
        return tuple(_patterns(self.settings[field]) for field in _NAME_FIELDS)

    def allows(self, client: ClientCertificate) -> bool:
        """Whether the client's names are among those the rule allows (`_NAME_FIELDS`)."""
        names = (client.common_names, client.dns_sans, client.uri_sans)
        return all(
            pattern is None or any(pattern.match(name) for name in given)
            for pattern, given in zip(self.patterns, names, strict=True)
        )


class RuleIndex:
    """A mount's rules at one revision of them, their certificates filed by subject name."""

    def __init__(
        self,
        revision: int,
        rules: Mapping[str, Mapping[str, Any]],
        previous: "RuleIndex | None" = None,
    ) -> None:
        """Parse `rules`, reusing what `previous` made of each rule that did not change."""
        self.revision = revision
        kept = {} if previous is None else previous.rules
        self.rules: dict[str, _Rule] = {}
        # Each certificate by the name it is filed under, with the rules that hold it.
        self._by_subject: dict[x509.Name | None, dict[x509.Certificate, list[str]]] = {}
        for name, settings in rules.items():
            rule = kept.get(name)
            if rule is None or rule.settings != settings:
                rule = _Rule.of(settings)
            self.rules[name] = rule
            for subject, anchor in rule.anchors:
                holders = self._by_subject.setdefault(subject, {}).setdefault(anchor, [])
                if holders[-1:] != [name]:  # a rule may list a certificate twice
                    holders.append(name)

    def issuers(
        self, certificate: x509.Certificate, name: str = ""
    ) -> Mapping[x509.Certificate, Sequence[str]] | None:
        """The certificates that could be in `certificate`'s chain (filed under its issuer's
        name, or itself), each with the rules that hold it (only the rule `name`, if given);
        None if there are more than MAX_ISSUERS_PER_LOGIN, counted before any is copied."""
        issuer = _filed_under(certificate, "issuer")
        if name:
            rule = self.rules.get(name)
            anchors = () if rule is None else rule.anchors
            return {
                anchor: (name,)
                for subject, anchor in anchors
                if subject == issuer or anchor == certificate
            }
        filed = self._by_subject.get(issuer, {})
        subject = _filed_under(certificate, "subject")
        itself = None if subject == issuer else self._by_subject.get(subject, {}).get(certificate)
        if len(filed) + (itself is not None) > MAX_ISSUERS_PER_LOGIN:
            return None
        return filed if itself is None else {**filed, certificate: itself}


class CertRules:
    """The index of each mount's rules (`RuleIndex`) a process made last, used while the
    store's revision of those rules stays the one it was made at."""

    def __init__(self) -> None:
        self._indexes: OrderedDict[str, RuleIndex] = OrderedDict()
        self._lock = threading.Lock()

    def index(self, store: KeyStore, accessor: str) -> RuleIndex:
        """The index of the mount's rules as they are now (made again if they changed)."""
        revision = store.auth_roles.revision(accessor)
        with self._lock:  # one login parses a change; the others wait for it
            index = self._indexes.get(accessor)
            if index is None or index.revision != revision:
                # Read after the revision: the rules are at least as new as the revision they
                # are filed under, so an index is never kept past a change.
                index = RuleIndex(revision, store.auth_roles.all(accessor), index)
            self._indexes[accessor] = index
            self._indexes.move_to_end(accessor)
            if len(self._indexes) > MAX_INDEXED_MOUNTS:
                self._indexes.popitem(last=False)
            return index


def matching_rule(
    client: ClientCertificate, index: RuleIndex, now: float, name: str = ""
) -> tuple[str, Mapping[str, Any]]:
    """The first rule (by name; only the rule `name`, if given) that trusts the client's
    certificate and allows its names (400 if none: the answer does not say which check failed,
    as Vault's does not; 400 too, before any is verified, if more than MAX_ISSUERS_PER_LOGIN
    certificates could be in its chain)."""
    issuers = index.issuers(client.certificate, name)
    if issuers is None:
        raise refused(
            f"more than {MAX_ISSUERS_PER_LOGIN} trusted certificates could have issued this "
            "certificate: log in with the name of the rule"
        )
    candidates: dict[str, list[x509.Certificate]] = {}
    for anchor, holders in issuers.items():
        for holder in holders:
            candidates.setdefault(holder, []).append(anchor)
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC)
    verified: dict[x509.Certificate, bool] = {}

    def chains_to(anchor: x509.Certificate) -> bool:
        if anchor not in verified:
            verified[anchor] = _issued(client.certificate, anchor, moment)
        return verified[anchor]

    for candidate in sorted(candidates):
        rule = index.rules[candidate]
        if rule.allows(client) and any(chains_to(anchor) for anchor in candidates[candidate]):
            return candidate, rule.settings
    raise refused()


def login(
    store: KeyStore,
    limits: TokenLimits,
    rules: CertRules,
    mount: AuthMount,
    name: str,
    der: bytes | None,
) -> IssuedToken:
    """`POST auth/<mount>/login {name?}` with the connection's client certificate (DER): a
    token for `cert:<subject>` on the policies of the rule `name`, or of the first rule that
    trusts the certificate when no name is given (400 `refused` otherwise)."""
    if der is None:
        raise refused("no client certificate: log in over a TLS connection that shows one")
    client = client_certificate(der)
    index = rules.index(store, mount.accessor)
    matched, rule = matching_rule(client, index, store.clock.now(), name)
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
