"""The index of a mount's certificate rules (app.ops.cert_auth.CertRules, RuleIndex): made
again only when the store's revision of the rules moves on, reusing the rules that did not
change; a rule's globs compiled into one expression that matches as the globs do."""

import datetime
import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from app.ops import cert_auth
from app.ops.errors import Problem
from app.store import KeyStore, open_store
from tests.app.store.stores import root

NOW = datetime.datetime.now(datetime.UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KeyStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}", root())
    yield opened
    opened.close()


class CountedReads:
    """The store's reads of every rule of a mount, counted."""

    def __init__(self, store: KeyStore) -> None:
        self.count = 0
        self._all = store.auth_roles.all
        store.auth_roles.all = self  # type: ignore[method-assign]

    def __call__(self, mount: str) -> dict[str, dict[str, Any]]:
        self.count += 1
        return self._all(mount)


def certificate(
    common_name: str, issuer: str | None = None, key: ec.EllipticCurvePrivateKey | None = None
) -> x509.Certificate:
    """A CA's certificate of `key` (no issuer), or a client's that its issuer signed with `key`
    (a new key when None)."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    own = key if issuer is None else ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer or common_name)]))
        .public_key(own.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(minutes=5))
        .not_valid_after(NOW + datetime.timedelta(days=1))
    )
    if issuer is None:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        ).add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return builder.sign(key, hashes.SHA256())


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def rule(certificates: str, **names: list[str]) -> dict[str, Any]:
    return cert_auth.rule_of({}, {"certificate": certificates, "token_policies": "p", **names})


def test_the_index_is_made_again_only_when_the_rules_change(store: KeyStore) -> None:
    reads = CountedReads(store)
    rules = cert_auth.CertRules()
    ca = pem(certificate("ca"))
    store.auth_roles.put("auth_cert_1", "a", rule(ca), most=10)
    store.auth_roles.put("auth_cert_1", "b", rule(ca), most=10)
    first = rules.index(store, "auth_cert_1")
    assert rules.index(store, "auth_cert_1") is first
    assert reads.count == 1
    store.auth_roles.put("auth_cert_1", "b", rule(ca, allowed_common_names=["x"]), most=10)
    second = rules.index(store, "auth_cert_1")
    assert reads.count == 2
    # The rule that did not change is not parsed again; the one that did is.
    assert second.rules["a"] is first.rules["a"]
    assert second.rules["b"] is not first.rules["b"]
    store.auth_roles.delete("auth_cert_1", "a")
    assert set(rules.index(store, "auth_cert_1").rules) == {"b"}
    assert reads.count == 3


def test_a_process_keeps_the_indexes_of_a_bounded_number_of_mounts(store: KeyStore) -> None:
    reads = CountedReads(store)
    rules = cert_auth.CertRules()
    mounts = [f"auth_cert_{number}" for number in range(cert_auth.MAX_INDEXED_MOUNTS + 1)]
    for mount in mounts:
        rules.index(store, mount)
    rules.index(store, mounts[-1])
    assert reads.count == len(mounts)
    rules.index(store, mounts[0])  # the least recently used: dropped, read again
    assert reads.count == len(mounts) + 1


def test_a_rule_s_globs_are_compiled_when_a_login_first_reaches_it() -> None:
    """Only the rules trusting the client's issuer are tried, and only theirs are compiled: a
    change to a large rule set does not stall the next login while every rule compiles."""
    key = ec.generate_private_key(ec.SECP256R1())
    others = {
        f"other-{i}": rule(pem(certificate(f"other-ca-{i}")), allowed_common_names=["x-*"])
        for i in range(20)
    }
    mine = rule(pem(certificate("ca", key=key)), allowed_common_names=["api*"])
    index = cert_auth.RuleIndex(1, {**others, "mine": mine})
    client = certificate("api", issuer="ca", key=key).public_bytes(serialization.Encoding.DER)
    matched, _ = cert_auth.matching_rule(
        cert_auth.client_certificate(client), index, NOW.timestamp()
    )
    assert matched == "mine"
    compiled = {name for name, made in index.rules.items() if "patterns" in vars(made)}
    assert compiled == {"mine"}


@pytest.mark.parametrize(
    ("names", "refusal"),
    [
        (["a" * 256], "names of at most 255 characters"),
        (["a" * 255] * 33, "at most 8192 characters in all"),
        (["a**"] * 129, "at most 256 wildcards in all"),
        (["[ab]?"] * 129, "at most 256 wildcards in all"),
    ],
)
def test_a_rule_s_names_are_bounded_in_characters_and_wildcards(
    names: list[str], refusal: str
) -> None:
    """A rule's globs are compiled at the first login that tries the rule, which needs no token:
    256 globs of 16,000 characters took 42 s to compile."""
    ca = pem(certificate("ca"))
    for field in FIELDS:
        with pytest.raises(Problem) as refused:
            rule(ca, **{field: names})
        assert refused.value.detail == f"{field}: {refusal}"
    for allowed in (["a" * 255] * 32, ["*" + "a" * 30] * 256):  # at the bounds
        compiled = cert_auth.RuleIndex(1, {"r": rule(ca, allowed_dns_sans=allowed)}).rules["r"]
        assert compiled.patterns[1] is not None


def test_a_certificate_whose_subject_pyca_cannot_decode_leaves_the_other_rules_be() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate("zzzzzz")
    der = ca.public_bytes(serialization.Encoding.DER).replace(b"zzzzzz", b"\xff\xfezzzz")
    undecodable = x509.load_der_x509_certificate(der)
    with pytest.raises(ValueError):
        _ = undecodable.subject
    good_ca = certificate("good-ca", key=key)
    index = cert_auth.RuleIndex(1, {"a": rule(pem(undecodable)), "b": rule(pem(good_ca))})
    client = certificate("api", issuer="good-ca", key=key).public_bytes(serialization.Encoding.DER)
    matched, _ = cert_auth.matching_rule(
        cert_auth.client_certificate(client), index, NOW.timestamp()
    )
    assert matched == "b"


GLOBS = ["api.*.internal", "x?z", "[ab]c", "[!a]d", "*-*-*", "plain", "a*b*c*d"]
NAMES = ["api.pay.internal", "api.internal", "xyz", "xz", "ac", "cc", "ad", "bd", "a-b-c"]
NAMES += ["plain", "PLAIN", "aXbXcXd", "abc", "", "a\nb"]
FIELDS = ("allowed_common_names", "allowed_dns_sans", "allowed_uri_sans")


@pytest.mark.parametrize("globs", [[], *([glob] for glob in GLOBS), GLOBS])
def test_a_rule_s_globs_match_as_fnmatch_matches_each(globs: list[str]) -> None:
    ca = certificate("ca")
    client = certificate("c", "ca")
    for field in ("allowed_common_names", "allowed_dns_sans", "allowed_uri_sans"):
        compiled = cert_auth.RuleIndex(1, {"r": rule(pem(ca), **{field: globs})}).rules["r"]
        for name in NAMES:
            names = [(name,) if field == other else () for other in FIELDS]
            shown = cert_auth.ClientCertificate(client, "CN=c", *names)
            expected = not globs or any(fnmatch.fnmatchcase(name, glob) for glob in globs)
            assert compiled.allows(shown) == expected, (field, name)
