"""Where a verb's computation runs: on the event loop when it is small, else in a thread; and
reads that the requests of an event loop, or blocking threads, share.

A hop to a worker thread and back costs more than the AEZ or AES-GCM work of a small payload, so
those run inline; large payloads would stall every other request of the worker, so they go to
the thread pool.
"""

import asyncio
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Generic, ParamSpec, TypeVar

from anyio.to_thread import run_sync

ResultT = TypeVar("ResultT")
ArgsP = ParamSpec("ArgsP")

# Crypto on a payload up to this size runs on the event loop.
INLINE_BYTES = 64 * 1024


async def compute(
    size: int, function: Callable[ArgsP, ResultT], *args: ArgsP.args, **kwargs: ArgsP.kwargs
) -> ResultT:
    """`function(*args)` for a payload of `size` bytes: inline when small, else in a thread."""
    if size <= INLINE_BYTES:
        return function(*args, **kwargs)
    return await run_sync(partial(function, *args, **kwargs))


async def in_thread(
    function: Callable[ArgsP, ResultT], *args: ArgsP.args, **kwargs: ArgsP.kwargs
) -> ResultT:
    """`function(*args)` in the thread pool: it may wait on the store or on a lock."""
    return await run_sync(partial(function, *args, **kwargs))


class SharedRead(Generic[ResultT]):
    """A read that the requests of one event loop share: each gets the answer of a read that
    started after it arrived (so it sees every change committed before it arrived).

    The last answer serves every request that arrived before its read started: the requests
    whose heads were read together, in one turn of the event loop, are answered by one read.
    That read is made on the event loop when `read_at_once` can (a file of this machine, never
    waiting: no request then waits at all); else in a worker thread, where those arriving while
    one read is under way share the next. One hop then serves a whole wave of requests, where a
    hop each would cost a small request as much as its work. Each caller waits on a future of
    its own, so that one that goes away cancels no read.
    """

    def __init__(
        self, read: Callable[[], ResultT], read_at_once: Callable[[], ResultT | None] | None = None
    ) -> None:
        self._read = read
        self._read_at_once = read_at_once
        # When the read of the last answer started (monotonic), and the answer.
        self._last: tuple[float, ResultT] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading: asyncio.Task[ResultT] | None = None
        self._reading_since = 0.0
        self._answered_by_this: list[asyncio.Future[ResultT]] = []
        self._answered_by_next: list[asyncio.Future[ResultT]] = []

    async def __call__(self, arrived: float) -> ResultT:
        """The answer of a read that started at or after `arrived` (time.monotonic())."""
        last = self._last
        if last is not None and last[0] >= arrived:
            return last[1]
        if self._read_at_once is not None:
            started = time.monotonic()
            answer = self._read_at_once()
            if answer is not None:
                self._keep(started, answer)
                return answer
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # the first call, or an earlier loop's reads: start anew
            self._loop, self._reading = loop, None
            self._answered_by_this, self._answered_by_next = [], []
        waiter: asyncio.Future[ResultT] = loop.create_future()
        if self._reading is None:
            self._answered_by_this.append(waiter)
            self._start(loop)
        else:
            self._answered_by_next.append(waiter)
        return await waiter

    def _keep(self, started: float, answer: ResultT) -> None:
        if self._last is None or started >= self._last[0]:
            self._last = (started, answer)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._reading_since = time.monotonic()
        self._reading = loop.create_task(run_sync(self._read))
        self._reading.add_done_callback(self._finished)

    def _finished(self, read: "asyncio.Task[ResultT]") -> None:
        if read is not self._reading:  # an earlier loop's
            return
        waiters, self._answered_by_this = self._answered_by_this, []
        error = None if read.cancelled() else read.exception()
        if not read.cancelled() and error is None:
            self._keep(self._reading_since, read.result())
        for waiter in waiters:
            if waiter.done():
                continue
            if read.cancelled():
                waiter.cancel()
            elif error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(read.result())
        self._reading = None
        if self._answered_by_next:
            self._answered_by_this, self._answered_by_next = self._answered_by_next, []
            assert self._loop is not None
            self._start(self._loop)


class SharedBlockingRead(Generic[ResultT]):
    """`SharedRead` for threads that block: a caller gets the answer of a read that started
    after it asked, and the callers asking while one read is under way wait for the next,
    which one of them makes. So however many threads ask, one read at a time is made."""

    def __init__(self, read: Callable[[], ResultT]) -> None:
        self._read = read
        self._changed = threading.Condition()
        self._asked = 0  # callers counted so far
        self._answered = 0  # the callers the last read covers
        self._reading = False
        self._last: tuple[ResultT] | None = None

    def __call__(self) -> ResultT:
        with self._changed:
            self._asked += 1
            ticket = self._asked
            while True:
                if self._answered >= ticket and self._last is not None:
                    return self._last[0]
                if not self._reading:
                    self._reading = True
                    covers = self._asked
                    break
                self._changed.wait()
        try:
            answer = self._read()
        except BaseException:
            with self._changed:
                self._reading = False
                self._changed.notify_all()
            raise
        with self._changed:
            self._reading = False
            self._last, self._answered = (answer,), max(self._answered, covers)
            self._changed.notify_all()
        return answer
