"""The MAC chains: each record's MAC over its content and its predecessor's, each chain's head,
the register of chains, and `verify` finding a changed, removed, moved or added record, a chain cut
short or removed whole."""

import hmac
import os
import time

import pytest
from fastapi.testclient import TestClient

from app.ops.audit import chain
from app.ops.audit.chain import REGISTER
from app.ops.audit.record import AuditRecord
from app.settings import Settings
from app.store import AuditHead, AuditRow, KeyStore, journal
from tests.app.ops.audit.support import b64, cli, execute, listed, verify


def _records(count: int, operation: str = "aez_encrypt") -> list[AuditRecord]:
    return [
        AuditRecord(
            time=time.time(),
            request_id=f"request-{index}",
            client="127.0.0.1",
            principal="admin",
            operation=operation,
            key="k",
            key_version=[1, 2] if index % 2 else 1,
            status=200,
            problem=None,
            details={"items": index},
        )
        for index in range(count)
    ]


def _store(store: KeyStore, key: bytes, rows: list[AuditRow]) -> None:
    chain.register(store, key, rows[0].chain)
    store.audit.append(rows, chain.head_of(key, rows[-1]))


def test_sealed_records_chain_their_macs_and_the_chain_moves_on_only_when_told() -> None:
    key = os.urandom(32)
    written = chain.Chain()
    rows, data = written.seal(key, _records(3))
    assert (written.seq, written.last_mac) == (0, b"")  # not moved on yet
    assert [row.seq for row in rows] == [1, 2, 3]
    assert {row.chain for row in rows} == {written.name}
    previous = b""
    for row in rows:
        assert row.mac == chain.record_mac(key, row, previous)
        previous = row.mac
    assert journal.decode(data) == rows  # the journal's lines hold the rows as made
    sealed_again, _ = written.seal(key, _records(3))
    assert [row.mac for row in sealed_again] != [row.mac for row in rows]  # times differ
    written.advance(rows[-1])
    following, _ = written.seal(key, _records(1))
    assert following[0].seq == 4
    assert following[0].mac == chain.record_mac(key, following[0], rows[-1].mac)


def test_a_chain_stored_whole_verifies_and_a_changed_record_is_named(store: KeyStore) -> None:
    key = store.audit.mac_key()
    written = chain.Chain()
    rows, _ = written.seal(key, _records(4))
    _store(store, key, rows)
    assert chain.verify(store) == (4, [])
    other = chain.Chain()
    changed, _ = other.seal(key, _records(3))
    changed[1] = changed[1]._replace(operation="aez_decrypt")
    _store(store, key, changed)
    assert chain.verify(store) == (
        4 + 1,
        [
            chain.ChainFault(
                other.name, 2, "its MAC does not verify: the record was changed or moved"
            )
        ],
    )


def test_records_written_while_a_chain_is_verified_are_not_a_fault(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records stored with their head after verification read the heads are the next one's
    to check: they were a fault ("the chain's head does not verify") whenever verification
    ran while requests were audited. Records put past the head without one are a fault."""
    key = store.audit.mac_key()
    written = chain.Chain()
    rows, _ = written.seal(key, _records(3))
    _store(store, key, rows)
    written.advance(rows[-1])
    read_heads = store.audit.heads

    def heads_then_a_write() -> list[AuditHead]:
        heads = read_heads()
        later, _ = written.seal(key, _records(2))
        store.audit.append(later, chain.head_of(key, later[-1]))
        written.advance(later[-1])
        return list(heads)

    with monkeypatch.context() as patched:
        patched.setattr(store.audit, "heads", heads_then_a_write)
        assert chain.verify(store) == (5, [])  # every record's MAC read, the head as read
    assert chain.verify(store) == (5, [])
    past, _ = written.seal(key, _records(1))
    store.audit.append(past, store.audit.head(written.name))  # the old head stands
    assert chain.verify(store) == (
        6,
        [chain.ChainFault(written.name, 6, "past the chain's head: not written by it")],
    )


@pytest.mark.parametrize("count", [9, 10])
def test_a_chain_read_over_many_pages_verifies_and_a_change_on_a_later_page_is_named(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Pages of 3: full pages then a short or an empty one."""
    monkeypatch.setattr(chain, "_VERIFY_PAGE", 3)
    key = store.audit.mac_key()
    written = chain.Chain()
    rows, _ = written.seal(key, _records(count))
    rows[7] = rows[7]._replace(operation="aez_decrypt")
    _store(store, key, rows)
    fault = chain.ChainFault(
        written.name, 8, "its MAC does not verify: the record was changed or moved"
    )
    assert chain.verify(store) == (7, [fault])
    other = chain.Chain()
    rows, _ = other.seal(key, _records(count))
    _store(store, key, rows)
    assert chain.verify(store) == (7 + count, [fault])


def test_a_gap_wider_than_a_page_is_named_where_the_chain_goes_on(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chain, "_VERIFY_PAGE", 3)
    key = store.audit.mac_key()
    written = chain.Chain()
    rows, _ = written.seal(key, _records(10))
    _store(store, key, rows[:2] + rows[7:])
    assert chain.verify(store) == (
        2,
        [chain.ChainFault(written.name, 3, "missing (the chain goes on at record 8)")],
    )


def test_a_chain_is_registered_once(store: KeyStore) -> None:
    key = store.audit.mac_key()
    for _ in range(3):
        chain.register(store, key, "rfirst")
    chain.register(store, key, "rsecond")
    register = [AuditRow._make(r) for r in store.audit.chain(chain.REGISTER, 0, 10)]
    assert [row.details for row in register] == ['{"chain":"rfirst"}', '{"chain":"rsecond"}']
    assert [row.seq for row in register] == [1, 2]
    assert chain.verify(store)[1] == [
        chain.ChainFault(name, 1, "registered when it began, but gone: it was removed")
        for name in ("rfirst", "rsecond")
    ]


def test_a_heads_tag_covers_its_chain_position_and_last_mac() -> None:
    key, mac = os.urandom(32), os.urandom(32)
    tag = chain.head_tag(key, "rchain", 5, mac)
    assert tag == chain.head_tag(key, "rchain", 5, mac)
    others = {
        chain.head_tag(key, "rchaim", 5, mac),
        chain.head_tag(key, "rchain", 4, mac),
        chain.head_tag(key, "rchain", 5, os.urandom(32)),
        chain.head_tag(os.urandom(32), "rchain", 5, mac),
    }
    assert tag not in others and len(others) == 4


def test_verify_names_a_changed_byte_and_a_deleted_record(
    admin: TestClient, audited: Settings
) -> None:
    for _ in range(5):
        assert admin.get("/v1/keys").status_code == 200
    records = listed(admin)
    chain, third = records[2]["chain"], records[2]["seq"]
    execute(
        audited,
        "UPDATE audit SET operation = 'keys_list_keyz' WHERE chain = ? AND seq = ?",
        (chain, third),
    )
    faults = verify(audited)[1]
    assert [str(f) for f in faults] == [
        f"chain {chain} record {third}: its MAC does not verify: the record was changed or moved"
    ]
    execute(
        audited,
        "UPDATE audit SET operation = 'keys_list_keys' WHERE chain = ? AND seq = ?",
        (chain, third),
    )
    assert verify(audited)[1] == []
    execute(audited, "DELETE FROM audit WHERE chain = ? AND seq = ?", (chain, 2))
    faults = verify(audited)[1]
    assert [(f.chain, f.seq) for f in faults] == [(chain, 2)]
    assert "missing" in faults[0].problem


def test_cutting_a_chain_short_or_moving_a_record_is_found(
    admin: TestClient, audited: Settings
) -> None:
    for _ in range(4):
        assert admin.get("/v1/keys").status_code == 200
    records = listed(admin)
    chain = records[0]["chain"]
    last = max(r["seq"] for r in records if r["chain"] == chain) + 1  # the listing's own
    execute(audited, "DELETE FROM audit WHERE chain = ? AND seq = ?", (chain, last))
    faults = verify(audited)[1]
    assert [(f.chain, f.seq) for f in faults] == [(chain, last)]
    # Swapping two records' contents (their positions stay) breaks both MACs.
    execute(audited, "UPDATE audit SET seq = 1000 WHERE chain = ? AND seq = 1", (chain,))
    execute(audited, "UPDATE audit SET seq = 1 WHERE chain = ? AND seq = 2", (chain,))
    execute(audited, "UPDATE audit SET seq = 2 WHERE chain = ? AND seq = 1000", (chain,))
    assert [(f.chain, f.seq) for f in verify(audited)[1]] == [(chain, 1)]


def test_removing_a_whole_chain_with_its_head_is_found(
    admin: TestClient, audited: Settings
) -> None:
    """Every chain is named in the register of chains before its first records reach the
    store, so a chain removed whole, head and all, is still found missing; and a chain of the
    registered kind that the register does not name was added behind the trail's back."""
    for _ in range(3):
        assert admin.get("/v1/keys").status_code == 200
    chain = listed(admin)[0]["chain"]
    created = cli(audited, "local", "keys", "create", "b", "aez")  # a chain of its own
    assert created.returncode == 0, created.stderr
    assert verify(audited)[1] == []
    execute(audited, "DELETE FROM audit WHERE chain = ?", (chain,))
    execute(audited, "DELETE FROM audit_heads WHERE chain = ?", (chain,))
    faults = verify(audited)[1]
    assert [(f.chain, f.seq) for f in faults] == [(chain, 1)]
    assert "registered when it began, but gone" in faults[0].problem
    # Removing the register too leaves the command line's chain unnamed in it.
    execute(audited, "DELETE FROM audit WHERE chain = ?", (REGISTER,))
    execute(audited, "DELETE FROM audit_heads WHERE chain = ?", (REGISTER,))
    faults = verify(audited)[1]
    assert {f.problem for f in faults} == {"not in the register of chains"}


def test_the_trail_verifies_after_a_root_key_rotation(admin: TestClient, audited: Settings) -> None:
    admin.post("/v1/keys", json={"name": "a", "type": "aez"})
    admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
    new_root = audited.data_dir.parent / "new-root-key"
    new_root.write_text(b64(os.urandom(32)))
    new_root.chmod(0o600)
    rotated = cli(audited, "root", "rotate", "--new-root-key-file", str(new_root))
    assert rotated.returncode == 0, rotated.stderr
    assert verify(audited) == (3, [])  # the rotation has its own record
    admin.post("/v1/aez/a/encrypt", json={"plaintext": "aGk="})
    assert verify(audited) == (4, [])


@pytest.mark.parametrize("key_length", [0, 1, 32, 64, 65, 200])
def test_the_records_mac_is_hmac_sha256(key_length: int) -> None:
    key = os.urandom(key_length)
    keyed = chain.KeyedSha256(key)
    for message in (b"", b"record", os.urandom(300), os.urandom(5000)):
        assert keyed.digest(message) == hmac.digest(key, message, "sha256")
        assert keyed.digest(message) == hmac.digest(key, message, "sha256")  # states reused
