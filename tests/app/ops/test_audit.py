"""The audit trail: one record per request that needs a token, hash chains that `verify` checks,
listing and paging, and fail-closed writes, on SQLite and PostgreSQL."""

import base64
import hmac
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.ops import audit
from app.server.bootstrap import root_key
from app.settings import Settings
from app.store import AuditHead, AuditRow, journal, open_store
from tests.conftest import ADMIN_TOKEN


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(params=["sqlite", "postgres"])
def audited(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, database_url=url)


# The trails of the services under test: their records reach the store a moment after they are
# written (from each process's journal), and what reads or changes the store behind a service's
# back waits for them (`_settle`).
_LIVE: list[audit.AuditTrail] = []


@pytest.fixture
def admin(audited: Settings) -> Iterator[TestClient]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(audited), headers=headers) as client:
        _LIVE.append(client.app.state.services.audit)  # type: ignore[attr-defined]
        yield client
        _LIVE.clear()


def _settle() -> None:
    for trail in _LIVE:
        trail.flush()


def _execute(settings: Settings, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Change the store behind the service's back, as someone with the database would."""
    _settle()
    if settings.database_url:
        with psycopg.connect(settings.database_url, autocommit=True) as connection:
            connection.execute(sql.replace("?", "%s"), params)
    else:
        with sqlite3.connect(settings.data_dir / "cipherd.sqlite3") as connection:
            connection.execute(sql, params)


def _verify(settings: Settings) -> tuple[int, list[audit.ChainFault]]:
    _settle()
    store = open_store(settings.resolved_database_url, partial(root_key, settings))
    try:
        return audit.verify(store)
    finally:
        store.close()


def _records(client: TestClient, **query: object) -> list[dict[str, Any]]:
    answer = client.get("/v1/audit", params={"limit": 1000, **query})
    assert answer.status_code == 200, answer.text
    return answer.json()["records"]


def _mixed_run(client: TestClient) -> tuple[int, list[str]]:
    """Requests of every family, refusals included: how many need a token, and the secrets
    and plaintexts they carried."""
    plaintext = b64(b"the plaintext that must not be recorded")
    secrets_seen = [plaintext, ADMIN_TOKEN]
    calls = 0

    def call(method: str, path: str, expect: int, token: str | None = None, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        answer = client.request(method, path, headers=headers, **kw)
        assert answer.status_code == expect, (path, answer.text)
        return answer.json() if answer.content else None

    call("POST", "/v1/keys", 201, json={"name": "orders", "type": "ecies-secp256k1"})
    call("POST", "/v1/keys", 201, json={"name": "session", "type": "aez"})
    call("POST", "/v1/keys", 201, json={"name": "stats", "type": "ipfe-opt", "dimension": 3})
    sealed = call("POST", "/v1/ecies/orders/encrypt", 200, json={"plaintext": plaintext})
    secrets_seen.append(sealed["ciphertext"])
    sealed_v1 = sealed["ciphertext"]
    call("POST", "/v1/ecies/orders/decrypt", 200, json={"ciphertext": sealed["ciphertext"]})
    sealed = call("POST", "/v1/aez/session/encrypt", 200, json={"plaintext": plaintext})
    secrets_seen.append(sealed["ciphertext"])
    call("POST", "/v1/aez/session/encrypt/batch", 200, json={"items": [{"plaintext": plaintext}]})
    fkey = call("POST", "/v1/fe/stats/keygen", 200, json={"y": [1, 2, 3]})
    secrets_seen.append(fkey["functional_key"])
    call("POST", "/v1/keys/orders/rotate", 200)
    call("GET", "/v1/keys/orders", 200)
    call("GET", "/v1/keys/orders/public", 200)
    token = call("POST", "/v1/tokens", 201, json={"keys": ["orders"], "operations": ["encrypt"]})[
        "token"
    ]
    secrets_seen.append(token)
    call("POST", "/v1/ecies/orders/encrypt", 200, token=token, json={"plaintext": plaintext})
    call("POST", "/v1/aez/session/encrypt", 403, token=token, json={"plaintext": plaintext})
    call("POST", "/v1/ecies/orders/decrypt", 403, token=token, json={"ciphertext": plaintext})
    call("POST", "/v1/aez/session/encrypt", 401, token="cdt_wrong", json={"plaintext": plaintext})
    call("GET", "/v1/keys", 401, token="")
    call("POST", "/v1/ecies/nothing/encrypt", 404, json={"plaintext": plaintext})
    call("POST", "/v1/aez/session/decrypt", 400, json={"ciphertext": plaintext})
    call("POST", "/v1/aez/bad%00name/encrypt", 422, json={"plaintext": plaintext})
    call("POST", "/v1/keys", 201, json={"name": "signer", "type": "ed25519"})
    call("POST", "/v1/keys", 201, json={"name": "mac", "type": "hmac"})
    signed = call("POST", "/v1/sign/signer", 200, json={"message": plaintext})
    check = {"message": plaintext, "signature": signed["signature"]}
    call("POST", "/v1/verify/signer", 200, json=check)
    mac = call("POST", "/v1/hmac/mac", 200, json={"message": plaintext})
    secrets_seen.append(mac["hmac"])
    call("POST", "/v1/hmac/mac/verify", 200, json={"message": plaintext, "hmac": mac["hmac"]})
    datakey = call("POST", "/v1/ecies/orders/datakey", 200, json={})
    secrets_seen.append(datakey["plaintext"])
    call("POST", "/v1/ecies/orders/rewrap", 200, json={"ciphertext": sealed_v1})
    secrets_seen.append(call("POST", "/v1/random", 200, json={"bytes": 32})["random"])
    call("GET", "/healthz", 200)  # needs no token: no record
    calls -= 1
    return calls, secrets_seen


def test_a_mixed_run_gives_one_record_per_request_and_verifies(
    admin: TestClient, audited: Settings
) -> None:
    calls, secrets_seen = _mixed_run(admin)
    records = _records(admin)
    assert len(records) == calls  # the listing's own request is recorded after it answers
    assert _verify(audited) == (calls + 1, [])
    by_operation = {(r["operation"], r["status"]) for r in records}
    assert ("aez_encrypt", 401) in by_operation and ("aez_encrypt", 403) in by_operation
    refused = next(r for r in records if r["status"] == 401)
    assert refused["principal"] is None and refused["problem"] == "unauthorized"
    scoped = next(r for r in records if r["status"] == 403)
    assert scoped["principal"] not in (None, "admin") and scoped["key"] == "session"
    rotate = next(r for r in records if r["operation"] == "keys_rotate_key")
    assert (rotate["key"], rotate["key_version"]) == ("orders", 2)
    for operation, key, version in (
        ("sign_sign", "signer", 1),
        ("verify_verify", "signer", None),
        ("hmac_hmac", "mac", 1),
        ("hmac_verify", "mac", None),
        ("ecies_datakey", "orders", 2),
        ("ecies_rewrap", "orders", 2),
        ("random_random", None, None),
    ):
        record = next(r for r in records if r["operation"] == operation)
        assert (record["key"], record["key_version"], record["status"]) == (key, version, 200)
    keygen = next(r for r in records if r["operation"] == "fe_keygen")
    assert keygen["details"]["dimension"] == 3
    assert len(keygen["details"]["function_sha256"]) == 64
    # The released function, once in the audit trail as in the FE ledger.
    assert keygen["details"]["function"] == [1, 2, 3]
    ledger = admin.get("/v1/fe/stats/functions").json()["functions"]
    assert [f["function"] for f in ledger] == [
        r["details"]["function"] for r in records if r["operation"] == "fe_keygen"
    ]
    failed = next(r for r in records if r["status"] == 400)
    assert failed["problem"] == "authentication-failed"
    malformed = next(r for r in records if r["status"] == 422)
    assert (malformed["key"], malformed["problem"]) == ("bad\\x00name", "invalid-input")
    text = json.dumps(records)
    for secret in secrets_seen:
        assert secret not in text


def test_verify_names_a_changed_byte_and_a_deleted_record(
    admin: TestClient, audited: Settings
) -> None:
    for _ in range(5):
        assert admin.get("/v1/keys").status_code == 200
    records = _records(admin)
    chain, third = records[2]["chain"], records[2]["seq"]
    _execute(
        audited,
        "UPDATE audit SET operation = 'keys_list_keyz' WHERE chain = ? AND seq = ?",
        (chain, third),
    )
    faults = _verify(audited)[1]
    assert [str(f) for f in faults] == [
        f"chain {chain} record {third}: its MAC does not verify: the record was changed or moved"
    ]
    _execute(
        audited,
        "UPDATE audit SET operation = 'keys_list_keys' WHERE chain = ? AND seq = ?",
        (chain, third),
    )
    assert _verify(audited)[1] == []
    _execute(audited, "DELETE FROM audit WHERE chain = ? AND seq = ?", (chain, 2))
    faults = _verify(audited)[1]
    assert [(f.chain, f.seq) for f in faults] == [(chain, 2)]
    assert "missing" in faults[0].reason


def test_cutting_a_chain_short_or_moving_a_record_is_found(
    admin: TestClient, audited: Settings
) -> None:
    for _ in range(4):
        assert admin.get("/v1/keys").status_code == 200
    records = _records(admin)
    chain = records[0]["chain"]
    last = max(r["seq"] for r in records if r["chain"] == chain) + 1  # the listing's own
    _execute(audited, "DELETE FROM audit WHERE chain = ? AND seq = ?", (chain, last))
    faults = _verify(audited)[1]
    assert [(f.chain, f.seq) for f in faults] == [(chain, last)]
    # Swapping two records' contents (their positions stay) breaks both MACs.
    _execute(audited, "UPDATE audit SET seq = 1000 WHERE chain = ? AND seq = 1", (chain,))
    _execute(audited, "UPDATE audit SET seq = 1 WHERE chain = ? AND seq = 2", (chain,))
    _execute(audited, "UPDATE audit SET seq = 2 WHERE chain = ? AND seq = 1000", (chain,))
    assert [(f.chain, f.seq) for f in _verify(audited)[1]] == [(chain, 1)]


def test_removing_a_whole_chain_with_its_head_is_found(
    admin: TestClient, audited: Settings
) -> None:
    """Every chain is named in the register of chains before its first records reach the
    store, so a chain removed whole, head and all, is still found missing; and a chain of the
    registered kind that the register does not name was added behind the trail's back."""
    for _ in range(3):
        assert admin.get("/v1/keys").status_code == 200
    chain = _records(admin)[0]["chain"]
    created = _cli(audited, "local", "keys", "create", "b", "aez")  # a chain of its own
    assert created.returncode == 0, created.stderr
    assert _verify(audited)[1] == []
    _execute(audited, "DELETE FROM audit WHERE chain = ?", (chain,))
    _execute(audited, "DELETE FROM audit_heads WHERE chain = ?", (chain,))
    faults = _verify(audited)[1]
    assert [(f.chain, f.seq) for f in faults] == [(chain, 1)]
    assert "registered when it began, but gone" in faults[0].reason
    # Removing the register too leaves the command line's chain unnamed in it.
    _execute(audited, "DELETE FROM audit WHERE chain = ?", (audit.REGISTER,))
    _execute(audited, "DELETE FROM audit_heads WHERE chain = ?", (audit.REGISTER,))
    faults = _verify(audited)[1]
    assert {f.reason for f in faults} == {"not in the register of chains"}


def test_a_record_longer_than_the_movers_reads_reaches_the_store(
    admin: TestClient, audited: Settings
) -> None:
    """A quadratic FE keygen records its n x n function: at n = 100 some 120 KiB of digits in
    one record, more than the mover reads at a time."""
    created = admin.post("/v1/keys", json={"name": "q", "type": "qfe-sgp", "dimension": 100})
    assert created.status_code == 201, created.text
    f = [[10**9 + i * 100 + j for j in range(100)] for i in range(100)]
    assert admin.post("/v1/fe/q/keygen", json={"f": f}).status_code == 200
    assert len(json.dumps(f)) > audit.MOVE_CHUNK_BYTES
    keygen = _records(admin, operation="fe_keygen")
    assert keygen[0]["details"]["function"] == f
    assert _verify(audited)[1] == []


def test_listing_filters_and_pages(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    admin.post("/v1/keys", json={"name": "b", "type": "aez"})
    for name in ("a", "b", "a", "missing"):
        admin.post(f"/v1/aez/{name}/encrypt", json={"plaintext": "AA=="})
    assert [r["key"] for r in _records(admin, operation="aez_encrypt")] == [
        "a",
        "b",
        "a",
        "missing",
    ]
    assert len(_records(admin, key="a", operation="aez_encrypt")) == 2
    assert [r["status"] for r in _records(admin, outcome="failure")] == [404]
    assert [r["status"] for r in _records(admin, outcome="404")] == [404]
    assert {r["principal"] for r in _records(admin, principal="admin")} == {"admin"}
    everything = _records(admin)
    pages, after = [], None
    while True:
        params: dict[str, Any] = {"limit": 2, "until": everything[-1]["time"]}
        if after:
            params["after"] = after
        page = admin.get("/v1/audit", params=params).json()
        pages.extend(page["records"])
        after = page["next"]
        if after is None:
            break
    assert [r["seq"] for r in pages] == [r["seq"] for r in everything[:-1]], (pages, everything)
    since = everything[3]["time"]
    assert _records(admin, since=since)[0]["seq"] == everything[3]["seq"]
    assert admin.get("/v1/audit", params={"after": "nope.1"}).status_code == 422
    assert admin.get("/v1/audit", params={"outcome": "maybe"}).status_code == 422


def test_only_the_admin_reads_the_trail(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    token = admin.post(
        "/v1/tokens", json={"keys": ["*"], "operations": ["read", "encrypt", "decrypt"]}
    ).json()["token"]
    answer = admin.get("/v1/audit", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403
    assert _records(admin, operation="audit_list_audit", outcome="403")


def test_a_record_that_cannot_be_written_fails_its_request(tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    writable = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN)
    with TestClient(create_app(writable), headers=headers) as client:
        assert client.post("/v1/keys", json={"name": "a", "type": "aez"}).status_code == 201
    # A full disk: the encryption is made, but its answer never leaves.
    full = writable.model_copy(update={"audit_file": Path("/dev/full")})
    with TestClient(create_app(full), headers=headers) as client:
        answer = client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["type"] == "urn:cipherd:problem:audit-unavailable"
        assert "x-request-id" in answer.headers
        assert "ciphertext" not in answer.text
    # A file that cannot be opened: no change is made.
    (tmp_path / "a-directory").mkdir()
    unopenable = writable.model_copy(update={"audit_file": tmp_path / "a-directory"})
    with TestClient(create_app(unopenable), headers=headers) as client:
        for answer in (
            client.post("/v1/keys", json={"name": "b", "type": "aez"}),
            client.post("/v1/keys/a/rotate"),
            client.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]}),
        ):
            assert answer.status_code == 503, answer.text
            assert answer.json()["type"] == "urn:cipherd:problem:audit-unavailable"
    with TestClient(create_app(writable), headers=headers) as client:
        assert client.get("/v1/keys/b").status_code == 404
        assert client.get("/v1/keys/a").json()["latest_version"] == 1
        assert client.get("/v1/tokens").json()["tokens"] == []


def test_records_the_store_refuses_wait_in_the_journal_up_to_its_bound(
    audited: Settings,
) -> None:
    """The store refuses records (an outage, a full disk): they stay in the process's journal,
    requests go on until it holds `audit_backlog_bytes`, then answer 503; once the store takes
    records again, every one reaches it, in order, and the trail verifies."""
    settings = audited.model_copy(update={"audit_backlog_bytes": 1 << 16})
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        _LIVE.append(client.app.state.services.audit)  # type: ignore[attr-defined]
        assert client.post("/v1/keys", json={"name": "a", "type": "aez"}).status_code == 201
        _execute(settings, "ALTER TABLE audit RENAME TO audit_gone")
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
            _LIVE.clear()
            _execute(settings, "ALTER TABLE audit_gone RENAME TO audit")
        client.app.state.services.audit.flush(timeout=10)  # type: ignore[attr-defined]
        assert client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="}).status_code == 200
        _LIVE.append(client.app.state.services.audit)  # type: ignore[attr-defined]
        assert _verify(settings) == (served + 2, [])  # the creation and the last encryption
        _LIVE.clear()


@pytest.mark.parametrize("sync", ["changes", "full"])
def test_concurrent_requests_share_writes_and_moves(
    audited: Settings, sync: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group commit: with every record on disk before its answer (`full`), the records of
    concurrent requests share journal writes and their syncs; in either mode they reach the
    store in fewer transactions still. (With `changes`, a record that need not wait for the
    disk is written alone, at once.)"""
    writes: list[int] = []
    moves: list[int] = []
    original_write = journal.Segment.append

    def counting_write(segment: journal.Segment, data: bytes, sync: bool) -> None:
        writes.append(data.count(b"\n"))
        original_write(segment, data, sync)

    monkeypatch.setattr(journal.Segment, "append", counting_write)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    settings = audited.model_copy(update={"audit_sync": sync})
    with TestClient(create_app(settings), headers=headers) as admin:
        trail = admin.app.state.services.audit  # type: ignore[attr-defined]
        original_move = trail._store.append_audit

        def counting_move(rows: list[AuditRow], head: AuditHead) -> None:
            moves.append(len(rows))
            original_move(rows, head)

        trail._store.append_audit = counting_move
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
    assert sum(writes) == sum(moves) == 201
    if sync == "full":
        assert len(writes) < 150  # grouped: fewer writes than records
        assert max(writes) > 1
    assert len(moves) < 100
    assert _verify(audited) == (201, [])


def test_the_file_holds_every_record_as_the_store_does(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, audit_file=path)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings), headers=headers) as client:
        client.post("/v1/keys", json={"name": "a", "type": "aez"})
        client.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
        stored = _records(client)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[: len(stored)] == stored
    assert os.stat(path).st_mode & 0o777 == 0o600


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    _settle()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIPHERD_")}
    env["CIPHERD_DATA_DIR"] = str(settings.data_dir)
    if settings.database_url:
        env["CIPHERD_DATABASE_URL"] = settings.database_url
    return subprocess.run(
        [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_cli_verifies_and_lists(admin: TestClient, audited: Settings) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
    created = _cli(audited, "local", "keys", "create", "b", "aez")
    assert created.returncode == 0, created.stderr
    done = _cli(audited, "audit", "verify")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 3
    listed = json.loads(_cli(audited, "audit", "list", "--operation", "keys_create_key").stdout)
    assert [(r["key"], r["principal"]) for r in listed["records"]] == [
        ("a", "admin"),
        ("b", "cli"),
    ]
    record = listed["records"][0]
    _execute(
        audited,
        "UPDATE audit SET key_name = 'x' WHERE chain = ? AND seq = ?",
        (record["chain"], record["seq"]),
    )
    failed = _cli(audited, "audit", "verify")
    assert failed.returncode == 1
    assert f"chain {record['chain']} record {record['seq']}: its MAC" in failed.stderr


def test_the_trail_verifies_after_a_root_key_rotation(admin: TestClient, audited: Settings) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
    new_root = audited.data_dir.parent / "new-root-key"
    new_root.write_text(b64(os.urandom(32)))
    rotated = _cli(audited, "root", "rotate", "--new-root-key-file", str(new_root))
    assert rotated.returncode == 0, rotated.stderr
    assert _verify(audited) == (3, [])  # the rotation has its own record
    admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
    assert _verify(audited) == (4, [])


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
        time.sleep(audit.LAZY_SYNC_SECONDS * 3)  # its record's sync has begun
        assert len(syncing) == changes + 1
        started = time.monotonic()
        for _ in range(10):
            admin.post("/v1/aez/a/encrypt", json=plaintext).raise_for_status()
        assert time.monotonic() - started < 1.0
    assert changes >= 1  # the key's creation, on disk before its answer
    assert set(syncing) == {"cipherd-audit"}


@pytest.mark.parametrize("key_length", [0, 1, 32, 64, 65, 200])
def test_the_records_mac_is_hmac_sha256(key_length: int) -> None:
    key = os.urandom(key_length)
    keyed = audit.KeyedSha256(key)
    for message in (b"", b"record", os.urandom(300), os.urandom(5000)):
        assert keyed.digest(message) == hmac.digest(key, message, "sha256")
        assert keyed.digest(message) == hmac.digest(key, message, "sha256")  # states reused


@pytest.mark.parametrize("kept", [4096, 3, 0])
def test_the_mover_takes_the_writers_rows_and_reads_the_rest_back(
    audited: Settings, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mover stores the rows the writer kept as they are, and reads back from the journal
    the ones it did not keep (past WRITES_KEPT): the store gets every record either way."""
    monkeypatch.setattr(audit, "WRITES_KEPT", kept)
    monkeypatch.setattr(audit, "MOVE_DELAY_SECONDS", 1.0)  # all twenty written before a move
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
    assert _verify(audited) == (20, [])
