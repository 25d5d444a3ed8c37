"""Certificate logins over real TLS: a `cipherd serve` with mutual TLS whose client CA file
holds two CAs made by pyca; a rule trusts one of them (or one client's own certificate) and
allows some names; the client certificate of each connection decides the login."""

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.e2e.server import Server, running
from tests.e2e.test_tls import Authority, Issued

pytestmark = pytest.mark.e2e


def issue(ca: Authority, name: str, dns: str | None = None) -> Issued:
    """A client certificate for `name` (its common name), with a DNS name when given."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme"),
            x509.NameAttribute(NameOID.COMMON_NAME, name),
        ]
    )
    builder = ca._builder(subject, key.public_key()).add_extension(
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
    )
    if dns is not None:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False
        )
    issued = Issued(ca.directory / f"{name}.crt", ca.directory / f"{name}.key")
    issued.cert.write_bytes(
        builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    )
    issued.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return issued


class Pki:
    def __init__(self, directory: Path) -> None:
        self.ca = Authority(directory, "payments-ca")
        self.other_ca = Authority(directory, "other-ca")
        self.server = self.ca.issue("server", server=True)
        self.admin = issue(self.ca, "operator")
        self.api = issue(self.ca, "payments-api", dns="api.payments.internal")
        self.billing = issue(self.ca, "billing-api", dns="api.billing.internal")
        self.stranger = issue(self.other_ca, "payments-stranger", dns="api.payments.internal")
        # The server takes clients of both CAs at the TLS layer; the rules decide the logins.
        self.client_cas = directory / "client-cas.pem"
        self.client_cas.write_bytes(self.ca.cert.read_bytes() + self.other_ca.cert.read_bytes())

    def client(self, server: Server, who: Issued) -> httpx.Client:
        context = ssl.create_default_context(cafile=self.ca.cert)
        context.load_cert_chain(who.cert, who.key)
        return httpx.Client(base_url=server.url, verify=context, timeout=30)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    return Pki(directory)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[Server]:
    args = [
        "--tls-cert-file",
        str(pki.server.cert),
        "--tls-key-file",
        str(pki.server.key),
        "--tls-client-ca-file",
        str(pki.client_cas),
    ]
    with running(
        tmp_path_factory.mktemp("cert") / "data",
        args=args,
        client_options={"verify": _admin_context(pki)},
    ) as started:
        with started.client() as admin:
            assert admin.post("/v1/keys", json={"name": "payments-key", "type": "aez"}).is_success
            policy = {"rules": [{"keys": ["payments-*"], "operations": ["encrypt"]}]}
            assert admin.post("/v1/policies/payments", json=policy).status_code in (200, 201)
            assert admin.post("/v1/sys/auth/cert", json={"type": "cert"}).status_code == 204
            rule = {
                "certificate": pki.ca.cert.read_text(),
                "allowed_common_names": ["payments-*"],
                "allowed_dns_sans": ["*.payments.internal"],
                "token_policies": ["payments"],
                "token_ttl": 600,
            }
            assert admin.post("/v1/auth/cert/certs/payments", json=rule).status_code == 204
        yield started


def _admin_context(pki: Pki) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca.cert)
    context.load_cert_chain(pki.admin.cert, pki.admin.key)
    return context


def test_a_certificate_of_the_trusted_ca_with_allowed_names_logs_in(
    server: Server, pki: Pki
) -> None:
    with pki.client(server, pki.api) as api:
        answer = api.post("/v1/auth/cert/login", json={"name": "payments"})
        assert answer.status_code == 200, answer.text
        auth = answer.json()["auth"]
        assert auth["policies"] == ["default", "payments"]
        assert auth["metadata"]["cert_name"] == "payments"
        assert auth["metadata"]["common_name"] == "payments-api"
        token = {"Authorization": f"Bearer {auth['client_token']}"}
        sealed = api.post("/v1/aez/payments-key/encrypt", json={"plaintext": "eA=="}, headers=token)
        assert sealed.status_code == 200
        ciphertext = sealed.json()["ciphertext"]
        decrypt = api.post(
            "/v1/aez/payments-key/decrypt", json={"ciphertext": ciphertext}, headers=token
        )
        assert decrypt.status_code == 403
        itself = api.get("/v1/tokens/self", headers=token).json()
        assert itself["metadata"]["cert_name"] == "payments"
        assert itself["identity"] == "cert:CN=payments-api,O=Acme"
        # Without a name, the rules are tried: the same one matches.
        assert api.post("/v1/auth/cert/login").status_code == 200
    with server.client() as admin:
        records = admin.get("/v1/audit", params={"operation": "auth-cert_login"}).json()["records"]
    identities = {record["details"].get("token_identity") for record in records}
    assert "cert:CN=payments-api,O=Acme" in identities


def test_a_certificate_outside_the_rule_is_refused(server: Server, pki: Pki) -> None:
    for who in (pki.billing, pki.stranger):  # a name not allowed; a CA not trusted
        with pki.client(server, who) as client:
            for body in ({"name": "payments"}, {}):
                answer = client.post("/v1/auth/cert/login", json=body)
                assert answer.status_code == 400, answer.text
                assert "auth" not in answer.json()
            assert client.post("/v1/auth/cert/login", json={"name": "missing"}).status_code == 400


def test_a_rule_may_trust_one_client_certificate(server: Server, pki: Pki) -> None:
    with server.client() as admin:
        rule = {"certificate": pki.billing.cert.read_text(), "token_policies": "payments"}
        assert admin.post("/v1/auth/cert/certs/billing-only", json=rule).status_code == 204
        assert admin.request("LIST", "/v1/auth/cert/certs").json()["data"]["keys"] == [
            "billing-only",
            "payments",
        ]
    with pki.client(server, pki.billing) as billing:
        answer = billing.post("/v1/auth/cert/login", json={"name": "billing-only"})
        assert answer.status_code == 200, answer.text
    with pki.client(server, pki.api) as api:
        assert api.post("/v1/auth/cert/login", json={"name": "billing-only"}).status_code == 400
    with server.client() as admin:
        assert admin.delete("/v1/auth/cert/certs/billing-only").status_code == 204
        assert admin.get("/v1/auth/cert/certs/billing-only").status_code == 404


def test_rules_are_checked(server: Server, pki: Pki) -> None:
    with server.client() as admin:
        for rule in ({}, {"certificate": "not a certificate"}):
            answer = admin.post("/v1/auth/cert/certs/broken", json=rule)
            assert answer.status_code == 400 and answer.json()["errors"]
        assert admin.get("/v1/auth/cert/certs/payments").json()["data"]["allowed_common_names"] == [
            "payments-*"
        ]


def test_without_tls_there_is_no_certificate_login(tmp_path: Path) -> None:
    with running(tmp_path / "data") as plain:
        with plain.client() as admin:
            assert admin.post("/v1/sys/auth/cert", json={"type": "cert"}).status_code == 204
        answer = httpx.post(f"{plain.url}/v1/auth/cert/login", json={}, timeout=30)
        assert answer.status_code == 400
        assert "client certificate" in answer.json()["errors"][0]
