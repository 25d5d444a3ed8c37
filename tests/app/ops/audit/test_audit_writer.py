"""The writer: records appended to the journal by group commit, on disk before the answer of a
change (or of every request with `full`), in the audit file too when one is set, and a request
refused with 503 when its record cannot be written."""

import errno
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops.audit import chain, writer
from app.ops.audit.record import AuditRecord
from app.ops.audit.writer import AuditTrail
from app.ops.errors import Problem
from app.settings import Settings
from app.store import AuditHead, AuditQuery, AuditRow, KeyStore, journal
from tests.app.ops.audit.support import listed, verify
from tests.conftest import ADMIN_TOKEN
from tests.e2e.test_full_disk import fill, tmpfs


def _stored(store: KeyStore) -> list[AuditRow]:
    rows, _ = store.audit.records(AuditQuery(limit=1000, other_than_chain=chain.REGISTER))
    return list(rows)


def _appends(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """The journal's appends from now on: how many records each, and whether it was synced."""
    appends: list[tuple[int, bool]] = []
    real_append = journal.Segment.append

    def noted(segment: journal.Segment, data: bytes, sync: bool) -> None:
        appends.append((data.count(b"\n"), sync))
        real_append(segment, data, sync)

    monkeypatch.setattr(journal.Segment, "append", noted)
    return appends


def test_an_action_is_on_disk_in_the_journal_before_it_returns_then_in_the_store(
    store: KeyStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    appends = _appends(monkeypatch)
    trail = AuditTrail(store, tmp_path / "journal")
    trail.record("keys_create_key", principal="cli", key="k", key_version=1)
    (segment,) = (tmp_path / "journal").iterdir()
    (row,) = journal.decode(segment.read_bytes())
    assert (row.seq, row.operation, row.key, row.key_version, row.principal) == (
        1,
        "keys_create_key",
        "k",
        "1",
        "cli",
    )
    assert appends == [(1, True)]  # on disk before `record` returned
    trail.flush()
    assert _stored(store) == [row]
    trail.close()
    assert list((tmp_path / "journal").iterdir()) == []  # all in the store: removed
    assert chain.verify(store) == (1, [])


def test_records_from_many_threads_share_the_journals_writes(
    store: KeyStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    appends = _appends(monkeypatch)
    trail = AuditTrail(store, tmp_path / "journal")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: trail.record("random_random", principal=f"p{i}"), range(200)))
    trail.close()
    assert sum(records for records, _ in appends) == 200
    assert len(appends) < 200  # grouped
    assert sorted(row.seq for row in _stored(store)) == list(range(1, 201))
    assert chain.verify(store) == (200, [])


def test_a_record_the_journal_refuses_is_a_503_and_takes_no_position(
    store: KeyStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trail = AuditTrail(store, tmp_path / "journal")
    trail.record("random_random", principal="admin")
    real_write = journal._write_all

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal, "_write_all", full)
    with pytest.raises(Problem) as refused:
        trail.record("keys_create_key", principal="admin", key="k")
    assert (refused.value.status, refused.value.slug) == (503, "audit-unavailable")
    monkeypatch.setattr(journal, "_write_all", real_write)
    trail.record("keys_create_key", principal="admin", key="k")
    trail.close()
    assert [(row.seq, row.operation) for row in _stored(store)] == [
        (1, "random_random"),
        (2, "keys_create_key"),
    ]
    assert chain.verify(store) == (2, [])


def test_a_trail_whose_file_cannot_be_opened_is_not_writable(
    store: KeyStore, tmp_path: Path
) -> None:
    (tmp_path / "a-directory").mkdir()
    trail = AuditTrail(store, tmp_path / "journal", file=tmp_path / "a-directory")
    with pytest.raises(Problem) as refused, trail.changing():
        raise AssertionError("a change was let through")
    assert refused.value.status == 503
    trail.close()


def test_the_chain_moves_on_once_per_record_whatever_fails_after_the_journal(
    store: KeyStore, tmp_path: Path
) -> None:
    """With the audit file on a device that takes no write, each record is refused, but its
    position is spent: the next record does not take it again (two records of one position
    would leave one of them out of the store)."""
    trail = AuditTrail(store, tmp_path / "journal", file=Path("/dev/full"))
    for index in range(5):
        with pytest.raises(Problem):
            trail.record("random_random", principal="admin", details={"index": index})
    (segment,) = (tmp_path / "journal").iterdir()
    assert [row.seq for row in journal.decode(segment.read_bytes())] == [1, 2, 3, 4, 5]
    trail.flush()
    trail.close()
    assert [json.loads(row.details)["index"] for row in _stored(store)] == [0, 1, 2, 3, 4]
    assert chain.verify(store) == (5, [])


def test_a_record_that_cannot_be_written_fails_its_request(tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    writable = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN)
    with TestClient(create_app(writable), headers=headers) as client:
        assert client.post("/v1/keys", json={"name": "a", "type": "aez"}).status_code == 201
        scoped = client.post(
            "/v1/tokens", json={"keys": ["a"], "operations": ["read"], "ttl_seconds": 600}
        ).json()
        wrap = {"X-Vault-Wrap-TTL": "60"}
        wrapped = client.post("/v1/sys/wrapping/wrap", json={"x": "y"}, headers=wrap).json()
        wrapping_token = wrapped["wrap_info"]["token"]
    # A full disk: the encryption is made, but its answer never leaves.
    full = writable.model_copy(update={"audit_file": Path("/dev/full")})
    with TestClient(create_app(full), headers=headers) as client:
        answer = client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["type"] == "urn:cipherd:problem:audit-unavailable"
        assert "x-request-id" in answer.headers
        assert "ciphertext" not in answer.text
        # A change the file then refuses was made (and is in the journal): the 503 says so.
        rotated = client.post("/v1/keys/a/rotate")
        assert rotated.status_code == 503
        assert "was made" in rotated.json()["detail"]
        assert "do not repeat it" in rotated.json()["detail"]
    # A file that cannot be opened: no change is made.
    (tmp_path / "a-directory").mkdir()
    unopenable = writable.model_copy(update={"audit_file": tmp_path / "a-directory"})
    with TestClient(create_app(unopenable), headers=headers) as client:
        for answer in (
            client.post("/v1/keys", json={"name": "b", "type": "aez"}),
            client.post("/v1/keys/a/rotate"),
            client.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]}),
            client.post("/v1/sys/keyring/rotate"),
            client.post(
                "/v1/tokens/self/renew",
                json={"increment_seconds": 3600},
                headers={"Authorization": f"Bearer {scoped['token']}"},
            ),
            client.post("/v1/sys/wrapping/unwrap", json={"token": wrapping_token}),
            client.post("/v1/sys/wrapping/wrap", json={"x": "z"}, headers=wrap),
            client.get("/v1/auth/token/lookup-self", headers=wrap),
        ):
            # Refused before the change (in Vault's error form on Vault's paths).
            assert answer.status_code == 503, answer.text
            assert "could not be written, so it was not carried out" in answer.text
    with TestClient(create_app(writable), headers=headers) as client:
        assert client.get("/v1/keys/b").status_code == 404
        assert client.get("/v1/keys/a").json()["latest_version"] == 2  # the one made above
        assert [t["id"] for t in client.get("/v1/tokens").json()["tokens"]] == [scoped["id"]]
        assert client.get("/v1/sys/keyring").json()["term"] == 1
        assert client.get(f"/v1/tokens/{scoped['id']}").json()["expires_at"] == scoped["expires_at"]
        # Not spent: the wrapped answer is still there, once.
        unwrapped = client.post("/v1/sys/wrapping/unwrap", json={"token": wrapping_token})
        assert unwrapped.json()["data"] == {"x": "y"}, unwrapped.text


@pytest.mark.parametrize("sync", ["changes", "full"])
def test_concurrent_requests_share_writes_and_moves(
    audited: Settings, sync: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group commit: with every record on disk before its answer (`full`), the records of
    concurrent requests share journal writes and their syncs; in either mode they reach the
    store in fewer transactions still. (With `changes`, a record that need not wait for the
    disk is written alone, at once.)"""
    appends = _appends(monkeypatch)
    moves: list[int] = []
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    settings = audited.model_copy(update={"audit_sync": sync})
    with TestClient(create_app(settings), headers=headers) as admin:
        trail = admin.app.state.services.audit  # type: ignore[attr-defined]
        original_move = trail._store.audit.append

        def counting_move(rows: list[AuditRow], head: AuditHead) -> None:
            moves.append(len(rows))
            original_move(rows, head)

        trail._store.audit.append = counting_move
        admin.post("/v1/keys", json={"name": "a", "type": "aez"})
        with ThreadPoolExecutor(16) as pool:
            answers = list(
                pool.map(
                    lambda _: admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="}),
                    range(200),
                )
            )
        assert all(a.status_code == 200 for a in answers)
        trail.flush()
    writes = [records for records, _ in appends]
    assert sum(writes) == sum(moves) == 201
    if sync == "full":
        assert len(writes) < 150  # grouped: fewer writes than records
        assert max(writes) > 1
    assert len(moves) < 100
    assert verify(audited) == (201, [])


def test_the_file_holds_every_record_as_the_store_does(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, audit_file=path)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        client.post("/v1/keys", json={"name": "a", "type": "aez"})
        client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
        stored = listed(client)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[: len(stored)] == stored
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_only_the_writer_thread_waits_for_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `changes`, the records of reads are written by the event loop and put on disk by the
    writer thread within LAZY_SYNC_SECONDS: the event loop never syncs, and a slow sync (here 2 s)
    does not hold up the reads written meanwhile."""
    syncing: list[str] = []
    slow = threading.Event()
    real_sync = os.fdatasync

    def noted(fd: int) -> None:
        if threading.current_thread().name == "cipherd-audit-mover":
            real_sync(fd)  # before it publishes an anchor: off the requests' way too
            return
        syncing.append(threading.current_thread().name)
        if slow.is_set():
            time.sleep(2)
        real_sync(fd)

    monkeypatch.setattr(os, "fdatasync", noted)
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    plaintext = {"plaintext": "aGk="}
    with TestClient(create_app(settings), headers=headers) as admin:
        admin.post("/v1/keys", json={"name": "a", "type": "aez"}).raise_for_status()
        changes = len(syncing)
        slow.set()
        admin.post("/v1/aez/a/encrypt", json=plaintext).raise_for_status()
        time.sleep(writer.LAZY_SYNC_SECONDS * 3)  # its record's sync has begun
        assert len(syncing) == changes + 1
        started = time.monotonic()
        for _ in range(10):
            admin.post("/v1/aez/a/encrypt", json=plaintext).raise_for_status()
        assert time.monotonic() - started < 1.0
    assert changes >= 1  # the key's creation, on disk before its answer
    assert set(syncing) == {"cipherd-audit"}


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_change_keeps_the_room_it_set_aside_on_a_full_disk(
    store: KeyStore, tmp_path: Path
) -> None:
    """The journal on a full disk: a change sets room aside for its record before it is made;
    reads then use up the rest of the reserve and are refused, and the change's record still
    goes in. Later changes run only while room is left for their records, and every one that ran
    is recorded."""
    with tmpfs(tmp_path / "disk", 1 << 20) as disk:
        trail = AuditTrail(store, disk / "journal", reserve_bytes=64 << 10)
        trail.write_now(_read_record(0))  # the segment begins, with its reserve
        fill(disk / "filler")
        with trail.changing() as record:
            refused = 0
            for index in range(1, 1000):
                try:
                    trail.write_now(_read_record(index))
                except Problem as problem:
                    assert problem.status == 503
                    refused += 1
                    if refused == 3:
                        break
            assert refused == 3, "reads never ran out of room"
            record("keys_rotate_key", principal="admin", key="k", key_version=2)
        # Further changes each set room aside before they run, until there is none.
        admitted = 0
        with pytest.raises(Problem) as no_room:
            for version in range(3, 1000):
                with trail.changing() as record:
                    admitted += 1
                    record("keys_rotate_key", principal="admin", key="k", key_version=version)
        assert no_room.value.status == 503
        (disk / "filler").unlink()
        trail.flush()
        trail.close()
        rotations = [row for row in _stored(store) if row.operation == "keys_rotate_key"]
        assert len(rotations) == 1 + admitted


def _read_record(index: int) -> AuditRecord:
    return AuditRecord(
        time=time.time(),
        request_id=f"read-{index}",
        client=None,
        principal="admin",
        operation="keys_get_key",
        key="k",
        key_version=None,
        status=200,
        problem=None,
        details={"padding": "x" * 200},
    )
