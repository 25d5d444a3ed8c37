"""A change is made only if its audit record is sure to be written: with the audit journal's
disk full and the store on another disk, rotations raced by reads that use up the journal's
reserve either answer 200 with their record or 503 with nothing stored, never a version
stored behind a 503.

The data directory (and so the journal) is a small tmpfs the test mounts (it needs root),
filled by a file of the test's own; the store is SQLite on the ordinary disk or PostgreSQL.
"""

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.e2e.server import running, start
from tests.e2e.test_full_disk import fill, tmpfs

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]

DISK_BYTES = 4 * 1024 * 1024
# Small enough that the reads below use up what the journal set aside within seconds.
RESERVE_BYTES = 256 * 1024
ROTATORS = 4
READERS = 4
SECONDS = 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", DISK_BYTES) as mount_point:
        yield mount_point


@pytest.fixture(params=["sqlite", "postgresql"])
def store_elsewhere(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite3'}"
        return
    name = f"audit_first_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_no_change_is_stored_behind_a_503_on_a_full_journal_disk(
    small_disk: Path, store_elsewhere: str
) -> None:
    env = {
        "CIPHERD_DATABASE_URL": store_elsewhere,
        "CIPHERD_AUDIT_RESERVE_BYTES": str(RESERVE_BYTES),
        "CIPHERD_KEY_CACHE_SECONDS": "0",
    }
    with running(small_disk, env=env) as server, server.client() as admin:
        assert admin.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        fill(small_disk / "filler")

        acknowledged: list[int] = []
        statuses: list[int] = []
        stop = threading.Event()

        def rotate() -> None:
            with server.client() as client:
                while not stop.is_set():
                    answer = client.post("/v1/keys/k/rotate")
                    statuses.append(answer.status_code)
                    if answer.status_code == 200:
                        acknowledged.append(answer.json()["latest_version"])
                    else:
                        assert answer.status_code == 503, answer.text
                        assert answer.headers["retry-after"]

        def read() -> None:
            with server.client() as client:
                while not stop.is_set():
                    answer = client.get("/v1/keys/k")
                    assert answer.status_code in (200, 503), answer.text

        threads = [threading.Thread(target=rotate) for _ in range(ROTATORS)]
        threads += [threading.Thread(target=read) for _ in range(READERS)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + SECONDS
        # Until the reserve is used up and changes have been refused for a while.
        while time.monotonic() < deadline and statuses[-50:].count(503) < 50:
            time.sleep(0.2)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert statuses.count(503) >= 50, "the reserve was never used up"

        (small_disk / "filler").unlink()
        stored = admin.get("/v1/keys/k").json()
        # Every stored version but the first was answered 200, and only those.
        assert sorted(acknowledged) == list(range(2, stored["latest_version"] + 1))

        deadline = time.monotonic() + 10
        while True:
            records = admin.get(
                "/v1/audit", params={"key": "k", "operation": "keys_rotate_key", "limit": 1000}
            ).json()["records"]
            if len([r for r in records if r["status"] == 200]) == len(acknowledged):
                break
            assert time.monotonic() < deadline, "a rotation's record did not reach the store"
            time.sleep(0.2)
        assert sorted(r["key_version"] for r in records if r["status"] == 200) == sorted(
            acknowledged
        )
        verified = admin.post("/v1/audit/verify").json()
        assert verified["verified"] is True, verified


KEYS = 400


def test_no_key_destroyed_by_a_purge_killed_midway_is_without_its_record(tmp_path: Path) -> None:
    """400 keys come due for destruction at once; the service is SIGKILLed at the first
    destruction its maintenance commits, then started again: every key is destroyed, each with a
    `keys_destroy_key` record (a destruction killed before its commit is recorded twice, never
    a destruction without a record)."""
    data = tmp_path / "data"
    names = [f"due-{index:03}" for index in range(KEYS)]
    env = {
        "CIPHERD_DELETION_MIN_WINDOW_SECONDS": "0",
        "CIPHERD_KEY_CACHE_SECONDS": "0",
        "CIPHERD_MAINTENANCE_SECONDS": "3600",  # a pass at the start, then none before the kill
    }
    server = start(data, env=env)
    try:
        with server.client() as admin, ThreadPoolExecutor(4) as pool:

            def made_and_deleted(name: str) -> None:
                answer = admin.post("/v1/keys", json={"name": name, "type": "aez"})
                assert answer.status_code == 201, answer.text
                answer = admin.delete(f"/v1/keys/{name}", params={"window_seconds": 0})
                assert answer.status_code == 202, answer.text

            list(pool.map(made_and_deleted, names))
    finally:
        server.stop()
    # The next start's first maintenance pass destroys them all: killed in its midst.
    server = start(data, env=env)
    try:
        # Polled without a pause: on a disk whose sync is free, the whole purge takes tens of
        # milliseconds.
        deadline = time.monotonic() + 30
        while (left := _keys_left(data)) == KEYS:
            assert time.monotonic() < deadline, "the purge did not begin"
    finally:
        server.kill()
    assert left > 0, "the purge ended before the kill"
    with running(data, env=env) as restarted, restarted.client() as admin:
        deadline = time.monotonic() + 30
        while _keys_left(data):
            assert time.monotonic() < deadline, "the purge did not finish after the restart"
            time.sleep(0.1)
        recorded: set[str] = set()
        query: dict[str, str | int] = {"operation": "keys_destroy_key", "limit": 1000}
        while True:
            page = admin.get("/v1/audit", params=query).json()
            recorded |= {record["key"] for record in page["records"]}
            if page["next"] is None:
                break
            query["after"] = page["next"]
    assert recorded == set(names)


def _keys_left(data: Path) -> int:
    with sqlite3.connect(f"file:{data / 'cipherd.sqlite3'}?mode=ro", uri=True) as database:
        return int(database.execute("SELECT COUNT(*) FROM keys").fetchone()[0])


def test_a_deletion_is_recorded_before_its_answer_waits_out_the_key_caches(
    tmp_path: Path,
) -> None:
    """A deletion's answer waits CIPHERD_KEY_CACHE_SECONDS (other processes' caches), with its
    record already on disk: the service killed during that wait comes back with the key pending
    deletion and the deletion recorded."""
    data = tmp_path / "data"
    env = {"CIPHERD_KEY_CACHE_SECONDS": "10"}
    server = start(data, env=env)
    answers: list[int] = []

    def delete() -> None:
        with server.client() as client, contextlib.suppress(httpx.TransportError):
            answers.append(client.delete("/v1/keys/k").status_code)

    try:
        with server.client() as admin:
            assert admin.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        deleting = threading.Thread(target=delete)
        deleting.start()
        deadline = time.monotonic() + 5
        while _key_state(data, "k") != "pending-deletion":
            assert time.monotonic() < deadline, "the deletion was not stored"
            time.sleep(0.05)
        time.sleep(1)  # into the answer's wait
    finally:
        server.kill()
    deleting.join(timeout=15)
    assert answers == [], "answered before the kill: the wait was not reached"
    with running(data, env=env) as restarted, restarted.client() as admin:
        assert admin.get("/v1/keys/k").json()["state"] == "pending-deletion"
        records = admin.get("/v1/audit", params={"key": "k"}).json()["records"]
        assert ("keys_delete_key", 202) in [(r["operation"], r["status"]) for r in records]


def _key_state(data: Path, name: str) -> str | None:
    with sqlite3.connect(f"file:{data / 'cipherd.sqlite3'}?mode=ro", uri=True) as database:
        row = database.execute("SELECT state FROM keys WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])
