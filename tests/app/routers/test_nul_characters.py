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
