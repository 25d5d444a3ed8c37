"""The audit repository on SQLite and PostgreSQL: records stored as they come (a journal moved
twice changes nothing), each chain's head, queries, a chain several processes extend one at a
time, and the MAC key that outlives rotations of the keyring and the root key."""

from collections.abc import Sequence
from typing import Any

import pytest

from app.store import (
    AuditHead,
    AuditQuery,
    AuditRow,
    KeyStore,
    KeyWrapper,
    open_store,
    pages,
    postgres,
)
from app.store import audit as store_audit
from tests.app.store.stores import NEW_ROOT_KEY, at_once, root


def _row(chain: str, seq: int, time: float = 1.0, **fields: Any) -> AuditRow:
    values = {
        "request_id": f"r{seq}", "client": "127.0.0.1", "principal": "admin",
        "operation": "aez_encrypt", "key": "k", "key_version": "1", "status": 200,
        "problem": None, "details": "{}", "mac": bytes([seq % 256]) * 32,
    }  # fmt: skip
    return AuditRow(chain, seq, time, **{**values, **fields})


def test_audit_rows_go_in_with_a_few_fixed_statements(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any number of rows takes statements of the fixed sizes only, so the drivers' caches of
    prepared statements hold a handful, whatever the mover's group sizes."""
    statements: set[str] = set()
    real_insert = store_audit._insert

    def noting(cursor: Any, rows: Any, head: AuditHead) -> None:
        class Noted:
            def execute(self, query: str, params: Any = ()) -> Any:
                statements.add(query)
                return cursor.execute(query, params)

        real_insert(Noted(), rows, head)

    monkeypatch.setattr(store_audit, "_insert", noting)
    seq = 0
    for count in (1, 3, 7, 21, 64, 65, 149, 90):
        rows = []
        for _ in range(count):
            seq += 1
            rows.append(
                AuditRow(
                    "c1", seq, 1.0, "r", None, "admin", "op", None, None, 200, None, "{}", b"m"
                )
            )
        store.audit.append(rows, AuditHead("c1", seq, b"t"))
    inserts = [s for s in statements if s.startswith("INSERT INTO audit (")]
    assert sorted(s.count("), (") + 1 for s in inserts) == sorted(store_audit.ROWS_PER_INSERT)
    stored, _ = store.audit.records(AuditQuery(limit=1000))
    assert [row.seq for row in stored] == list(range(1, seq + 1))


def test_a_journal_moved_again_changes_nothing(store: KeyStore) -> None:
    first = [_row("c1", seq) for seq in (1, 2, 3)]
    store.audit.append(first, AuditHead("c1", 3, b"t3"))
    again = [_row("c1", seq, details='{"forged":true}') for seq in (2, 3, 4)]
    store.audit.append(again, AuditHead("c1", 4, b"t4"))
    assert store.audit.chain("c1", 0, 10) == [*first, again[2]]
    # A head further on is kept when an older move comes late.
    store.audit.append(first[:2], AuditHead("c1", 2, b"t2"))
    assert store.audit.heads() == [AuditHead("c1", 4, b"t4")]


def test_an_empty_move_checks_the_table_takes_writes(store: KeyStore) -> None:
    store.audit.append([], AuditHead("c1", 0, b""))
    assert store.audit.records(AuditQuery()) == ([], False)


def test_records_are_found_by_every_condition_and_paged_in_order(store: KeyStore) -> None:
    store.audit.append(
        [
            _row("c1", 1, 10.0),
            _row("c1", 2, 20.0, principal="t1", status=403, problem="forbidden"),
            _row("c1", 3, 30.0, key="other", operation="keys_rotate_key"),
        ],
        AuditHead("c1", 3, b"h1"),
    )
    store.audit.append([_row("c2", 1, 20.0), _row("c2", 2, 40.0)], AuditHead("c2", 2, b"h2"))
    seqs = lambda query: [(r.chain, r.seq) for r in store.audit.records(query)[0]]  # noqa: E731
    assert seqs(AuditQuery()) == [("c1", 1), ("c1", 2), ("c2", 1), ("c1", 3), ("c2", 2)]
    assert seqs(AuditQuery(key="other")) == [("c1", 3)]
    assert seqs(AuditQuery(principal="t1")) == [("c1", 2)]
    assert seqs(AuditQuery(operation="keys_rotate_key")) == [("c1", 3)]
    assert seqs(AuditQuery(status_from=400, status_to=403)) == [("c1", 2)]
    assert seqs(AuditQuery(since=20.0, until=40.0)) == [("c1", 2), ("c2", 1), ("c1", 3)]
    assert seqs(AuditQuery(other_than_chain="c1")) == [("c2", 1), ("c2", 2)]
    assert seqs(AuditQuery(limit=2)) == [("c1", 1), ("c1", 2)]
    assert seqs(AuditQuery(after=(20.0, "c1", 2), limit=2)) == [("c2", 1), ("c1", 3)]
    assert store.audit.records(AuditQuery(limit=4))[1] is True
    assert store.audit.records(AuditQuery(limit=5))[1] is False
    assert store.audit.record("c1", 2) == _row(
        "c1", 2, 20.0, principal="t1", status=403, problem="forbidden"
    )
    assert store.audit.record("c1", 9) is None
    assert [r[1] for r in store.audit.chain("c1", 1, 1)] == [2]


def test_a_chain_is_read_by_windows_of_positions(store: KeyStore) -> None:
    """A window with a gap is short, one wholly missing is empty; the last position is that of
    the highest record stored."""
    store.audit.append([_row("c1", seq) for seq in (1, 2, 5, 6, 7)], AuditHead("c1", 7, b"t"))
    assert [r[1] for r in store.audit.chain("c1", 0, 3)] == [1, 2]
    assert [r[1] for r in store.audit.chain("c1", 2, 2)] == []
    assert [r[1] for r in store.audit.chain("c1", 3, 3)] == [5, 6]
    assert store.audit.last_seq("c1") == 7
    assert store.audit.last_seq("c2") == 0


def test_a_read_ends_at_the_record_whose_details_reach_its_weight(store: KeyStore) -> None:
    """Records of 1 MiB of details (an FE keygen names its functions): a page, and a window of
    a chain, hold the 4 that bring them to 4 MiB, not all that match."""
    big = '"' + "a" * ((1 << 20) - 2) + '"'
    rows = [_row("c1", seq, float(seq), details=big) for seq in range(1, 13)]
    store.audit.append(rows, AuditHead("c1", 12, b"t"))
    assert pages.PAGE_BYTES == 4 << 20
    page, more = store.audit.records(AuditQuery(limit=100))
    assert [r.seq for r in page] == [1, 2, 3, 4] and more
    assert [r[1] for r in store.audit.chain("c1", 2, 100)] == [3, 4, 5, 6]
    page, more = store.audit.records(AuditQuery(after=(8.0, "c1", 8)))
    assert [r.seq for r in page] == [9, 10, 11, 12] and not more


def test_the_weight_is_counted_in_bytes_not_characters(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "PAGE_BYTES", 10)
    rows = [_row("c1", seq, details='"éé"') for seq in (1, 2, 3)]  # 6 bytes, 4 characters
    store.audit.append(rows, AuditHead("c1", 3, b"t"))
    page, more = store.audit.records(AuditQuery())
    assert [r.seq for r in page] == [1, 2] and more
    assert [r[1] for r in store.audit.chain("c1", 0, 3)] == [1, 2]


@pytest.mark.postgres
def test_a_window_reads_no_more_than_its_rows_on_postgres_without_statistics(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before ANALYZE has seen them, PostgreSQL guesses a chain holds a few rows, and for
    `seq > ? ORDER BY seq LIMIT ?` it would sort all that follow; a window is read alone."""
    store = open_store(postgres_url, root())
    try:
        with store.database.transaction(write=True) as cursor:
            cursor.execute("ALTER TABLE audit SET (autovacuum_enabled = false)")
        store.audit.append([_row("c1", seq) for seq in range(1, 3001)], AuditHead("c1", 3000, b"t"))
        statements: list[tuple[str, Any]] = []
        real_execute = postgres._Statements.execute

        def noting(statements_self: Any, sql: str, params: Any = ()) -> None:
            statements.append((sql, params))
            real_execute(statements_self, sql, params)

        monkeypatch.setattr(postgres._Statements, "execute", noting)
        assert [r[1] for r in store.audit.chain("c1", 100, 50)] == list(range(101, 151))
        monkeypatch.undo()
        for sql, params in statements:  # the window's weight, then its records
            with store.database.transaction(write=False) as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
                (plan,) = cursor.fetchone()  # type: ignore[misc]
            read = []
            nodes = [plan[0]["Plan"]]
            while nodes:
                node = nodes.pop()
                nodes += node.get("Plans", [])
                if "Scan" in node["Node Type"]:
                    read.append(node["Actual Rows"])
            assert read and max(read) <= 50, plan
        assert len(statements) == 2
    finally:
        store.close()


def test_a_chain_with_records_but_no_head_shows_a_head_of_nothing(store: KeyStore) -> None:
    store.audit.append([_row("c1", 1)], AuditHead("c1", 1, b"h"))
    with store.database.transaction(write=True) as cursor:
        cursor.execute("DELETE FROM audit_heads")
    assert store.audit.heads() == [AuditHead("c1", 0, b"")]


def test_a_shared_chain_is_extended_one_writer_at_a_time(store: KeyStore, store_url: str) -> None:
    def extend(seen: Sequence[AuditRow]) -> tuple[list[AuditRow], AuditHead | None]:
        seq = len(seen) + 1
        return [_row("@shared", seq)], AuditHead("@shared", seq, b"h")

    def writer(writing: KeyStore) -> None:
        for _ in range(5):
            writing.audit.extend_chain("@shared", extend)

    at_once(store, store_url, writer)
    assert [r[1] for r in store.audit.chain("@shared", 0, 100)] == list(range(1, 21))
    store.audit.extend_chain("@shared", lambda seen: ([], None))  # nothing to add
    assert store.audit.heads() == [AuditHead("@shared", 20, b"h")]


def test_the_mac_key_is_one_for_every_process_and_outlives_rotations(
    store: KeyStore, store_url: str
) -> None:
    keys = at_once(store, store_url, lambda opened: opened.audit.mac_key())
    key = keys[0]
    assert len(key) == 32 and keys == [key] * 4 and store.audit.mac_key() == key
    store.keys.create("k", "aez", {}, False, b"k" * 48, None)
    store.keyring.rotate()
    store.keyring.rewrap(100)
    store.keyring.rotate_root(KeyWrapper(NEW_ROOT_KEY))
    store.close()
    reopened = open_store(store_url, root(NEW_ROOT_KEY))
    try:
        assert reopened.audit.mac_key() == key
    finally:
        reopened.close()


def test_a_keys_newest_records_come_newest_first_across_chains(store: KeyStore) -> None:
    store.audit.append(
        [_row("a", 1, 1.0), _row("a", 2, 3.0), _row("a", 3, 5.0)], AuditHead("a", 3, b"t")
    )
    store.audit.append(
        [_row("b", 1, 2.0), _row("b", 2, 4.0, key="other"), _row("b", 3, 5.0, status=403)],
        AuditHead("b", 3, b"t"),
    )
    newest = store.audit.newest_of_key("k", 0.0, None, 10)
    assert [(time, chain, seq) for time, chain, seq, *_ in newest] == [
        (5.0, "b", 3), (5.0, "a", 3), (3.0, "a", 2), (2.0, "b", 1), (1.0, "a", 1)
    ]  # fmt: skip
    assert (newest[0].operation, newest[0].status, newest[0].request_id) == (
        "aez_encrypt",
        403,
        "r3",
    )
    page = store.audit.newest_of_key("k", 0.0, newest[1][:3], 2)
    assert [record[:3] for record in page] == [(3.0, "a", 2), (2.0, "b", 1)]
    assert [record[:3] for record in store.audit.newest_of_key("k", 2.5, None, 10)] == [
        (5.0, "b", 3), (5.0, "a", 3), (3.0, "a", 2)
    ]  # fmt: skip
