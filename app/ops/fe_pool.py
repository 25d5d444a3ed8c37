"""FE decryptions in a bounded pool of processes, so that one worker uses more than one core.

RELIC has one global context and is not thread-safe, so a process runs one pairing at a time,
and concurrent FE requests on one worker would queue for its lock for the whole request. A
`FePool` runs decryptions in `processes` processes of their own (CIPHERD_FE_PROCESSES), each with
its own RELIC and its own caches of tables and prepared keys, while the worker keeps answering
the small decryptions it has everything cached for on its event loop.

A job crosses to a pool process as plain values: the functional key and ciphertext bytes, the
bounds, and what the worker checked them against (scheme, curve, dimension, master key id, and
tao's public base). No secret leaves the worker. Each process checks every header again before
decoding a point, as the worker does. A pool process's own figures (its caches) stay out of
/metrics, which reports the workers': with several workers the page is the sum over the files of
live workers, and a pool process that outlived its worker would keep its figures in that sum.
"""

import asyncio
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from app.ops.errors import KNOWN_ERRORS, Problem, invalid_input, problem_for
from app.ops.fe_cache import CacheBudgets, Cold, FeCaches
from app.server.metrics import process_metrics_only, timed
from core.errors import EncodingError, KeyMismatchError
from core.fe import encoding, group
from core.fe.schemes import SCHEMES, Scheme

log = logging.getLogger("cipherd.fe")

Decrypt = Callable[[bytes], int | None]


@dataclass(frozen=True)
class Decryption:
    """Decryption under one functional key, checked against one version of an FE key."""

    key_type: str
    curve: str
    name: str
    version: int
    dimension: int
    master_id: bytes
    base: bytes | None  # tao: the version's published decryption base
    functional_key: bytes
    lo: int
    hi: int

    @property
    def scheme(self) -> Scheme:
        return SCHEMES[self.key_type].on(self.curve)

    def check_header(self, data: bytes, field: str) -> None:
        """Check an encoding's header against the key before any of its points is decoded:
        scheme and kind, curve, dimension, master id and total length. A ciphertext that claims
        n = 100,000 is refused here, not after 100,000 points were decoded."""
        module = self.scheme.module
        cls = module.Key if field == "functional_key" else module.Ciphertext
        try:
            header = cls.header_of(data)
        except EncodingError as exc:
            raise invalid_input(f"{field}: {exc}") from None
        if header.n != self.dimension:
            raise invalid_input(
                f"{field}: dimension {header.n}, but key {self.name!r} has dimension "
                f"{self.dimension}"
            )
        curve = group.curve(self.curve).name
        if header.curve != curve:
            raise invalid_input(
                f"{field}: made on {header.curve}, but key {self.name!r} is {curve}"
            )
        if not encoding.same_id(header.master_id, self.master_id):
            raise KeyMismatchError(
                f"{field}: not made under version {self.version} of key {self.name!r}; "
                "for one made under an earlier version, pass its key_version"
            )

    def runner(self, caches: FeCaches, warm_only: bool = False) -> Decrypt:
        """Decryption of ciphertexts under this key, with `caches`' tables and prepared keys.

        With `warm_only` it raises `Cold` rather than build a table, decode or prepare a key,
        or search a per-pair range: the caller is the event loop.
        """
        scheme, lo, hi = self.scheme, self.lo, self.hi
        if warm_only and scheme.base_kind == "per-pair":
            raise Cold
        key = caches.functional_key(scheme, self.functional_key, warm_only)
        curve = group.curve(scheme.curve)
        if scheme.base_kind == "per-pair":

            def find(ct: Any) -> int | None:
                value: int | None = scheme.module.decrypt(key, ct, lo, hi)
                return value
        else:
            if scheme.base_kind == "master":
                public = self.base or b""
                table = caches.table(public, lambda: curve.gt_from_bytes(public), lo, hi, warm_only)
            else:
                table = caches.table(
                    f"gT:{curve.name}".encode(), curve.gt_generator, lo, hi, warm_only
                )

            def find(ct: Any) -> int | None:
                value: int | None = scheme.module.decrypt(table, key, ct)
                return value

        def decrypt(data: bytes) -> int | None:
            self.check_header(data, "ciphertext")
            ciphertext = scheme.ciphertext(data)
            with timed("fe", f"{scheme.name}.decrypt"):
                return find(ciphertext)

        return decrypt


# The caches of a pool process, made by `_start` when the process starts.
_caches: FeCaches | None = None

Outcome = tuple[str, Any]


def _start(budgets: CacheBudgets) -> None:
    """A pool process's start: caches of its own, metrics of its own, and an exit when its
    worker is gone (killed outright, say), rather than a process left over unwatched."""
    global _caches
    process_metrics_only()
    _caches = FeCaches(budgets)
    worker = multiprocessing.parent_process()
    if worker is not None:
        threading.Thread(target=_exit_with, args=(worker,), daemon=True).start()


def _exit_with(worker: multiprocessing.process.BaseProcess) -> None:
    wait([worker.sentinel])
    os._exit(0)


def _decrypt(job: Decryption, ciphertext: bytes) -> Outcome:
    """A pool process's work: the value, or the problem as plain values (exceptions with
    arguments of their own do not all survive pickling)."""
    assert _caches is not None
    try:
        return "value", job.runner(_caches)(ciphertext)
    except KNOWN_ERRORS as exc:
        problem = problem_for(exc)
        assert problem is not None
        return "problem", (problem.status, problem.slug, problem.title, problem.detail)


def _ready() -> bool:
    return True


class FePool:
    """`processes` processes for FE decryptions, started by `start` (or the first decryption)
    and replaced if one dies. Each process's caches take `budgets` of their own."""

    def __init__(self, processes: int, budgets: CacheBudgets) -> None:
        self._processes = processes
        self._initargs = (budgets,)
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        # Decryptions sent and not yet answered; counted on the event loop only.
        self._busy = 0

    @property
    def idle(self) -> bool:
        """Whether a pool process is free: then a decryption goes there at once."""
        return self._busy < self._processes

    def start(self) -> None:
        with self._lock:
            if self._executor is None:
                self._executor = self._open()

    def _open(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            self._processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=self._initargs,
        )
        for _ in range(self._processes):  # start them now, not on the first request
            executor.submit(_ready)
        return executor

    async def decrypt(self, job: Decryption, ciphertext: bytes) -> int | None:
        self.start()
        executor = self._executor
        assert executor is not None
        self._busy += 1
        try:
            kind, value = await asyncio.wrap_future(executor.submit(_decrypt, job, ciphertext))
        except BrokenProcessPool:
            # A pool process died (killed, out of memory): a new pool for later requests, and
            # this one is answered 503, to be retried.
            with self._lock:
                if self._executor is executor:
                    log.error("an FE pool process died; starting a new pool")
                    self._executor = self._open()
            raise Problem(
                503,
                "fe-pool-restarting",
                "FE pool restarting",
                "the process running this decryption stopped; retry",
            ) from None
        finally:
            self._busy -= 1
        if kind == "problem":
            raise Problem(*value)
        result: int | None = value
        return result

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = None
