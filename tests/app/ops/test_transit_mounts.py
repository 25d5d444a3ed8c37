"""The mount table as requests see it: the cached table while it is fresh, and once it is
stale, one read of the store for all the requests that find it so together."""

import asyncio
import threading
from pathlib import Path

from app.ops.transit.mounts import ENGINE, Mounts
from app.store import open_store
from tests.app.store.stores import root


def test_requests_finding_the_table_stale_together_share_one_read(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}", root())
    try:
        mounts = Mounts(store, cache_seconds=60)
        reads = []
        release = threading.Event()
        real_all = store.secret_mounts.all

        def counted():  # type: ignore[no-untyped-def]
            reads.append(1)
            release.wait(5)
            return real_all()

        store.secret_mounts.all = counted  # type: ignore[method-assign]

        async def run() -> list[list[str]]:
            waiting = [asyncio.ensure_future(mounts.current_table()) for _ in range(20)]
            await asyncio.sleep(0.1)
            release.set()
            tables = await asyncio.gather(*waiting)
            again = await mounts.current_table()  # fresh now: no read
            return [list(table) for table in [*tables, again]]

        tables = asyncio.run(run())
        assert tables == [[ENGINE]] * 21
        assert len(reads) == 1
    finally:
        store.close()


def test_a_table_older_than_the_cache_lifetime_is_read_again(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}", root())
    try:
        mounts = Mounts(store, cache_seconds=0)
        reads = []
        real_all = store.secret_mounts.all

        def counted():  # type: ignore[no-untyped-def]
            reads.append(1)
            return real_all()

        store.secret_mounts.all = counted  # type: ignore[method-assign]

        async def run() -> None:
            for _ in range(3):
                await mounts.current_table()

        asyncio.run(run())
        assert len(reads) == 3
    finally:
        store.close()
