"""What the store suites share: the root keys they open stores under, a look at the raw rows
behind a store's back, and several processes' stores acting at once."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from app.store import KeyStore, KeyWrapper, RootKeyLoader, open_store

T = TypeVar("T")

ROOT_KEY = bytes(range(32))
NEW_ROOT_KEY = bytes(range(100, 132))


def root(key: bytes = ROOT_KEY) -> RootKeyLoader:
    """A root key source that always gives `key`."""
    return lambda: KeyWrapper(key)


def rows(store: KeyStore, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows `query` reads from the store's tables directly."""
    with store.database.transaction(write=False) as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def at_once(store: KeyStore, url: str, act: Callable[[KeyStore], T], processes: int = 4) -> list[T]:
    """What `act` answers on `store` and on others opened on its database, as other processes
    would, all acting at once (the first error raised, if any)."""
    stores = [store, *(open_store(url, root()) for _ in range(processes - 1))]
    try:
        with ThreadPoolExecutor(len(stores)) as pool:
            return list(pool.map(act, stores))
    finally:
        for other in stores[1:]:
            other.close()
