"""`SharedRead`: each caller gets a read that started after it arrived; the last answer serves
those that arrived before its read started, a read at once is made on the event loop where it
can be, and callers arriving while a thread's read is under way share the next one."""

import asyncio
import threading
import time

import pytest

from app.ops.work import SharedBlockingRead, SharedRead


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
        return [await read(time.monotonic()) for _ in range(3)]

    assert asyncio.run(run()) == [1, 2, 3]


def test_callers_during_a_read_share_the_next_one() -> None:
    async def run() -> tuple[int, list[int], int]:
        counter = Counter()
        counter.release.clear()
        read = SharedRead(counter)
        first = asyncio.ensure_future(read(time.monotonic()))
        await _until(lambda: counter.started == 1)
        # These asked after read 1 began, so read 1 may not answer them: they share read 2.
        later = [asyncio.ensure_future(read(time.monotonic())) for _ in range(10)]
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
        first = asyncio.ensure_future(read(time.monotonic()))
        await _until(lambda: counter.started == 1)
        later = [asyncio.ensure_future(read(time.monotonic())) for _ in range(3)]
        counter.release.set()
        outcomes = await asyncio.gather(first, *later, return_exceptions=True)
        counter.failing = False
        return [str(o) for o in outcomes], await read(time.monotonic())

    outcomes, after = asyncio.run(run())
    assert outcomes == ["read 1 failed"] + ["read 2 failed"] * 3
    assert after == 3


def test_a_caller_that_goes_away_leaves_the_read_to_the_others() -> None:
    async def run() -> int:
        counter = Counter()
        counter.release.clear()
        read = SharedRead(counter)
        leaving = asyncio.ensure_future(read(time.monotonic()))
        # Arrives, and runs, once read 1 is under way: read 2.
        await _until(lambda: counter.started == 1)
        staying = asyncio.ensure_future(read(time.monotonic()))
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
    assert asyncio.run(read(time.monotonic())) == 1
    assert asyncio.run(read(time.monotonic())) == 2


def test_callers_that_arrived_before_a_read_began_take_its_answer() -> None:
    """Requests whose heads were read in one turn of the event loop: one read for all."""

    async def run() -> tuple[list[int], int, int]:
        counter = Counter()
        read = SharedRead(counter)
        arrived = time.monotonic()
        together = [await read(arrived) for _ in range(5)]
        after = await read(time.monotonic())
        return together, after, counter.started

    together, after, reads = asyncio.run(run())
    assert together == [1] * 5
    assert after == 2  # arrived once read 1 had started: a read of its own
    assert reads == 2


class AtOnce:
    """A read made on the event loop, or None (then the thread's read), as told."""

    def __init__(self) -> None:
        self.made = 0
        self.can = True

    def __call__(self) -> int | None:
        if not self.can:
            return None
        self.made += 1
        return 100 + self.made


def test_a_read_at_once_answers_on_the_event_loop() -> None:
    async def run() -> tuple[list[int], int, int]:
        counter, at_once = Counter(), AtOnce()
        read = SharedRead(counter, at_once)
        arrived = time.monotonic()
        together = [await read(arrived) for _ in range(3)]
        later = await read(time.monotonic())
        at_once.can = False
        fallback = await read(time.monotonic())
        return [*together, later, fallback], at_once.made, counter.started

    answers, made, thread_reads = asyncio.run(run())
    assert answers == [101, 101, 101, 102, 1]
    assert made == 2
    assert thread_reads == 1


def test_an_answer_read_earlier_never_replaces_a_later_one() -> None:
    """A thread's read that started before a read at once, and ends after it, is not kept."""

    async def run() -> tuple[int, int]:
        counter, at_once = Counter(), AtOnce()
        counter.release.clear()
        at_once.can = False
        read = SharedRead(counter, at_once)
        slow = asyncio.ensure_future(read(time.monotonic()))
        await _until(lambda: counter.started == 1)
        at_once.can = True
        quick_arrival = time.monotonic()
        quick = await read(quick_arrival)
        counter.release.set()
        await slow
        return quick, await read(quick_arrival)

    quick, again = asyncio.run(run())
    assert quick == 101
    assert again == 101


def test_threads_asking_during_a_read_share_the_next_one() -> None:
    """`SharedBlockingRead`: the one thread whose read is under way gets it; the ten that asked
    meanwhile get the next read, made once for all of them."""
    counter = Counter()
    counter.release.clear()
    read = SharedBlockingRead(counter)
    answers: list[int] = []
    first = threading.Thread(target=lambda: answers.append(read()))
    first.start()
    deadline = time.monotonic() + 5
    while counter.started == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    later = [threading.Thread(target=lambda: answers.append(read())) for _ in range(10)]
    for thread in later:
        thread.start()
    time.sleep(0.05)
    counter.release.set()
    for thread in [first, *later]:
        thread.join(5)
    assert sorted(answers) == [1] + [2] * 10
    assert counter.started == 2


def test_a_failed_blocking_read_fails_its_callers_and_the_next_caller_reads_again() -> None:
    counter = Counter()
    counter.failing = True
    read = SharedBlockingRead(counter)
    with pytest.raises(RuntimeError, match="read 1 failed"):
        read()
    counter.failing = False
    assert read() == 2
