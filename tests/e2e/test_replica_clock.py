"""One clock for every replica: a replica started with its clock 8 days ahead (a real `cipherd
serve` whose wall clock `wallclock.c`, preloaded, moves) beside a replica whose clock is right,
on one PostgreSQL.

With the default bound on the skew it is not ready, says why in its log and metrics, and its
maintenance makes no change; it still takes "now" from the database, so a token valid for a
minute serves there, and what it records (audit records, a key's dates, a deletion date) is
dated by the database's clock. With a bound wide enough to let it act, it destroys what is due
by the database's clock and nothing that is not: a key scheduled for deletion in 7 days
outlives a key scheduled for now.
"""

import base64
import os
import re
import secrets
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.e2e.server import Server, running, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

WALLCLOCK = Path(__file__).with_name("wallclock.c")
AHEAD_SECONDS = 8 * 86400
WEEK = 7 * 86400
# What a date may be past the database's time and still count as not "in the future": the
# test's own steps.
SLACK_SECONDS = 120


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _database_now(url: str) -> float:
    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
    assert row is not None
    return float(row[0])


def _metric(server: Server, name: str, label: str = "") -> float:
    """The sum of the values of metric `name` (with `label`, e.g. `outcome="done"`)."""
    page = httpx.get(f"{server.url}/metrics", timeout=10).text
    total = 0.0
    for line in page.splitlines():
        series, _, value = line.rpartition(" ")
        if re.fullmatch(rf"{name}(\{{.*\}})?", series) and label in series:
            total += float(value)
    return total


def _passes(server: Server, outcome: str) -> float:
    return _metric(server, "cipherd_maintenance_passes_total", f'outcome="{outcome}"')


@pytest.fixture
def env(postgres_url: str) -> dict[str, str]:
    return {
        "CIPHERD_DATABASE_URL": postgres_url,
        "CIPHERD_ROOT_KEY": _b64(secrets.token_bytes(32)),
        "CIPHERD_ADMIN_TOKEN": "clock-admin-" + secrets.token_urlsafe(16),
        "CIPHERD_DELETION_MIN_WINDOW_SECONDS": "0",
        "CIPHERD_MAINTENANCE_SECONDS": "0.2",
        "CIPHERD_KEY_CACHE_SECONDS": "0.2",
    }


@pytest.fixture(scope="module")
def ahead(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment that puts a process's wall clock 8 days ahead."""
    library = tmp_path_factory.mktemp("wallclock") / "wallclock.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(library), str(WALLCLOCK), "-ldl"],
        check=True,
        timeout=120,
    )
    shifted = subprocess.run(
        [sys.executable, "-c", "import time; print(time.time())"],
        env={**os.environ, "LD_PRELOAD": str(library), "WALLCLOCK_OFFSET_SECONDS": "86400"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(shifted.stdout) - time.time() > 86000  # the library does move the clock
    return {"LD_PRELOAD": str(library), "WALLCLOCK_OFFSET_SECONDS": str(AHEAD_SECONDS)}


@pytest.fixture
def scheduled(tmp_path: Path, env: dict[str, str]) -> str:
    """Keys made by a replica whose clock is right: `doomed` scheduled for deletion in 7 days,
    `rotating` rotated automatically once a day; and a token valid for 60 s, returned."""
    with running(tmp_path / "right", env=env) as right, right.client() as client:
        for name in ("doomed", "rotating"):
            assert client.post("/v1/keys", json={"name": name, "type": "aez"}).status_code == 201
        assert client.delete("/v1/keys/doomed", params={"window_seconds": WEEK}).status_code == 202
        daily = {"auto_rotate_seconds": 86400}
        assert client.patch("/v1/keys/rotating", json=daily).status_code == 200
        scope = {"keys": ["rotating"], "operations": ["encrypt"], "ttl_seconds": 60}
        created = client.post("/v1/tokens", json=scope)
        assert created.status_code == 201, created.text
    # Stopped: what happens from here is the replica ahead's doing.
    return created.json()["token"]


def _assert_dated_by_the_database(client: httpx.Client, url: str, since: float) -> None:
    """Every date the store holds is the database's time or before it."""
    now = _database_now(url)
    with psycopg.connect(url) as connection:
        for table, column in (
            ("keys", "created_at"),
            ("keys", "updated_at"),
            ("key_versions", "created_at"),
            ("tokens", "created_at"),
            ("audit", "time"),
        ):
            row = connection.execute(f"SELECT max({column}) FROM {table}").fetchone()
            assert row is not None and row[0] is not None
            assert since <= row[0] <= now + 1, (table, column, row[0] - now)
    for record in client.get("/v1/audit", params={"limit": 1000}).json()["records"]:
        assert _seconds(record["time"]) <= now + 1, record


def test_a_replica_ahead_is_not_ready_and_changes_nothing_by_its_clock(
    tmp_path: Path, env: dict[str, str], ahead: dict[str, str], scheduled: str
) -> None:
    url = env["CIPHERD_DATABASE_URL"]
    since = _database_now(url) - SLACK_SECONDS
    with (
        running(tmp_path / "ahead", env=env | ahead, ready=False) as server,
        server.client() as client,
        server.client(scheduled) as scoped,
    ):
        assert client.get("/readyz").status_code == 503
        assert "ahead of the database's" in server.output()
        skew = _metric(server, "cipherd_clock_skew_seconds")
        assert abs(skew - AHEAD_SECONDS) < SLACK_SECONDS, skew
        # Its maintenance runs and, its clock too far off, makes no change: not even the
        # destruction of a key that is due by the database's clock.
        assert client.post("/v1/keys", json={"name": "due", "type": "aez"}).status_code == 201
        assert client.delete("/v1/keys/due", params={"window_seconds": 0}).status_code == 202
        passes = _passes(server, "skipped")
        wait_for(lambda: _passes(server, "skipped") >= passes + 5, what="five maintenance passes")
        for name in ("doomed", "due"):
            assert client.get(f"/v1/keys/{name}").json()["state"] == "pending-deletion"
        assert client.get("/v1/keys/rotating").json()["latest_version"] == 1
        assert _passes(server, "done") == 0
        # "Now" is the database's: the token made a moment ago for 60 s is valid here.
        sealed = scoped.post("/v1/aez/rotating/encrypt", json={"plaintext": _b64(b"now")})
        assert sealed.status_code == 200, sealed.text
        # And what it dates, it dates by the database's clock.
        deletion = _seconds(client.get("/v1/keys/due").json()["deletion_date"])
        assert deletion <= _database_now(url) + 1
        assert client.post("/v1/keys", json={"name": "fresh", "type": "aez"}).status_code == 201
        wait_for(
            lambda: client.get("/v1/audit", params={"key": "fresh"}).json()["records"],
            what="the creation's audit record in the store",
        )
        _assert_dated_by_the_database(client, url, since)


def test_a_replica_ahead_allowed_to_act_destroys_what_is_due_by_the_database(
    tmp_path: Path, env: dict[str, str], ahead: dict[str, str], scheduled: str
) -> None:
    url = env["CIPHERD_DATABASE_URL"]
    since = _database_now(url) - SLACK_SECONDS
    lenient = {"CIPHERD_MAX_CLOCK_SKEW_SECONDS": str(30 * 86400)}
    with (
        running(tmp_path / "ahead", env=env | ahead | lenient) as server,
        server.client() as client,
    ):
        assert client.post("/v1/keys", json={"name": "due", "type": "aez"}).status_code == 201
        assert client.delete("/v1/keys/due", params={"window_seconds": 0}).status_code == 202
        # Its maintenance acts: the key due now goes ...
        wait_for(
            lambda: client.get("/v1/keys/due").status_code == 404, what="the due key destroyed"
        )
        # ... and the passes after it leave what the database's clock says is not due.
        passes = _passes(server, "done")
        wait_for(lambda: _passes(server, "done") >= passes + 5, what="five maintenance passes")
        doomed = client.get("/v1/keys/doomed").json()
        assert doomed["state"] == "pending-deletion"
        assert _seconds(doomed["deletion_date"]) > _database_now(url) + WEEK - SLACK_SECONDS
        assert client.get("/v1/keys/rotating").json()["latest_version"] == 1
        with server.client(scheduled) as scoped:
            sealed = scoped.post("/v1/aez/rotating/encrypt", json={"plaintext": _b64(b"now")})
            assert sealed.status_code == 200, sealed.text
        wait_for(
            lambda: client.get(
                "/v1/audit", params={"operation": "keys_destroy_key", "key": "due"}
            ).json()["records"],
            what="the destruction's audit record in the store",
        )
        _assert_dated_by_the_database(client, url, since)
