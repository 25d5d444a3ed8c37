"""The FE ledger repository on SQLite and PostgreSQL: a release decided on the ledger of one
key version and stored with the basis it leaves, decisions on a version one at a time across
processes, the ledger going with the versions it is about, and its pages, bounded in count and
in bytes."""

import json
from collections.abc import Iterator

import pytest

from app.store import FunctionLedger, FunctionPage, KeyStore, VersionNotFoundError, pages
from tests.app.store.stores import at_once, rows

PARAMS = {"dimension": 2, "fe_policy": {"max_rank": 2}}


def _fe_key(store: KeyStore, versions: int = 1) -> None:
    created = store.keys.create("f", "ipfe-opt", PARAMS, False, b"f" * 64, b"p")
    for _ in range(versions - 1):
        store.keys.rotate("f", b"g" * 64, b"q", created.created_at)


def test_a_release_is_stored_with_the_basis_it_leaves(store: KeyStore) -> None:
    _fe_key(store)

    def decide(ledger: FunctionLedger) -> str:
        assert (ledger.basis, ledger.params) == ([], PARAMS)
        assert ledger.released_since("alice", 0.0) == 0
        ledger.record([1, 0], "alice", 10.0, 1)
        ledger.record([0, 1], "alice", 11.0, 2)
        assert ledger.released_since("alice", 10.5) == 1  # recorded here, not yet stored
        assert ledger.released_since("bob", 0.0) == 0
        ledger.basis = [[1, 0], [0, 1]]
        return "released"

    assert store.ledger.release("f", 1, decide) == "released"
    released = [
        (r.seq, r.function, r.principal, r.time, r.rank)
        for r in store.ledger.functions("f", 1).functions
    ]
    assert released == [(1, [1, 0], "alice", 10.0, 1), (2, [0, 1], "alice", 11.0, 2)]
    seen = store.ledger.release(
        "f", 1, lambda ledger: (ledger.basis, ledger.released_since("alice", 0.0))
    )
    assert seen == ([[1, 0], [0, 1]], 2)


def test_a_refused_decision_stores_nothing(store: KeyStore) -> None:
    _fe_key(store)

    def refuse(ledger: FunctionLedger) -> None:
        ledger.record([1, 1], "alice", 1.0, 1)
        ledger.basis = [[1, 1]]
        raise PermissionError("over the limit")

    with pytest.raises(PermissionError):
        store.ledger.release("f", 1, refuse)
    assert store.ledger.functions("f", 1) == FunctionPage([], None, 0)
    assert store.ledger.release("f", 1, lambda ledger: ledger.basis) == []


def test_each_version_keeps_its_own_ledger(store: KeyStore) -> None:
    _fe_key(store, versions=2)
    for version, function in ((2, [0, 1]), (1, [1, 0])):
        store.ledger.release(
            "f", version, lambda ledger, f=function: ledger.record(f, "alice", 5.0, 1)
        )
    assert [
        (r.version, r.seq, r.function)
        for version in (1, 2)
        for r in store.ledger.functions("f", version).functions
    ] == [(1, 1, [1, 0]), (2, 1, [0, 1])]
    # The count of a principal's releases is over the whole key.
    assert store.ledger.release("f", 1, lambda ledger: ledger.released_since("alice", 0.0)) == 2


def test_decisions_on_one_version_are_taken_one_at_a_time(store: KeyStore, store_url: str) -> None:
    _fe_key(store)

    def decide(ledger: FunctionLedger) -> None:
        rank = len(ledger.basis) + 1  # what a decision seeing a stale basis would repeat
        ledger.basis = [*ledger.basis, [rank, 0]]
        ledger.record([rank, 0], "alice", float(rank), rank)

    def releaser(releasing: KeyStore) -> None:
        for _ in range(4):
            releasing.ledger.release("f", 1, decide)

    at_once(store, store_url, releaser)
    released = store.ledger.functions("f", 1, limit=20).functions
    assert [(r.seq, r.rank) for r in released] == [(n, n) for n in range(1, 17)]


def test_decisions_on_all_versions_of_a_key_are_taken_one_at_a_time(
    store: KeyStore, store_url: str
) -> None:
    """A quota counts releases under every version of a key: decisions on different versions
    at once each see the others' (each version's own lock let a quota of 2 release 3 or 4)."""
    _fe_key(store, versions=4)
    versions = iter([1, 2, 3, 4] * 3)

    def decide(ledger: FunctionLedger) -> bool:
        if ledger.released_since("alice", 0.0) >= 2:
            return False
        ledger.record([1, 0], "alice", 1.0, 1)
        return True

    def releaser(releasing: KeyStore) -> bool:
        return releasing.ledger.release("f", next(versions), decide)

    assert sorted(at_once(store, store_url, releaser, processes=12)) == [False] * 10 + [True] * 2


def test_a_decision_on_a_version_trimmed_meanwhile_finds_no_version(
    store: KeyStore, store_url: str
) -> None:
    """A release racing the trim of its version: decided before the trim (and its record gone
    with the version) or refused as a missing version, never a foreign-key error."""
    for attempt in range(3):
        made = store.keys.create(f"t{attempt}", "ipfe-opt", PARAMS, False, b"f" * 64, b"p")
        for _ in range(2):
            store.keys.rotate(f"t{attempt}", b"g" * 64, b"q", made.created_at)
        calls = iter(range(8))

        def act(on: KeyStore, name: str = f"t{attempt}", calls: Iterator[int] = calls) -> str:
            if next(calls) == 0:
                on.keys.set_policy(name, lambda key: {"min_decryption_version": 3})
                on.keys.trim(name)
                return "trimmed"
            try:
                on.ledger.release(name, 1, lambda ledger: ledger.record([1, 0], "a", 1.0, 1))
            except VersionNotFoundError:
                return "refused"
            return "released"

        outcomes = at_once(store, store_url, act, processes=8)
        assert set(outcomes) <= {"trimmed", "refused", "released"}
        assert store.ledger.functions(f"t{attempt}", 1).functions == []


def test_the_ledger_goes_with_its_versions(store: KeyStore) -> None:
    _fe_key(store, versions=3)
    for version in (1, 2, 3):
        store.ledger.release("f", version, lambda ledger: ledger.record([1, 0], "alice", 1.0, 1))
    store.keys.set_policy("f", lambda key: {"min_decryption_version": 3})
    store.keys.trim("f")
    assert [len(store.ledger.functions("f", v).functions) for v in (1, 2, 3)] == [0, 0, 1]
    assert rows(store, "SELECT version FROM fe_bases") == [(3,)]
    store.keys.delete("f")
    assert rows(store, "SELECT COUNT(*) FROM fe_functions") == [(0,)]
    assert rows(store, "SELECT COUNT(*) FROM fe_bases") == [(0,)]
    _fe_key(store)  # the name again: a ledger of its own, empty
    assert store.ledger.functions("f", 1).functions == []


def test_a_basis_left_as_it_was_read_is_not_written_again(store: KeyStore) -> None:
    """A release that leaves the rank as it was leaves the basis: a QFE basis is megabytes."""
    _fe_key(store)

    def grow(ledger: FunctionLedger) -> None:
        ledger.record([1, 0], "alice", 1.0, 1)
        ledger.basis = [[-1, 7], [1, 0]]

    store.ledger.release("f", 1, grow)
    assert rows(store, "SELECT basis FROM fe_bases") == [("[[-1,7],[1,0]]",)]
    with store.database.transaction(write=True) as cursor:  # as no write of the store spells it
        cursor.execute("UPDATE fe_bases SET basis = '[[-1, 7], [1, 0]]'")
    store.ledger.release("f", 1, lambda ledger: ledger.record([2, 0], "alice", 2.0, 1))
    assert rows(store, "SELECT basis FROM fe_bases") == [("[[-1, 7], [1, 0]]",)]
    assert [r.rank for r in store.ledger.functions("f", 1).functions] == [1, 1]


def _release(store: KeyStore, functions: list[list[int]], ranks: list[int]) -> None:
    def decide(ledger: FunctionLedger) -> None:
        for at, (function, rank) in enumerate(zip(functions, ranks, strict=True)):
            ledger.record(function, "alice", float(at), rank)

    store.ledger.release("f", 1, decide)


def test_a_version_s_ledger_is_read_in_pages(store: KeyStore) -> None:
    """Each page names the next one's start, the last none; every page has the rank of the
    whole version, which its own functions may not reach."""
    _fe_key(store)
    _release(store, [[1, 0], [2, 0], [0, 1], [1, 1], [3, 3]], [1, 1, 2, 2, 2])
    pages, after = [], 0
    while True:
        page = store.ledger.functions("f", 1, after=after, limit=2)
        pages.append(([r.seq for r in page.functions], page.next, page.rank))
        if page.next is None:
            break
        after = page.next
    assert pages == [([1, 2], 2, 2), ([3, 4], 4, 2), ([5], None, 2)]
    assert store.ledger.functions("f", 1, limit=5).next is None
    assert store.ledger.functions("f", 1, after=5) == FunctionPage([], None, 2)
    assert store.ledger.functions("f", 1, after=2**63 - 1) == FunctionPage([], None, 2)


def test_a_page_stops_after_the_function_that_reaches_its_bytes(
    store: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database weighs the stored text ("[1, 0]", 6 bytes each here) and keeps the rows
    up to the one that reaches the budget: one at least, however heavy."""
    _fe_key(store)
    _release(store, [[1, 0], [2, 0], [3, 0], [4, 0], [5, 0]], [1] * 5)
    monkeypatch.setattr(pages, "PAGE_BYTES", 12)  # the second row reaches it exactly
    first = store.ledger.functions("f", 1)
    assert ([r.seq for r in first.functions], first.next, first.rank) == ([1, 2], 2, 1)
    monkeypatch.setattr(pages, "PAGE_BYTES", 13)  # the third crosses it
    assert [r.seq for r in store.ledger.functions("f", 1).functions] == [1, 2, 3]
    last = store.ledger.functions("f", 1, after=3)
    assert ([r.seq for r in last.functions], last.next) == ([4, 5], None)
    monkeypatch.setattr(pages, "PAGE_BYTES", 1)
    assert [r.seq for r in store.ledger.functions("f", 1, after=4).functions] == [5]
    assert store.ledger.functions("f", 1, after=3).next == 4


def test_a_page_holds_4_mib_of_functions(store: KeyStore) -> None:
    """Five functions of 1.5 MiB each (as stored): the first page ends with the third, which
    takes it past 4 MiB, the second holds the rest."""
    assert pages.PAGE_BYTES == 4 * 2**20
    _fe_key(store)
    functions = [[10**18 + at] * 74_898 for at in range(5)]
    assert {len(json.dumps(f)) for f in functions} == {1_572_858}  # 1.5 MiB, less 6 bytes
    _release(store, functions, [1] * 5)
    first = store.ledger.functions("f", 1)
    assert ([r.seq for r in first.functions], first.next) == ([1, 2, 3], 3)
    assert [r.function for r in first.functions] == functions[:3]
    second = store.ledger.functions("f", 1, after=3)
    assert ([r.seq for r in second.functions], second.next) == ([4, 5], None)
