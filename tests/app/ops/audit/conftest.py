"""Fixtures of the audit trail's tests, each on SQLite and PostgreSQL: a service's settings and
its admin client, and a bare store for the parts tested without a service."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.store import KeyStore, KeyWrapper, open_store
from tests.app.ops.audit.support import LIVE
from tests.conftest import ADMIN_TOKEN, STORES


@pytest.fixture(params=STORES)
def audited(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url)


@pytest.fixture
def admin(audited: Settings) -> Iterator[TestClient]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(audited), headers=headers) as client:
        LIVE.append(client.app.state.services.audit)  # type: ignore[attr-defined]
        yield client
        LIVE.clear()


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    else:
        url = request.getfixturevalue("postgres_url")
    opened = open_store(url, lambda: KeyWrapper(bytes(range(32))))
    yield opened
    opened.close()
