"""What the store suites share: the root keys they open stores under, a look at the raw rows
behind a store's back, several processes' stores acting at once, and tokens of thousands of
globs."""

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


# Globs that match some of LISTED_NAMES, for a token that holds them among thousands that match
# none (a token carries up to `app.ops.grants.MAX_PATTERNS`; a listing takes any number).
MATCHING_GLOBS = [
    "team-00[0-4]-a", "team-01?-b", "team-02*", "[!t]*.1", "orders-7", "team-039-b",
    "team-03[!0-8]-a", "*-x",
]  # fmt: skip
LISTED_NAMES = [
    *(f"team-{i:03}-{side}" for i in range(40) for side in "ab"),
    "orders-7", "orders-8", "x.1", "tx.1", "y-x", "nobody-000001-" + "a" * 20,
]  # fmt: skip


def many_globs(count: int, long: bool = True) -> list[str]:
    """`count` globs: MATCHING_GLOBS spread from first to last among ones that match no key, of
    115 characters (9 wildcards) or, not `long`, 16."""
    tail = "[a-z]?*" * 3 + "x" * 80 if long else "*z"
    globs = [f"nobody-{i:06}-{tail}" for i in range(count - len(MATCHING_GLOBS))]
    for i, glob in enumerate(MATCHING_GLOBS):
        globs.insert(i * len(globs) // (len(MATCHING_GLOBS) - 1), glob)
    return globs
