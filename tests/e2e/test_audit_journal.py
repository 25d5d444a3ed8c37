"""The audit journal survives a crash: records that a SIGKILLed server wrote but had not moved
into the store (the store's audit table was out of reach) reach it afterwards, from the journal
the dead process left, through `cipherd local audit verify`, and so does the next server."""

import base64
import json
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.server import Server, restart, start

pytestmark = pytest.mark.e2e

REQUESTS = 25


def _sql(data_dir: Path, statement: str) -> None:
    with sqlite3.connect(data_dir / "cipherd.sqlite3") as connection:
        connection.execute(statement)


def _cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _killed_after_serving(data_dir: Path) -> tuple[Server, list[str]]:
    """A server SIGKILLed after encryptions it answered while the store refused their records
    (the audit table renamed away, and back after the kill), and their request ids."""
    env = {"CIPHERD_ROOT_KEY": base64.b64encode(secrets.token_bytes(32)).decode()}
    server = start(data_dir, env=env)
    try:
        ids = _served_while_the_table_was_gone(server)
    finally:
        server.kill()
    return server, ids


def _served_while_the_table_was_gone(server: Server) -> list[str]:
    with server.client() as client:
        assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        _sql(server.data_dir, "ALTER TABLE audit RENAME TO audit_away")
        ids = []
        for _ in range(REQUESTS):
            answer = client.post("/v1/aez/k/encrypt", json={"plaintext": "aGk="})
            assert answer.status_code == 200, answer.text
            ids.append(answer.headers["x-request-id"])
    return ids


def test_a_killed_servers_journal_reaches_the_store(tmp_path: Path) -> None:
    server, ids = _killed_after_serving(tmp_path / "data")
    journals = list((server.data_dir / "audit-journal").iterdir())
    assert len(journals) == 1
    assert oct(journals[0].stat().st_mode & 0o777) == "0o600"
    assert len(journals[0].read_bytes().splitlines()) >= REQUESTS
    _sql(server.data_dir, "ALTER TABLE audit_away RENAME TO audit")

    verified = _cli(server, "local", "audit", "verify")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["records"] == REQUESTS + 1  # and the key's creation
    assert list((server.data_dir / "audit-journal").iterdir()) == []  # moved, then removed
    listed = json.loads(_cli(server, "local", "audit", "list", "--operation", "aez_encrypt").stdout)
    assert [r["request_id"] for r in listed["records"]] == ids


def test_the_next_server_moves_a_dead_ones_journal(tmp_path: Path) -> None:
    server, ids = _killed_after_serving(tmp_path / "data")
    _sql(server.data_dir, "ALTER TABLE audit_away RENAME TO audit")
    server = restart(server)
    try:
        with server.client() as client:
            # The new server's first record sends its mover looking for ended processes'
            # journals.
            deadline = time.monotonic() + 10
            while True:
                records = client.get("/v1/audit", params={"operation": "aez_encrypt"}).json()
                if len(records["records"]) >= REQUESTS or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        assert [r["request_id"] for r in records["records"]] == ids
    finally:
        server.stop()
    verified = _cli(server, "local", "audit", "verify")
    assert verified.returncode == 0, verified.stderr
