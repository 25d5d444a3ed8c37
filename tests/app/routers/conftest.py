"""What the router tests share."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.conftest import ADMIN_TOKEN, STORES


@pytest.fixture(params=STORES)
def admin_on_both_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    """An in-process service with the admin token, once on SQLite and once on PostgreSQL."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        yield client
