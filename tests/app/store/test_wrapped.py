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
