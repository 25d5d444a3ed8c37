"""GetKeyLastUsage's reading of the audit trail: what counts as a use, and its bound on the
records one call reads."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.ops.kms import usage
from app.store import AuditHead, AuditRow, KeyStore, open_store
from tests.app.store.stores import root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KeyStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}", root())
    yield opened
    opened.close()


def _records(store: KeyStore, key: str, *made: tuple[float, str, int]) -> None:
    """Records of `key` in a chain of its own, each (time, operation, status)."""
    rows = [
        AuditRow(key, seq, at, f"r{seq}", None, None, operation, key, "1", status, None, "{}", b"")
        for seq, (at, operation, status) in enumerate(made, 1)
    ]
    store.audit.append(rows, AuditHead(key, len(rows), b"t"))


@pytest.mark.parametrize(
    ("operation", "use"),
    [
        ("aez_encrypt_raw", "Encrypt"),
        ("transit_decrypt", "Decrypt"),
        ("ecies_datakey_batch", "GenerateDataKey"),
        ("aead_rewrap", "ReEncrypt"),
        ("jwt_sign", "Sign"),
        ("verify_verify", "Verify"),
        ("transit_hmac_with", "GenerateMac"),
        ("hmac_verify_batch", "VerifyMac"),
        ("fe_decrypt_many", "Decrypt"),
        ("keys_get_key", None),
        ("keys_rotate_key", None),
    ],
)
def test_what_counts_as_a_use(operation: str, use: str | None) -> None:
    assert usage.use_of(operation) == use


def test_the_newest_successful_use_since_the_key_was_made(store: KeyStore) -> None:
    info = store.keys.create("k", "aez", {}, False, b"s" * 48, None)
    made = info.created_at
    _records(
        store,
        "k",
        (made - 5, "aez_decrypt", 200),  # a key of the same name, deleted since
        (made + 1, "aez_encrypt", 200),
        (made + 2, "aez_decrypt", 400),  # failed
        (made + 3, "keys_get_key", 200),  # not a use
    )
    use, since = usage.last_use(store, info)
    assert use is not None and (use.time, use.operation) == (made + 1, "aez_encrypt")
    assert since == made


def test_no_more_than_the_window_is_read(store: KeyStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A use behind WINDOW other records is not found; the answer then holds from the oldest
    record read."""
    monkeypatch.setattr(usage, "WINDOW", 50)
    monkeypatch.setattr(usage, "PAGE", 20)
    info = store.keys.create("k", "aez", {}, False, b"s" * 48, None)
    made = info.created_at
    reads = [(made + 2 + i, "keys_get_key", 200) for i in range(50)]
    _records(store, "k", (made + 1, "aez_encrypt", 200), *reads)
    assert usage.last_use(store, info) == (None, made + 2)
    one_less = store.keys.create("j", "aez", {}, False, b"s" * 48, None)
    _records(store, "j", (made + 1, "aez_encrypt", 200), *reads[:49])
    found, since = usage.last_use(store, one_less)
    assert found is not None and found.operation == "aez_encrypt" and since == one_less.created_at
