"""Certificate logins that name no rule, on a mount of many rules: the client's certificate is
verified only against the trusted certificates that could be in its chain, each once, and the
rule chosen is the one the rules' order gives. The client certificate of each request comes in
a header that a wrapper of the app turns into ASGI's TLS extension, as the server fills it in."""

import base64
import datetime
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from app.main import create_app
from app.ops import Services, cert_auth
from app.settings import Settings
from tests.conftest import ADMIN_TOKEN

NOW = datetime.datetime.now(datetime.UTC)
RULES = 1000
SHOWN = "x-test-client-certificate"


class Authority:
    """A CA made here: its name, key and certificate."""

    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.certificate = (
            _builder(self.name, self.name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.pem = self.certificate.public_bytes(serialization.Encoding.PEM).decode()

    def issue(self, common_name: str) -> x509.Certificate:
        """A client certificate for `common_name`."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        return (
            _builder(subject, self.name, key.public_key())
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
            .sign(self.key, hashes.SHA256())
        )


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(minutes=5))
        .not_valid_after(NOW + datetime.timedelta(days=1))
    )


def pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def showing_certificates(app: ASGIApp) -> ASGIApp:
    """`app`, each request's TLS extension holding the certificate of its header SHOWN."""

    async def shown(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            der = dict(scope["headers"]).get(SHOWN.encode())
            if der is not None:
                chain = [ssl.DER_cert_to_PEM_cert(base64.b64decode(der))]
                extensions = {**scope.get("extensions", {}), "tls": {"client_cert_chain": chain}}
                scope = {**scope, "extensions": extensions}
        await app(scope, receive, send)

    return shown


class Verifications:
    """The chains the login verifies (through cert_auth's PolicyBuilder and Store, wrapped):
    how many, and against how many trusted certificates in all."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chains = 0
        self.anchors = 0
        monkeypatch.setattr(cert_auth, "Store", self._store)
        monkeypatch.setattr(cert_auth, "PolicyBuilder", lambda: _Counted(PolicyBuilder(), self))

    def _store(self, certificates: list[x509.Certificate]) -> Store:
        self.anchors += len(certificates)
        return Store(certificates)


class _Counted:
    """A verifier's builder or a verifier, its `verify` calls counted."""

    def __init__(self, wrapped: Any, counts: Verifications) -> None:
        self._wrapped = wrapped
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._wrapped, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "verify":
                self._counts.chains += 1
                return method(*args, **kwargs)
            return _Counted(method(*args, **kwargs), self._counts)

        return call


class Mount:
    """A service with a cert mount at auth/cert, and logins to it with a certificate."""

    def __init__(self, client: TestClient, services: Services) -> None:
        self.client = client
        self.services = services
        assert self.admin("POST", "/v1/sys/auth/cert", {"type": "cert"}) == 204
        mounts = services.store.auth_mounts.all()
        self.accessor = next(mount.accessor for mount in mounts if mount.path.strip("/") == "cert")

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> int:
        """The status of a request with the admin token."""
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        return self.client.request(method, path, json=body, headers=headers).status_code

    def put(self, rules: dict[str, dict[str, Any]]) -> None:
        """Store `rules` (each given Vault's way) in one transaction, as another replica could."""
        with self.services.store.transaction() as held:
            for name, given in rules.items():
                rule = cert_auth.rule_of({}, {"token_policies": ["default"], **given})
                assert held.auth_roles.put(self.accessor, name, rule, cert_auth.MAX_RULES_PER_MOUNT)

    def login(self, certificate: x509.Certificate, name: str = "") -> tuple[int, Any]:
        """The status of a login with `certificate`, and the rule it got or its errors."""
        der = certificate.public_bytes(serialization.Encoding.DER)
        answer = self.client.post(
            "/v1/auth/cert/login",
            json={"name": name} if name else {},
            headers={SHOWN: base64.b64encode(der).decode()},
        )
        body = answer.json()
        if answer.status_code == 200:
            return 200, body["auth"]["metadata"]["cert_name"]
        return answer.status_code, body["errors"]


@contextmanager
def mount_on(tmp_path: Path) -> Iterator[Mount]:
    """A service in `tmp_path` (its throttle of failed logins out of the way)."""
    settings = Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        fe_processes=0,
        auth_failures_burst=100_000,
    )
    app = create_app(settings)
    with TestClient(showing_certificates(app)) as client:
        yield Mount(client, app.state.services)


@pytest.fixture(scope="module")
def authorities() -> dict[str, Authority]:
    """64 CAs of no client here, the clients' CA, and a stranger trusted by no rule."""
    names = [f"other-ca-{number}" for number in range(64)] + ["payments-ca", "stranger-ca"]
    return {name: Authority(name) for name in names}


@pytest.fixture(scope="module")
def self_trusted(authorities: dict[str, Authority]) -> x509.Certificate:
    return authorities["stranger-ca"].issue("trusted-by-itself")


@pytest.fixture(scope="module")
def many(
    tmp_path_factory: pytest.TempPathFactory,
    authorities: dict[str, Authority],
    self_trusted: x509.Certificate,
) -> Iterator[Mount]:
    """RULES rules of 16 certificates each, 15 of the other CAs: one in ten trusts the clients'
    CA too and allows one name, `client-<its number>`, and the clients `shared-*`; the last
    trusts one client's own certificate."""
    rules: dict[str, dict[str, Any]] = {}
    for number in range(RULES):
        others = [authorities[f"other-ca-{(number + k) % 64}"].pem for k in range(16)]
        given: dict[str, Any] = {"certificate": "".join(others)}
        if number % 10 == 0:
            others[0] = authorities["payments-ca"].pem
            given = {
                "certificate": "".join(others),
                "allowed_common_names": [f"client-{number}", "shared-*"],
            }
        if number == RULES - 1:
            others[0] = pem(self_trusted)
            given = {"certificate": "".join(others)}
        rules[f"r-{number:04d}"] = given
    with mount_on(tmp_path_factory.mktemp("many")) as mount:
        mount.put(rules)
        yield mount


def test_a_certificate_of_a_ca_no_rule_trusts_is_verified_against_none(
    many: Mount, authorities: dict[str, Authority], monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Verifications(monkeypatch)
    status, errors = many.login(authorities["stranger-ca"].issue("client-10"))
    assert (status, errors) == (400, [cert_auth.INVALID_CERTIFICATE])
    assert (counted.chains, counted.anchors) == (0, 0)


def test_a_trusted_ca_is_verified_once_whatever_the_rules_that_trust_it(
    many: Mount, authorities: dict[str, Authority], monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Verifications(monkeypatch)
    assert many.login(authorities["payments-ca"].issue("client-500")) == (200, "r-0500")
    assert (counted.chains, counted.anchors) == (1, 1)
    # A name that one in ten rules allows: the first of them by name.
    assert many.login(authorities["payments-ca"].issue("shared-api")) == (200, "r-0000")
    assert (counted.chains, counted.anchors) == (2, 2)
    # A certificate named as issued by the clients' CA, signed by another key: refused after
    # one verification, not one a rule.
    impostor = Authority("payments-ca").issue("shared-api")
    assert many.login(impostor) == (400, [cert_auth.INVALID_CERTIFICATE])
    assert (counted.chains, counted.anchors) == (3, 3)
    # A name no rule allows: nothing to verify.
    assert many.login(authorities["payments-ca"].issue("client-501"))[0] == 400
    assert (counted.chains, counted.anchors) == (3, 3)


def test_a_rule_among_many_is_found_by_its_name_or_the_certificate_it_trusts(
    many: Mount, authorities: dict[str, Authority], self_trusted: x509.Certificate
) -> None:
    shared = authorities["payments-ca"].issue("shared-api")
    assert many.login(shared, name="r-0700") == (200, "r-0700")
    assert many.login(shared, name="r-0701")[0] == 400  # it does not trust the clients' CA
    assert many.login(shared, name="missing")[0] == 400
    assert many.login(self_trusted) == (200, f"r-{RULES - 1:04d}")
    assert many.login(self_trusted, name=f"r-{RULES - 1:04d}")[0] == 200
    # Another certificate of the same CA, in no rule.
    assert many.login(authorities["stranger-ca"].issue("trusted-by-itself"))[0] == 400


def test_a_change_of_the_rules_is_seen_by_the_next_login(
    tmp_path: Path, authorities: dict[str, Authority]
) -> None:
    clients = authorities["payments-ca"]
    api = clients.issue("payments-api")
    with mount_on(tmp_path) as mount:
        assert mount.login(api)[0] == 400
        # Written in the store, as another replica writes: the rules' revision tells.
        mount.put({"payments": {"certificate": clients.pem, "allowed_common_names": ["other"]}})
        assert mount.login(api)[0] == 400
        mount.put({"payments": {"certificate": clients.pem, "allowed_common_names": ["pay*"]}})
        assert mount.login(api) == (200, "payments")
        mount.put({"api": {"certificate": clients.pem}})
        assert mount.login(api) == (200, "api")
        assert mount.admin("DELETE", "/v1/auth/cert/certs/api") == 204
        assert mount.login(api) == (200, "payments")
        # Through the API too, on the mount enabled again: it starts with no rules.
        assert mount.admin("DELETE", "/v1/sys/auth/cert") == 204
        assert mount.admin("POST", "/v1/sys/auth/cert", {"type": "cert"}) == 204
        assert mount.login(api)[0] == 400
        rule = {"certificate": clients.pem, "token_policies": "default"}
        assert mount.admin("POST", "/v1/auth/cert/certs/again", rule) == 204
        assert mount.login(api) == (200, "again")


def test_too_many_certificates_named_as_the_issuer_are_refused_before_any_is_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One more CA of one name (a CA made again with a new key each time) than a login tries.
    rotated = [Authority("rotated-ca") for _ in range(33)]
    client = rotated[-1].issue("api")
    with mount_on(tmp_path) as mount:
        mount.put({f"r-{n:02d}": {"certificate": ca.pem} for n, ca in enumerate(rotated)})
        counted = Verifications(monkeypatch)
        status, errors = mount.login(client)
        assert status == 400
        assert errors == [
            "more than 32 trusted certificates could have issued this certificate: "
            "log in with the name of the rule"
        ]
        assert counted.chains == 0
        assert mount.login(client, name="r-32") == (200, "r-32")
        assert mount.login(client, name="r-31")[0] == 400
        assert counted.chains == 2
        # One fewer: each is tried, the right one found.
        assert mount.admin("DELETE", "/v1/auth/cert/certs/r-00") == 204
        assert mount.login(client) == (200, "r-32")
