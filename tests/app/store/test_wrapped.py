"""Wrapped answers in the store: on both backends."""

import hashlib

from app.store import KeyStore, WrappedResponse


def wrapped(token: bytes, created_at: float = 100.0, ttl: int = 60) -> WrappedResponse:
    return WrappedResponse(
        "acc", hashlib.sha256(token).digest(), "sys/wrapping/wrap", created_at, ttl
    )


def test_a_wrapped_answer_is_sealed_and_taken_once(store: KeyStore) -> None:
    record = wrapped(b"token")
    store.wrapped.add(record, b'{"data": {"secret": "s3cr3t-answer"}}')
    with store.database.transaction(write=False) as cursor:
        cursor.execute("SELECT sealed FROM wrapped_responses")
        row = cursor.fetchone()
    assert row is not None and b"s3cr3t-answer" not in bytes(row[0])
    assert store.wrapped.lookup(record.token_hash, 120.0) == record
    taken = store.wrapped.take(record.token_hash, 120.0)
    assert taken == (record, b'{"data": {"secret": "s3cr3t-answer"}}')
    assert store.wrapped.take(record.token_hash, 120.0) is None
    assert store.wrapped.lookup(record.token_hash, 120.0) is None


def test_an_expired_wrapped_answer_is_refused_and_purged(store: KeyStore) -> None:
    expired, live = wrapped(b"one", ttl=10), wrapped(b"two", ttl=1000)
    store.wrapped.add(expired, b"{}")
    store.wrapped.add(WrappedResponse("acc-2", live.token_hash, "p", 100.0, 1000), b"{}")
    assert store.wrapped.lookup(expired.token_hash, 200.0) is None
    assert store.wrapped.delete_expired(200.0, 10) == 1
    assert store.wrapped.take(expired.token_hash, 200.0) is None
    assert store.wrapped.lookup(live.token_hash, 200.0) is not None


def test_a_purge_takes_the_earliest_expired_first_and_at_most_its_limit(store: KeyStore) -> None:
    for index, ttl in enumerate([50, 10, 30, 5000]):
        token = f"token-{index}".encode()
        record = WrappedResponse(f"acc-{index}", hashlib.sha256(token).digest(), "p", 100.0, ttl)
        store.wrapped.add(record, b"{}")
    assert store.wrapped.delete_expired(1000.0, 2) == 2
    with store.database.transaction(write=False) as cursor:
        cursor.execute("SELECT accessor FROM wrapped_responses ORDER BY accessor")
        assert [row[0] for row in cursor.fetchall()] == ["acc-0", "acc-3"]
    assert store.wrapped.delete_expired(1000.0, 2) == 1
    assert store.wrapped.delete_expired(1000.0, 2) == 0
