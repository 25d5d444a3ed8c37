"""The mover: records taken from the journal into the store, as the writer made them or read back,
kept in the journal while the store refuses them (up to a bound), whatever their size."""

import json
import os
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops.audit import chain, mover
from app.ops.audit.record import AuditRecord
from app.ops.audit.writer import AuditTrail
from app.settings import Settings
from app.store import AuditQuery, AuditRow, KeyStore, journal
from tests.app.ops.audit.support import LIVE, execute, listed, verify
from tests.conftest import ADMIN_TOKEN


def _stored(store: KeyStore) -> list[AuditRow]:
    rows, _ = store.audit.records(AuditQuery(limit=1000, other_than_chain=chain.REGISTER))
    return list(rows)


def _record(index: int) -> AuditRecord:
    return AuditRecord(
        time=time.time(),
        request_id=f"request-{index}",
        client=None,
        principal="admin",
        operation="random_random",
        key=None,
        key_version=None,
        status=200,
        problem=None,
        details={"padding": "x" * 200},
    )


def test_a_segment_all_in_the_store_gives_way_to_the_next_of_its_chain(
    store: KeyStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mover, "SEGMENT_BYTES", 2000)
    trail = AuditTrail(store, tmp_path / "journal")
    for index in range(10):  # some 400 bytes each: past 2,000 bytes, then moved
        trail.write_now(_record(index))
        trail.flush()
    names = [path.name for path in (tmp_path / "journal").iterdir()]
    (current,) = names
    first_seq = int(current.split(".")[1])
    assert first_seq > 1  # the first segment is gone, its records in the store
    trail.close()
    assert [row.request_id for row in _stored(store)] == [f"request-{i}" for i in range(10)]
    assert chain.verify(store) == (10, [])


def test_a_segment_the_writer_could_not_cut_back_is_moved_and_a_new_chain_follows(
    store: KeyStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trail = AuditTrail(store, tmp_path / "journal")
    trail.write_now(_record(0))
    real_write, real_truncate = journal._write_all, os.ftruncate

    def half(fd: int, data: bytes) -> None:
        real_write(fd, data[: len(data) // 2])
        raise OSError(5, "Input/output error")

    def refused(fd: int, length: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(journal, "_write_all", half)
    monkeypatch.setattr(os, "ftruncate", refused)
    with pytest.raises(Exception, match="could not be written"):
        trail.write_now(_record(1))
    monkeypatch.setattr(journal, "_write_all", real_write)
    monkeypatch.setattr(os, "ftruncate", real_truncate)
    trail.write_now(_record(2))
    trail.close()
    stored = _stored(store)
    # The first chain's whole line and the second chain's: the half line is no record.
    assert [(row.request_id, row.seq) for row in stored] == [("request-0", 1), ("request-2", 1)]
    assert len({row.chain for row in stored}) == 2
    assert list((tmp_path / "journal").iterdir()) == []
    assert chain.verify(store) == (2, [])


def test_the_journals_of_ended_processes_are_adopted_and_live_ones_left(
    store: KeyStore, tmp_path: Path
) -> None:
    directory = journal.open_directory(tmp_path / "journal")
    key = store.audit.mac_key()
    segments = []
    for count in (3, 2):
        written = chain.Chain()
        _, data = written.seal(key, [_record(i) for i in range(count)])
        segment = journal.Segment(directory, written.name, 1, reserve=4096)
        segment.append(data, sync=True)
        segments.append(segment)
    ended, live = segments
    os.close(ended.fd)  # its process is gone: its lock with it
    assert mover.adopt_orphans(store, directory) == 1
    assert [path.name for path in directory.iterdir()] == [live.path.name]
    assert len(_stored(store)) == 3
    assert mover.adopt_orphans(store, directory) == 0  # the live one stays its process's
    live.remove()
    assert chain.verify(store) == (3, [])


def test_a_record_longer_than_the_movers_reads_reaches_the_store(
    admin: TestClient, audited: Settings
) -> None:
    """A quadratic FE keygen records its n x n function: at n = 100 some 120 KiB of digits in
    one record, more than the mover reads at a time."""
    created = admin.post("/v1/keys", json={"name": "q", "type": "qfe-sgp", "dimension": 100})
    assert created.status_code == 201, created.text
    f = [[10**9 + i * 100 + j for j in range(100)] for i in range(100)]
    assert admin.post("/v1/fe/q/keygen", json={"f": f}).status_code == 200
    assert len(json.dumps(f)) > mover.MOVE_CHUNK_BYTES
    keygen = listed(admin, operation="fe_keygen")
    assert keygen[0]["details"]["function"] == f
    assert verify(audited)[1] == []


def test_records_the_store_refuses_wait_in_the_journal_up_to_its_bound(
    audited: Settings,
) -> None:
    """The store refuses records (an outage, a full disk): they stay in the process's journal,
    requests go on until it holds `audit_backlog_bytes`, then answer 503; once the store takes
    records again, every one reaches it, in order, and the trail verifies."""
    settings = audited.model_copy(update={"audit_backlog_bytes": 1 << 16})
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        LIVE.append(client.app.state.services.audit)  # type: ignore[attr-defined]
        assert client.post("/v1/keys", json={"name": "a", "type": "aez"}).status_code == 201
        execute(settings, "ALTER TABLE audit RENAME TO audit_gone")
        try:
            served = 0
            for _ in range(1000):
                answer = client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
                if answer.status_code != 200:
                    break
                served += 1
            # About 64 KiB of records (some 300 bytes each) were taken, then no more.
            assert 100 < served < 400, served
            assert answer.status_code == 503, answer.text
            assert answer.json()["type"] == "urn:cipherd:problem:audit-unavailable"
            assert answer.headers["retry-after"] == "1"
            assert "ciphertext" not in answer.text
        finally:
            LIVE.clear()
            execute(settings, "ALTER TABLE audit_gone RENAME TO audit")
        client.app.state.services.audit.flush(timeout=10)  # type: ignore[attr-defined]
        assert client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="}).status_code == 200
        LIVE.append(client.app.state.services.audit)  # type: ignore[attr-defined]
        assert verify(settings) == (served + 2, [])  # the creation and the last encryption
        LIVE.clear()


@pytest.mark.parametrize("kept", [4096, 3, 0])
def test_the_mover_takes_the_writers_rows_and_reads_the_rest_back(
    audited: Settings, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mover stores the rows the writer kept as they are, and reads back from the journal
    the ones it did not keep (past WRITES_KEPT): the store gets every record either way."""
    monkeypatch.setattr(mover, "WRITES_KEPT", kept)
    monkeypatch.setattr(mover, "MOVE_DELAY_SECONDS", 1.0)  # all twenty written before a move
    reads: list[int] = []
    real_read = journal.Segment.read

    def noted_read(segment: journal.Segment, start: int, limit: int) -> bytes:
        data = real_read(segment, start, limit)
        reads.append(data.count(b"\n"))
        return data

    monkeypatch.setattr(journal.Segment, "read", noted_read)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(audited), headers=headers) as admin:
        trail = admin.app.state.services.audit  # type: ignore[attr-defined]
        for _ in range(20):
            admin.post("/v1/random", json={"bytes": 8}).raise_for_status()
        trail.flush()
    if kept >= 20:
        assert reads == []
    else:
        assert sum(reads) >= 20 - kept
    assert verify(audited) == (20, [])
