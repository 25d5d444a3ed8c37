"""Vault's fields that narrow a login role which cipherd does not enforce (a certificate rule's
organizational units, required extensions, e-mail SANs, OCSP; a JWT role's address bounds and
`max_age`): a role that gives one is refused, never kept wider than its author wrote; the same
field left empty, as tools that send every field do, is taken."""

import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi.testclient import TestClient


def ca_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clients")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


CERT_FIELDS: dict[str, Any] = {
    "allowed_names": ["payments"],
    "allowed_email_sans": "ops@example.com",
    "allowed_organizational_units": ["payments"],
    "required_extensions": ["1.2.3.4:*"],
    "allowed_metadata_extensions": ["1.2.3.5"],
    "ocsp_enabled": True,
    "bound_cidrs": "10.0.0.0/8",
}
JWT_FIELDS: dict[str, Any] = {
    "bound_cidrs": ["10.0.0.0/8"],
    "max_age": "1h",
}
EMPTY = ("", [], None, False, "false", 0, "0s")


@pytest.fixture
def cert_mount(client: TestClient) -> str:
    assert client.post("/v1/sys/auth/cert", json={"type": "cert"}).status_code == 204
    return ca_pem()


@pytest.mark.parametrize(("field", "value"), CERT_FIELDS.items())
def test_a_certificate_rule_narrowed_by_an_unenforced_field_is_refused(
    client: TestClient, cert_mount: str, field: str, value: Any
) -> None:
    rule = {"certificate": cert_mount, "token_policies": "default", field: value}
    answer = client.post("/v1/auth/cert/certs/payments", json=rule)
    assert answer.status_code == 400, answer.text
    assert f"{field}: not enforced by this service" in answer.json()["errors"][0]
    assert client.get("/v1/auth/cert/certs/payments").status_code == 404  # nothing written
    for empty in EMPTY:
        taken = client.post("/v1/auth/cert/certs/payments", json={**rule, field: empty})
        assert taken.status_code == 204, (empty, taken.text)


@pytest.mark.parametrize(("field", "value"), JWT_FIELDS.items())
def test_a_jwt_role_narrowed_by_an_unenforced_field_is_refused(
    client: TestClient, field: str, value: Any
) -> None:
    assert client.post("/v1/sys/auth/jwt", json={"type": "jwt"}).status_code == 204
    role = {"role_type": "jwt", "user_claim": "sub", "bound_audiences": ["cipherd"]}
    answer = client.post("/v1/auth/jwt/role/r", json={**role, field: value})
    assert answer.status_code == 400, answer.text
    assert f"{field}: not enforced by this service" in answer.json()["errors"][0]
    assert client.get("/v1/auth/jwt/role/r").status_code == 404
    for empty in EMPTY:
        taken = client.post("/v1/auth/jwt/role/r", json={**role, field: empty})
        assert taken.status_code == 204, (empty, taken.text)
