"""The wrapping key repository on SQLite and PostgreSQL: one pair per store, the same for every
process however many ask at once, kept wrapped, and the same after the keyring and the root key
are rotated."""

import os
import time
from concurrent.futures import ThreadPoolExecutor

from app.store import KeyStore, KeyWrapper, open_store
from tests.app.store.stores import NEW_ROOT_KEY, at_once, root, rows


def test_every_process_gets_the_one_pair_stored(store: KeyStore, store_url: str) -> None:
    drawn: list[tuple[bytes, bytes]] = []

    def generate() -> tuple[bytes, bytes]:
        drawn.append((os.urandom(32), os.urandom(65)))
        return drawn[-1]

    pairs = at_once(store, store_url, lambda opened: opened.wrapping_key.pair(generate))
    assert len(pairs) == 4 and len(set(pairs)) == 1 and pairs[0] in drawn
    draws = len(drawn)
    assert store.wrapping_key.pair(generate) == pairs[0] and len(drawn) == draws


def test_the_secret_is_kept_wrapped_and_outlives_rotations(store: KeyStore, store_url: str) -> None:
    secret, public = store.wrapping_key.pair(lambda: (b"S" * 32, b"P" * 65))
    ((wrapped, stored_public),) = rows(store, "SELECT wrapped, public FROM wrapping_key")
    assert b"S" * 32 not in bytes(wrapped) and bytes(stored_public) == public
    store.keyring.rotate()
    store.keyring.rotate_root(KeyWrapper(NEW_ROOT_KEY))
    store.close()
    reopened = open_store(store_url, root(NEW_ROOT_KEY))
    try:
        assert reopened.wrapping_key.pair(lambda: (b"x" * 32, b"y" * 65)) == (secret, public)
    finally:
        reopened.close()


def test_transit_s_import_key_is_a_pair_of_its_own(store: KeyStore, store_url: str) -> None:
    instance = store.wrapping_key.pair(lambda: (b"S" * 32, b"P" * 65))
    drawn: list[tuple[bytes, bytes]] = []

    def generate() -> tuple[bytes, bytes]:
        drawn.append((os.urandom(64), os.urandom(64)))
        return drawn[-1]

    pairs = at_once(store, store_url, lambda opened: opened.import_key.pair(generate))
    assert len(set(pairs)) == 1 and pairs[0] in drawn and pairs[0] != instance
    ((wrapped,),) = rows(store, "SELECT wrapped FROM transit_import_key")
    assert pairs[0][0] not in bytes(wrapped)
    assert store.wrapping_key.pair(generate) == instance


def test_a_process_draws_once_however_many_ask_at_once(store: KeyStore) -> None:
    """An RSA-4096 import key takes a second to draw: threads asking together wait for one."""
    drawn: list[int] = []

    def generate() -> tuple[bytes, bytes]:
        drawn.append(1)
        time.sleep(0.2)
        return os.urandom(64), os.urandom(64)

    with ThreadPoolExecutor(4) as pool:
        pairs = list(pool.map(lambda _: store.import_key.pair(generate), range(4)))
    assert len(drawn) == 1 and len(set(pairs)) == 1


def test_the_public_part_is_the_pair_s_drawn_once(store: KeyStore) -> None:
    drawn: list[int] = []

    def generate() -> tuple[bytes, bytes]:
        drawn.append(1)
        return os.urandom(64), os.urandom(64)

    public = store.import_key.public(generate)
    assert store.import_key.public(generate) == public == store.import_key.pair(generate)[1]
    assert len(drawn) == 1
