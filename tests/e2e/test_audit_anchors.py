"""What the store alone cannot show, its anchors do: a server's trail tampered with by someone
who can write the database (both audit tables emptied, a chain removed with its entry in the
register, a tail cut under an older head, an older copy of the tables put back), the journal of
a crashed server deleted, and a journal line that is not a record, each reported in words with
its chain and position by `cipherd local audit verify` and by `POST /v1/audit/verify`; a trail
left alone verifies."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import cipherd
from tests.e2e.server import Server, restart, running, start, wait_for

pytestmark = pytest.mark.e2e

# Anchors often, so that a short run publishes several.
ENV = {"CIPHERD_AUDIT_ANCHOR_RECORDS": "5", "CIPHERD_AUDIT_ANCHOR_SECONDS": "0.5"}
ENCRYPT = {"plaintext": "aGk="}


def _sql(data_dir: Path, *statements: str, attach: Path | None = None) -> None:
    connection = sqlite3.connect(data_dir / "cipherd.sqlite3")
    try:
        if attach is not None:
            connection.execute("ATTACH DATABASE ? AS old", (str(attach),))
        with connection:
            for statement in statements:
                connection.execute(statement)
    finally:
        connection.close()


def _head(data_dir: Path, chain: str) -> int:
    with sqlite3.connect(data_dir / "cipherd.sqlite3") as connection:
        row = connection.execute("SELECT seq FROM audit_heads WHERE chain = ?", (chain,)).fetchone()
    return 0 if row is None else int(row[0])


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=env | {"CIPHERD_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _anchored(data_dir: Path, chain: str) -> int:
    """The position of `chain`'s latest anchor in the data directory's anchor files."""
    path = data_dir / "audit-anchors" / f"{chain}.anchor"
    if not path.exists():
        return 0
    lines = [line for line in path.read_text().splitlines() if line]
    return max((json.loads(line)["audit_anchor"]["seq"] for line in lines), default=0)


def _both_ways(data_dir: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The report of `cipherd local audit verify` (and its error output), then of `POST
    /v1/audit/verify` on a server started on the data directory."""
    done = _cli(data_dir, "local", "audit", "verify")
    assert "Traceback" not in done.stderr, done.stderr
    local = json.loads(done.stdout)
    assert done.returncode == (0 if local["verified"] else 1), done.stderr
    with running(data_dir) as server, server.client() as client:
        answer = client.post("/v1/audit/verify")
        assert answer.status_code == 200, answer.text
        served = answer.json()
        _the_client_agrees(server, served)
    return local, served, done.stderr


def _the_client_agrees(server: Server, served: dict[str, Any]) -> None:
    """The SDK's and the `cipherd` command's verification say what the service said."""
    with cipherd.Client(server.url, token=server.admin_token) as sdk:
        verification = sdk.audit.verify()
    assert verification.verified is served["verified"]
    faults = [(f.chain, f.seq, f.problem) for f in verification.faults]
    assert faults == [(f["chain"], f["seq"], f["problem"]) for f in served["faults"]]
    command = subprocess.run(
        [str(Path(sys.executable).parent / "cipherd"), "audit", "verify"],
        env=os.environ | {"CIPHERD_ADDR": server.url, "CIPHERD_TOKEN": server.admin_token},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert command.returncode == (0 if served["verified"] else 1), command.stderr
    assert json.loads(command.stdout)["faults"] == served["faults"]
    for fault in served["faults"]:
        place = f"chain {fault['chain']} record {fault['seq']}: " if fault["seq"] else ""
        assert f"{place}{fault['problem']}" in command.stderr


def _fault(report: dict[str, Any], chain: str, seq: int, begins: str) -> str:
    """The problem the report gives at `chain` and `seq` that begins with `begins` (it must
    give one)."""
    found = [
        f["problem"]
        for f in report["faults"]
        if (f["chain"], f["seq"]) == (chain, seq) and f["problem"].startswith(begins)
    ]
    assert found, f"no fault at chain {chain} record {seq}: {report['faults']}"
    assert report["verified"] is False
    return found[0]


@dataclass(frozen=True)
class Trail:
    """A server's stopped data directory; a copy of its store from midway (`snapshot`); the
    server's chain, where it stood at the snapshot and at the end; the chain of a command run
    after the snapshot."""

    data_dir: Path
    snapshot: Path
    served: str
    served_then: int
    served_end: int
    command: str


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trail]:
    root = tmp_path_factory.mktemp("anchors")
    data_dir, snapshot = root / "data", root / "snapshot.sqlite3"
    with running(data_dir, env=ENV) as server, server.client() as client:
        assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        for _ in range(10):
            assert client.post("/v1/aez/k/encrypt", json=ENCRYPT).status_code == 200
        served = client.get("/v1/audit").json()["records"][0]["chain"]  # in the store now
        with (
            sqlite3.connect(data_dir / "cipherd.sqlite3") as source,
            sqlite3.connect(snapshot) as copy,
        ):
            source.backup(copy)
        for _ in range(10):
            assert client.post("/v1/aez/k/encrypt", json=ENCRYPT).status_code == 200
        created = _cli(data_dir, "local", "keys", "create", "b", "aez")
        assert created.returncode == 0, created.stderr
        records = client.get("/v1/audit", params={"key": "b"}).json()["records"]
        command = records[0]["chain"]
    with sqlite3.connect(snapshot) as copy:
        (served_then,) = copy.execute(
            "SELECT seq FROM audit_heads WHERE chain = ?", (served,)
        ).fetchone()
    yield Trail(data_dir, snapshot, served, served_then, _head(data_dir, served), command)


def _tampered(trail: Trail, tmp_path: Path, *statements: str) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(trail.data_dir, data_dir)
    _sql(data_dir, *statements, attach=trail.snapshot)
    return data_dir


def test_a_trail_left_alone_verifies_against_its_anchors(trail: Trail, tmp_path: Path) -> None:
    local, served, _ = _both_ways(_tampered(trail, tmp_path))
    for report in (local, served):
        assert report["verified"] is True, report["faults"]
        assert report["faults"] == []
        assert report["records"] >= 22  # the key, 20 encryptions, the command's key
        assert report["anchor"]["source"] == "file"
        assert report["anchor"]["chains"] >= 2  # the server's and the command's


def test_both_tables_emptied(trail: Trail, tmp_path: Path) -> None:
    data_dir = _tampered(trail, tmp_path, "DELETE FROM audit", "DELETE FROM audit_heads")
    local, served, errors = _both_ways(data_dir)
    for report in (local, served):
        problem = _fault(report, trail.served, 1, "gone from the store: its anchor of ")
        assert f"says it held {trail.served_end} records" in problem
        assert "emptied" in problem
        _fault(report, trail.command, 1, "gone from the store: its anchor of ")
    assert f"chain {trail.served} record 1: gone from the store" in errors


def test_a_chain_removed_with_its_entry_in_the_register(trail: Trail, tmp_path: Path) -> None:
    data_dir = _tampered(
        trail,
        tmp_path,
        f"DELETE FROM audit WHERE chain = '{trail.command}'",
        f"DELETE FROM audit_heads WHERE chain = '{trail.command}'",
        # The register as it was before the command's chain was named in it.
        "DELETE FROM audit WHERE chain = '@chains' AND seq >"
        " (SELECT seq FROM old.audit_heads WHERE chain = '@chains')",
        "UPDATE audit_heads SET seq = o.seq, tag = o.tag FROM old.audit_heads o"
        " WHERE audit_heads.chain = '@chains' AND o.chain = '@chains'",
    )
    local, served, errors = _both_ways(data_dir)
    for report in (local, served):
        problem = _fault(report, trail.command, 1, "gone from the store: its anchor of ")
        assert "the chain was removed" in problem
    assert f"chain {trail.command} record 1: gone from the store" in errors


def test_a_tail_cut_under_an_older_head(trail: Trail, tmp_path: Path) -> None:
    data_dir = _tampered(
        trail,
        tmp_path,
        f"DELETE FROM audit WHERE chain = '{trail.served}' AND seq > {trail.served_then}",
        "UPDATE audit_heads SET seq = o.seq, tag = o.tag FROM old.audit_heads o"
        f" WHERE audit_heads.chain = '{trail.served}' AND o.chain = '{trail.served}'",
    )
    local, served, errors = _both_ways(data_dir)
    first = trail.served_then + 1
    for report in (local, served):
        missing = f"records {first} to {trail.served_end} are missing: "
        problem = _fault(report, trail.served, first, missing)
        assert f"says the chain reached record {trail.served_end}" in problem
    assert f"chain {trail.served} record {first}: records {first} to" in errors


def test_an_older_copy_of_the_tables_put_back(trail: Trail, tmp_path: Path) -> None:
    data_dir = _tampered(
        trail,
        tmp_path,
        "DELETE FROM audit",
        "DELETE FROM audit_heads",
        "INSERT INTO audit SELECT * FROM old.audit",
        "INSERT INTO audit_heads SELECT * FROM old.audit_heads",
    )
    local, served, _ = _both_ways(data_dir)
    for report in (local, served):
        _fault(report, trail.served, trail.served_then + 1, "records ")
        _fault(report, trail.command, 1, "gone from the store: its anchor of ")


def _killed_while_the_store_refused(server: Server, requests: int) -> str:
    """`requests` encryptions answered while the audit table was away, then SIGKILL once the
    anchors name them all; the server's chain."""
    anchors = server.data_dir / "audit-anchors"
    with server.client() as client:
        assert client.post("/v1/keys", json={"name": "k", "type": "aez"}).status_code == 201
        wait_for(lambda: any(anchors.glob("*.anchor")), what="the server's first anchor")
        (path,) = anchors.glob("*.anchor")
        chain = path.name.removesuffix(".anchor")
        wait_for(lambda: _head(server.data_dir, chain) == 1, what="the creation in the store")
        _sql(server.data_dir, "ALTER TABLE audit RENAME TO audit_away")
        for _ in range(requests):
            assert client.post("/v1/aez/k/encrypt", json=ENCRYPT).status_code == 200
    wait_for(
        lambda: _anchored(server.data_dir, chain) == requests + 1,
        what="an anchor of every record",
    )
    server.kill()
    return chain


def test_the_deleted_journal_of_a_crashed_server(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    chain = _killed_while_the_store_refused(start(data_dir, env=ENV), 25)
    (segment,) = (data_dir / "audit-journal").iterdir()
    segment.unlink()  # 25 answered requests' records, never in the store
    _sql(data_dir, "ALTER TABLE audit_away RENAME TO audit")
    local, served, errors = _both_ways(data_dir)
    for report in (local, served):
        problem = _fault(report, chain, 2, "records 2 to 26 are missing: its anchor of ")
        assert "or the journal that held them was lost" in problem
    assert f"chain {chain} record 2: records 2 to 26 are missing" in errors


def test_a_journal_line_that_is_not_a_record(tmp_path: Path) -> None:
    """Two crashed servers' journals: the first's third line damaged. The records before it
    are stored, its segment set aside and named, the second's journal stored whole."""
    data_dir = tmp_path / "data"
    first = start(data_dir, env=ENV)
    chain = _killed_while_the_store_refused(first, 6)
    damaged = next((data_dir / "audit-journal").glob(f"{chain}.*.journal"))
    lines = damaged.read_bytes().splitlines(keepends=True)
    damaged.write_bytes(b"".join([*lines[:2], b'["not a record"\n', *lines[3:]]))
    first_seq = int(damaged.name.split(".")[1])
    second = restart(first)
    # Its store made a fresh audit table: away too, before its first record, so that its
    # records stay in its journal and it moves no other journal.
    _sql(data_dir, "ALTER TABLE audit RENAME TO audit_fresh")
    with second.client() as client:
        ids = []
        for _ in range(4):
            answer = client.post("/v1/aez/k/encrypt", json=ENCRYPT)
            assert answer.status_code == 200
            ids.append(answer.headers["x-request-id"])
    second.kill()
    assert len(list((data_dir / "audit-journal").glob("*.journal"))) == 2
    _sql(data_dir, "DROP TABLE audit_fresh", "ALTER TABLE audit_away RENAME TO audit")

    local, served, errors = _both_ways(data_dir)
    set_aside = damaged.with_name(damaged.name + ".set-aside")
    assert set_aside.exists() and not damaged.exists()
    for report in (local, served):
        begins = f"the journal segment {set_aside} was set aside: its line 3 is not a record"
        problem = _fault(report, chain, first_seq + 2, begins)
        assert "the 2 records before that line reached the store" in problem
    assert f"{damaged.name} set aside as {set_aside.name}" in errors  # the log names it
    listed = json.loads(_cli(data_dir, "local", "audit", "list", "--limit", "1000").stdout)
    stored = {record["request_id"] for record in listed["records"]}
    assert set(ids) <= stored  # the second server's journal, adopted whole
