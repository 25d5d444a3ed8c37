"""FE decryptions in a bounded pool of processes, so that one worker uses more than one core.

RELIC has one global context and is not thread-safe, so a process runs one pairing at a time,
and concurrent FE requests on one worker would queue for its lock for the whole request. A
`FePool` runs decryptions in `processes` processes of their own (CIPHERD_FE_PROCESSES), each with
its own RELIC and its own caches of tables and prepared keys, while the worker keeps answering
the small decryptions it has everything cached for on its event loop.

A job crosses to a pool process as plain values: the functional key and ciphertext bytes, the
bounds, what the worker checked them against (scheme, curve, dimension, master key id) and the
key version's public part (tao's decryption base). No secret leaves the worker. Each process
checks every header again before decoding a point, as the worker does. A pool process's own
figures (its caches) stay out of /metrics, which reports the workers': with several workers the
page is the sum over the files of live workers, and a pool process that outlived its worker
would keep its figures in that sum.
"""

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from app.ops.errors import KNOWN_ERRORS, Problem, invalid_input, problem_for
from app.ops.fe_cache import CacheBudgets, FeCaches
from app.ops.work import in_thread
from app.server.metrics import process_metrics_only, timed
from core.errors import EncodingError, KeyMismatchError
from core.fe import encoding, group
from core.fe.schemes import SCHEMES, DecryptionCache, Scheme

log = logging.getLogger("cipherd.fe")
_SPAWN = multiprocessing.get_context("spawn")

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
    public: bytes | None  # the version's public part (tao: its decryption base)
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

    def runner(self, cache: DecryptionCache) -> Decrypt | None:
        """Decryption of ciphertexts under this key, with the table and prepared key `cache`
        gives; None when it gives none (`FeCaches.warm`: not at hand)."""
        scheme = self.scheme
        find = scheme.decryptor_for(cache, self.functional_key, self.lo, self.hi, self.public)
        if find is None:
            return None

        def decrypt(data: bytes) -> int | None:
            self.check_header(data, "ciphertext")
            ciphertext = scheme.ciphertext(data)
            with timed("fe", f"{scheme.name}.decrypt"):
                return find(ciphertext)

        return decrypt

    def built(self, caches: FeCaches) -> Decrypt:
        """`runner` with caches that build what they lack, so never None."""
        decrypt = self.runner(caches)
        assert decrypt is not None
        return decrypt


# The caches of a pool process, made by `_serve` when the process starts.
_caches: FeCaches | None = None

Outcome = tuple[str, Any]
# How long `close` waits for decryptions under way, and then for a process to exit.
CLOSE_SECONDS = 5.0


def _serve(jobs: Connection, budgets: CacheBudgets) -> None:
    """A pool process: caches and metrics of its own, then one job at a time from `jobs`
    until its worker closes the pipe. It leaves Ctrl-C (SIGINT, which a terminal sends to the
    whole process group) to its worker, and exits when the worker is gone (killed outright,
    say) rather than stay over unwatched."""
    global _caches
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    process_metrics_only()
    _caches = FeCaches(budgets)
    worker = multiprocessing.parent_process()
    if worker is not None:
        threading.Thread(target=_exit_with, args=(worker,), daemon=True).start()
    while True:
        try:
            job, ciphertext = jobs.recv()
        except EOFError:
            return
        jobs.send(_decrypt(job, ciphertext))


def _exit_with(worker: multiprocessing.process.BaseProcess) -> None:
    wait([worker.sentinel])
    os._exit(0)


def _decrypt(job: Decryption, ciphertext: bytes) -> Outcome:
    """A pool process's work: the value, or the problem as plain values (exceptions with
    arguments of their own do not all survive pickling)."""
    assert _caches is not None
    try:
        return "value", job.built(_caches)(ciphertext)
    except KNOWN_ERRORS as exc:
        problem = problem_for(exc)
        assert problem is not None
        return "problem", (problem.status, problem.slug, problem.title, problem.detail)


class _PoolProcess:
    """One pool process and the pipe its jobs go through."""

    def __init__(self, budgets: CacheBudgets) -> None:
        self.jobs, theirs = _SPAWN.Pipe()
        self.process = _SPAWN.Process(
            target=_serve, args=(theirs, budgets), name="cipherd-fe", daemon=True
        )
        self.process.start()
        theirs.close()

    def run(self, job: Decryption, ciphertext: bytes) -> Outcome:
        """The job's outcome; EOFError or OSError if the process died meanwhile."""
        self.jobs.send((job, ciphertext))
        outcome: Outcome = self.jobs.recv()
        return outcome

    def close(self) -> None:
        """End of input: the process finishes and exits (or is killed after CLOSE_SECONDS)."""
        self.jobs.close()
        self.process.join(CLOSE_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.process.close()


class FePool:
    """`processes` processes for FE decryptions, started by `start` (or the first decryption)
    and replaced if one dies. Each process's caches take `budgets` of their own.

    A job crosses a pipe of its own process's, one at a time: no queue shared by the
    processes, so nothing of the pool (no named semaphore, as a `ProcessPoolExecutor`'s
    queues hold) outlives a worker that was killed outright."""

    def __init__(self, processes: int, budgets: CacheBudgets) -> None:
        self._processes = processes
        self._budgets = budgets
        self._changed = threading.Condition()
        self._running: list[_PoolProcess] = []
        self._idle: list[_PoolProcess] = []
        self._open = False
        self._closed = False  # for good: a decryption after `close` starts nothing
        # Decryptions sent and not yet answered; counted on the event loop only.
        self._busy = 0

    @property
    def idle(self) -> bool:
        """Whether a pool process is free: then a decryption goes there at once."""
        return self._busy < self._processes

    def start(self) -> None:
        with self._changed:
            if not self._open and not self._closed:
                self._running = [_PoolProcess(self._budgets) for _ in range(self._processes)]
                self._idle = list(self._running)
                self._open = True

    async def decrypt(self, job: Decryption, ciphertext: bytes) -> int | None:
        self.start()
        self._busy += 1
        try:
            kind, value = await in_thread(self._run, job, ciphertext)
        finally:
            self._busy -= 1
        if kind == "problem":
            raise Problem(*value)
        result: int | None = value
        return result

    def _run(self, job: Decryption, ciphertext: bytes) -> Outcome:
        """The job on the first free process (waiting for one if every one is busy)."""
        with self._changed:
            while not self._idle:
                if not self._open:
                    raise Problem(
                        503, "shutting-down", "Shutting down", "the service is stopping; retry"
                    )
                self._changed.wait()
            process = self._idle.pop()
        try:
            return process.run(job, ciphertext)
        except (EOFError, OSError):
            # The process died (killed, out of memory): a new one for later requests, and this
            # one is answered 503, to be retried.
            log.error("an FE pool process died; starting a new one")
            process = self._replace(process)
            raise Problem(
                503,
                "fe-pool-restarting",
                "FE pool restarting",
                "the process running this decryption stopped; retry",
            ) from None
        finally:
            with self._changed:
                if process in self._running:
                    self._idle.append(process)
                self._changed.notify_all()

    def _replace(self, dead: _PoolProcess) -> _PoolProcess:
        """A new process in place of `dead`; none once the pool is closing (`close` ends the
        processes it had then, this one among them)."""
        with self._changed:
            if not self._open or dead not in self._running:
                return dead
            fresh = _PoolProcess(self._budgets)
            self._running[self._running.index(dead)] = fresh
        dead.close()
        return fresh

    def close(self) -> None:
        """Stop every process, once the decryptions under way are answered (those still
        running after CLOSE_SECONDS are cut short)."""
        with self._changed:
            self._open, self._closed = False, True
            self._changed.notify_all()
            self._changed.wait_for(
                lambda: len(self._idle) == len(self._running), timeout=CLOSE_SECONDS
            )
            running, self._running, self._idle = self._running, [], []
        for process in running:
            process.close()
