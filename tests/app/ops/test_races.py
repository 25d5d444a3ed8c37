"""Requests at once from several processes on one database, as replicas and workers send them:
each verb that reads and then writes holds what it promised, on SQLite and on PostgreSQL, where
a row lock on no row locks nothing and a read outside the write is stale by the time it writes.
"""

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from app.ops.transit import keys as transit_keys
from app.ops.transit.keys import TransitKeyCreate
from app.settings import Settings
from app.store import KeyStore, open_store
from tests.app.store.stores import at_once, root
from tests.conftest import STORES

T = TypeVar("T")
PROCESSES = 8


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[KeyStore]:
    opened = open_store(store_url, root())
    yield opened
    opened.close()


def together(store: KeyStore, url: str, act: Callable[[KeyStore], T]) -> list[T]:
    """`act` on PROCESSES stores of the database, released at the same moment."""
    barrier = threading.Barrier(PROCESSES)

    def released(on: KeyStore) -> T:
        barrier.wait()
        return act(on)

    return at_once(store, url, released, processes=PROCESSES)


def test_a_transit_key_created_at_once_is_one_key(
    store: KeyStore, store_url: str, settings: Settings
) -> None:
    """Transit's create is idempotent: creations of one name at once (or first encryptions,
    which create it) each answer the key, where all but one were a 400 "already exists"."""
    for attempt in range(3):
        name = f"made-at-once-{attempt}"
        made = together(
            store,
            store_url,
            lambda on: transit_keys.create(on, name, TransitKeyCreate(), settings).name,  # noqa: B023
        )
        assert made == [name] * PROCESSES
        assert store.keys.get(name).latest_version == 1
