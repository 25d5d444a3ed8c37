"""Where a verb's computation runs: on the event loop when it is small, else in a thread.

A hop to a worker thread and back costs more than the AEZ or AES-GCM work of a small payload, so
those run inline; large payloads would stall every other request of the worker, so they go to
the thread pool.
"""

from collections.abc import Callable
from functools import partial
from typing import ParamSpec, TypeVar

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
