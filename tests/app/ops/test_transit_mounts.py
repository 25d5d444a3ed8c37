"""The mount table as requests see it: the cached table while it is fresh, and once it is
stale, one read of the store for all the requests that find it so together."""

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.ops.transit.mounts import ENGINE, Mounts
from app.store import KeyStore, open_store
from tests.app.store.stores import root


class CountedReads:
    """The store's reads of the mount table, counted, each held until `release` is set."""

    def __init__(self, store: KeyStore) -> None:
        self.count = 0
        self.release = threading.Event()
        self.release.set()
        self._all = store.secret_mounts.all
        store.secret_mounts.all = self  # type: ignore[method-assign]

    def __call__(self):  # type: ignore[no-untyped-def]
        self.count += 1
        self.release.wait(5)
        return self._all()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KeyStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}", root())
    yield opened
    opened.close()


def test_requests_finding_the_table_stale_together_share_one_read(store: KeyStore) -> None:
    mounts = Mounts(store, cache_seconds=60)
    reads = CountedReads(store)
    reads.release.clear()

    async def run() -> list[list[str]]:
        waiting = [asyncio.ensure_future(mounts.current_table()) for _ in range(20)]
        await asyncio.sleep(0.1)
        reads.release.set()
        tables = await asyncio.gather(*waiting)
        again = await mounts.current_table()  # fresh now: no read
        return [list(table) for table in [*tables, again]]

    assert asyncio.run(run()) == [[ENGINE]] * 21
    assert reads.count == 1


def test_a_table_older_than_the_cache_lifetime_is_read_again(store: KeyStore) -> None:
    mounts = Mounts(store, cache_seconds=0)
    reads = CountedReads(store)

    async def run() -> None:
        for _ in range(3):
            await mounts.current_table()

    asyncio.run(run())
    assert reads.count == 3
