"""Reading the trail: filters and pages of `GET /v1/audit`, for the admin only, and the command
line's `audit list` and `audit verify`."""

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.ops.audit import chain, query
from app.ops.audit.record import AuditRecord
from app.ops.errors import Problem
from app.settings import Settings
from app.store import AuditQuery, KeyStore
from tests.app.ops.audit.support import cli, execute, listed


def test_pages_follow_each_other_without_the_register_of_chains(store: KeyStore) -> None:
    key = store.audit.mac_key()
    written = chain.Chain()
    records = [
        AuditRecord(time.time(), f"r{i}", None, "admin", "random_random", None, None, 200, None, {})
        for i in range(5)
    ]
    rows, _ = written.seal(key, records)
    chain.register(store, key, written.name)
    store.audit.append(rows, chain.head_of(key, rows[-1]))
    seen, after = [], None
    while True:
        start = None if after is None else query.page_start(store, after)
        page, after = query.listing(store, AuditQuery(limit=2, after=start))
        assert len(page) <= 2
        seen += page
        if after is None:
            break
    assert [record["request_id"] for record in seen] == [f"r{i}" for i in range(5)]
    assert {record["chain"] for record in seen} == {written.name}
    with pytest.raises(Problem) as unknown:
        query.page_start(store, f"{written.name}.99")
    assert unknown.value.status == 422


def test_pages_of_heavy_records_end_at_4_mib_and_the_trail_still_verifies(
    store: KeyStore,
) -> None:
    """Records of 1 MiB each (an FE keygen's record names its functions): a page of 100 holds the 4
    that reach 4 MiB and points on; the next ones the rest; verify reads every window."""
    key = store.audit.mac_key()
    written = chain.Chain()
    heavy = {"functions": "a" * (1 << 20)}
    records = [
        AuditRecord(time.time(), f"r{i}", None, "admin", "fe_keygen", "k", 1, 200, None, heavy)
        for i in range(10)
    ]
    rows, _ = written.seal(key, records)
    chain.register(store, key, written.name)
    store.audit.append(rows, chain.head_of(key, rows[-1]))
    first, after = query.listing(store, AuditQuery(limit=100))
    assert [record["request_id"] for record in first] == ["r0", "r1", "r2", "r3"]
    assert after is not None
    second, after = query.listing(store, AuditQuery(after=query.page_start(store, after)))
    assert [record["request_id"] for record in second] == ["r4", "r5", "r6", "r7"]
    assert after is not None
    rest, last = query.listing(store, AuditQuery(after=query.page_start(store, after)))
    assert [record["request_id"] for record in rest] == ["r8", "r9"] and last is None
    assert chain.verify(store) == (10, [])


def test_listing_filters_and_pages(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    admin.post("/v1/keys", json={"name": "b", "type": "aez"})
    for name in ("a", "b", "a", "missing"):
        admin.post(f"/v1/aez/{name}/encrypt", json={"plaintext": "AA=="})
    assert [r["key"] for r in listed(admin, operation="aez_encrypt")] == [
        "a",
        "b",
        "a",
        "missing",
    ]
    assert len(listed(admin, key="a", operation="aez_encrypt")) == 2
    assert [r["status"] for r in listed(admin, outcome="failure")] == [404]
    assert [r["status"] for r in listed(admin, outcome="404")] == [404]
    assert {r["principal"] for r in listed(admin, principal="admin")} == {"admin"}
    everything = listed(admin)
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
    assert listed(admin, since=since)[0]["seq"] == everything[3]["seq"]
    assert admin.get("/v1/audit", params={"after": "nope.1"}).status_code == 422
    assert admin.get("/v1/audit", params={"outcome": "maybe"}).status_code == 422


def test_a_cursor_past_what_a_seq_can_be_is_refused_not_a_500(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    first = listed(admin)[0]
    real = first["chain"]
    assert admin.get("/v1/audit", params={"after": f"{real}.{first['seq']}"}).status_code == 200
    # The same record's seq in Arabic-Indic digits, which `int` reads as well.
    other_digits = "".join(chr(0x660 + int(digit)) for digit in str(first["seq"]))
    for name in (real, "x"):
        for seq in (
            other_digits,
            str(2**63),  # one past a BIGINT: SQLite refused to even bind it (a 500)
            "9" * 19,
            "1" * 20,
            "9" * 40,
            "0" * 20,
            str(2**63 - 1),  # the largest a seq can be, never written: no such record
            "",
            "-1",
            "+1",
            " 1",
        ):
            answer = admin.get("/v1/audit", params={"after": f"{name}.{seq}"})
            assert answer.status_code == 422, (name, seq, answer.text)
            assert answer.json()["type"] == "urn:cipherd:problem:invalid-input"


def test_page_start_refuses_a_seq_no_integer_column_holds(store: KeyStore) -> None:
    key = store.audit.mac_key()
    written = chain.Chain()
    record = AuditRecord(
        time.time(), "r", None, "admin", "random_random", None, None, 200, None, {}
    )
    rows, _ = written.seal(key, [record])
    store.audit.append(rows, chain.head_of(key, rows[-1]))
    seq = rows[0].seq
    assert query.page_start(store, f"{written.name}.{seq}")[1:] == (written.name, seq)
    arabic_indic = "".join(chr(0x660 + int(digit)) for digit in str(seq))
    for bad in (str(2**63), "9" * 20, "1" * 25, str(2**63 - 1), arabic_indic, f"{seq} "):
        with pytest.raises(Problem) as refused:
            query.page_start(store, f"{written.name}.{bad}")
        assert refused.value.status == 422, bad


def test_only_the_admin_reads_the_trail(admin: TestClient) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    token = admin.post(
        "/v1/tokens", json={"keys": ["*"], "operations": ["read", "encrypt", "decrypt"]}
    ).json()["token"]
    answer = admin.get("/v1/audit", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403
    assert listed(admin, operation="audit_list_audit", outcome="403")


def test_the_cli_verifies_and_lists(admin: TestClient, audited: Settings) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
    created = cli(audited, "local", "keys", "create", "b", "aez")
    assert created.returncode == 0, created.stderr
    done = cli(audited, "local", "audit", "verify")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 3
    page = json.loads(
        cli(audited, "local", "audit", "list", "--operation", "keys_create_key").stdout
    )
    assert [(r["key"], r["principal"]) for r in page["records"]] == [
        ("a", "admin"),
        ("b", "cli"),
    ]
    record = page["records"][0]
    execute(
        audited,
        "UPDATE audit SET key_name = 'x' WHERE chain = ? AND seq = ?",
        (record["chain"], record["seq"]),
    )
    failed = cli(audited, "local", "audit", "verify")
    assert failed.returncode == 1
    assert f"chain {record['chain']} record {record['seq']}: its MAC" in failed.stderr
