"""`SharedRead`: each caller gets a read that started after it asked; callers arriving while a
read is under way share the next one."""

import asyncio
import threading

import pytest

from app.ops.work import SharedRead


class Counter:
    """A blocking read that answers how many reads have started, held until released."""

    def __init__(self) -> None:
        self.started = 0
        self.release = threading.Event()
        self.release.set()
        self.failing = False

    def __call__(self) -> int:
        self.started += 1
        number = self.started
        self.release.wait(5)
        if self.failing:
            raise RuntimeError(f"read {number} failed")
        return number


async def _until(condition) -> None:  # type: ignore[no-untyped-def]
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


def test_callers_one_after_another_each_read() -> None:
    async def run() -> list[int]:
        read = SharedRead(Counter())
        return [await read() for _ in range(3)]

    assert asyncio.run(run()) == [1, 2, 3]


def test_callers_during_a_read_share_the_next_one() -> None:
    async def run() -> tuple[int, list[int], int]:
        counter = Counter()
        counter.release.clear()
        read = SharedRead(counter)
        first = asyncio.ensure_future(read())
        await _until(lambda: counter.started == 1)
        # These asked after read 1 began, so read 1 may not answer them: they share read 2.
        later = [asyncio.ensure_future(read()) for _ in range(10)]
        await asyncio.sleep(0.05)
        counter.release.set()
        return await first, list(await asyncio.gather(*later)), counter.started

    first, later, reads = asyncio.run(run())
    assert first == 1
    assert later == [2] * 10
    assert reads == 2


def test_a_failed_read_fails_its_sharers_and_the_next_call_reads_again() -> None:
    async def run() -> tuple[list[object], int]:
        counter = Counter()
        counter.release.clear()
        counter.failing = True
        read = SharedRead(counter)
        first = asyncio.ensure_future(read())
        await _until(lambda: counter.started == 1)
        later = [asyncio.ensure_future(read()) for _ in range(3)]
        counter.release.set()
        outcomes = await asyncio.gather(first, *later, return_exceptions=True)
        counter.failing = False
        return [str(o) for o in outcomes], await read()

    outcomes, after = asyncio.run(run())
    assert outcomes == ["read 1 failed"] + ["read 2 failed"] * 3
    assert after == 3


def test_a_caller_that_goes_away_leaves_the_read_to_the_others() -> None:
    async def run() -> int:
        counter = Counter()
        counter.release.clear()
        read = SharedRead(counter)
        leaving = asyncio.ensure_future(read())
        staying = asyncio.ensure_future(read())  # runs once read 1 is under way: read 2
        await _until(lambda: counter.started == 1)
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
        counter.release.set()
        return await staying

    assert asyncio.run(run()) == 2


def test_a_new_event_loop_starts_afresh() -> None:
    counter = Counter()
    read = SharedRead(counter)
    assert asyncio.run(read()) == 1
    assert asyncio.run(read()) == 2
