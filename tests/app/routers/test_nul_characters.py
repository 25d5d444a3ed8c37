"""A NUL character where the service looks something up by text (an accessor, a lease prefix):
PostgreSQL's text holds none, so such a lookup would fail there (a 500); it finds nothing, on
either store, as it does for any name that was never issued."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import ADMIN_TOKEN, STORES

NUL = "a\x00b"


@pytest.fixture(params=STORES)
def vault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(
        data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url, fe_processes=0
    )
    with TestClient(create_app(settings), headers={"X-Vault-Token": ADMIN_TOKEN}) as client:
        assert client.post("/v1/auth/approle/role/ci", json={"token_ttl": 60}).status_code == 204
        yield client


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/auth/token/lookup-accessor", {"accessor": NUL}),
        ("/v1/auth/token/renew-accessor", {"accessor": NUL}),
        ("/v1/sys/capabilities-accessor", {"accessor": NUL, "paths": ["transit/encrypt/k"]}),
        ("/v1/auth/approle/role/ci/secret-id-accessor/lookup", {"secret_id_accessor": NUL}),
        ("/v1/auth/approle/role/ci/secret-id-accessor/destroy", {"secret_id_accessor": NUL}),
    ],
)
def test_an_accessor_with_a_nul_names_nothing(vault: TestClient, path: str, body: dict) -> None:
    answer = vault.post(path, json=body)
    assert answer.status_code in (400, 404), answer.text
    assert answer.json()["errors"]


def test_a_revocation_of_an_accessor_with_a_nul_revokes_nothing(vault: TestClient) -> None:
    answer = vault.post("/v1/auth/token/revoke-accessor", json={"accessor": NUL})
    assert answer.status_code == 200, answer.text
    assert answer.json()["warnings"] == ["No token found with this accessor"]


def test_a_lease_prefix_with_a_control_character_is_refused(vault: TestClient) -> None:
    answer = vault.put("/v1/sys/leases/revoke-prefix/auth/%00x")
    assert answer.status_code == 400, answer.text


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        # No token needed: a login by a name with a NUL.
        ("POST", "/v1/auth/approle/login", {"role_id": NUL, "secret_id": "x"}),
        ("POST", "/v1/auth/jwt/login", {"role": NUL, "jwt": "a.b.c"}),
        ("POST", "/v1/auth/token/create/a%00b", {}),
        ("POST", "/v1/auth/token/create", {"role_name": NUL}),
        ("GET", "/v1/auth/token/roles/a%00b", None),
        ("DELETE", "/v1/auth/token/roles/a%00b", None),
        ("POST", "/v1/auth/token/create", {"display_name": NUL, "policies": ["default"]}),
        ("GET", "/v1/auth/jwt/role/a%00b", None),
        ("DELETE", "/v1/auth/jwt/role/a%00b", None),
        ("GET", "/v1/auth/cert/certs/a%00b", None),
        ("DELETE", "/v1/auth/cert/certs/a%00b", None),
        ("GET", "/v1/sys/policies/acl/a%00b", None),
        ("DELETE", "/v1/sys/policies/acl/a%00b", None),
        ("GET", "/v1/sys/policy/a%00b", None),
        ("DELETE", "/v1/sys/auth/a%00b", None),
    ],
)
def test_a_name_with_a_nul_is_never_a_500(
    vault: TestClient, method: str, path: str, body: dict | None
) -> None:
    """Wherever a name or a field reaches the store: on PostgreSQL the store refuses the text
    before the query (a 400 on Vault's paths); on SQLite it finds nothing or is stored."""
    if path.startswith("/v1/auth/jwt") or path.startswith("/v1/auth/cert"):
        method_name = path.split("/")[3]
        assert vault.post(f"/v1/sys/auth/{method_name}", json={"type": method_name}).is_success
    answer = vault.request(method, path, json=body)
    assert answer.status_code < 500, answer.text
    if answer.status_code >= 400:  # Vault's shape; a read of nothing has no words, as in Vault
        assert answer.json()["errors"] or answer.status_code == 404
