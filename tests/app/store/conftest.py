"""The store suites run on both backends: SQLite in a temporary file, and the real PostgreSQL
(marked `postgres`), each test starting from an empty store."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store import KeyStore, open_store
from tests.app.store.stores import root
from tests.conftest import STORES


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[KeyStore]:
    opened = open_store(store_url, root())
    yield opened
    opened.close()
