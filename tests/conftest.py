"""Fixtures shared by the service tests: settings in a temporary data directory, an app, a
client with the admin token, and the key-store backends (SQLite and a real PostgreSQL)."""

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

ADMIN_TOKEN = "test-admin-" + secrets.token_urlsafe(16)
POSTGRES_URL = os.environ.get(
    "CIPHERD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
# The key-store backends a suite runs on: PostgreSQL's run is marked, so that
# `-m "not postgres"` runs the rest where there is no server.
STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        log_format="json",
        # In the worker: a pool process per test app would cost a second each; the pool has
        # tests of its own.
        fe_processes=0,
        # Tests of refusals send many bad tokens from one address; the throttle of failed
        # authentications has tests of its own (tests/e2e/test_abuse.py).
        auth_failures_burst=100_000,
    )


@pytest.fixture
def app(settings: Settings) -> Iterator[FastAPI]:
    yield create_app(settings)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


@pytest.fixture
def anonymous(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped at the end."""
    name = f"cipherd_test_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    base = POSTGRES_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_url(postgres_database: str) -> Iterator[str]:
    """The session's PostgreSQL database, emptied before each test."""
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        # Every table, whatever the schema has grown to hold.
        connection.execute("DROP SCHEMA public CASCADE")
        connection.execute("CREATE SCHEMA public")
    yield postgres_database
