"""What the audit trail's tests share: reading and changing the store behind a service's back
once its records have reached it, verifying, listing, and the command line."""

import base64
import os
import sqlite3
import subprocess
import sys
from functools import partial
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from app.ops import audit
from app.server.bootstrap import root_key
from app.settings import Settings
from app.store import open_store

# The trails of the services under test: their records reach the store a moment after they are
# written (from each process's journal), and what reads or changes the store behind a service's
# back waits for them (`settle`).
LIVE: list[audit.AuditTrail] = []


def settle() -> None:
    for trail in LIVE:
        trail.flush()


def execute(settings: Settings, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Change the store behind the service's back, as someone with the database would."""
    settle()
    if settings.database_url:
        with psycopg.connect(settings.database_url, autocommit=True) as connection:
            connection.execute(sql.replace("?", "%s"), params)
    else:
        with sqlite3.connect(settings.data_dir / "cipherd.sqlite3") as connection:
            connection.execute(sql, params)


def verify(settings: Settings) -> tuple[int, list[audit.ChainFault]]:
    settle()
    store = open_store(settings.resolved_database_url, partial(root_key, settings))
    try:
        return audit.verify(store)
    finally:
        store.close()


def listed(client: TestClient, **query: object) -> list[dict[str, Any]]:
    answer = client.get("/v1/audit", params={"limit": 1000, **query})
    assert answer.status_code == 200, answer.text
    result: list[dict[str, Any]] = answer.json()["records"]
    return result


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    settle()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env["CIPHERD_DATA_DIR"] = str(settings.data_dir)
    if settings.database_url:
        env["CIPHERD_DATABASE_URL"] = settings.database_url
    return subprocess.run(
        [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=60
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
