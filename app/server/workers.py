"""`cipherd serve --workers N`: N uvicorn workers, each accepting on its own listening socket.

uvicorn's own supervisor binds one socket and gives it to every worker, so all of them wait on
one accept queue and the worker that wakes first takes every connection waiting there. Clients
that keep connections open (load balancers, connection pools, load generators) then stay on
that worker: 32 keep-alive connections to 2 workers split 7/25, 1/31, 15/17, 9/23, 1/31, 11/21,
0/32 and 0/32 in eight tries here, leaving a core idle in most of them. Here every worker binds
its own socket to the same address with SO_REUSEPORT, and the kernel assigns each new
connection to one of them by a hash of its addresses: even in expectation, whatever the
clients do. (That spreading is Linux's; other systems accept the option but may not spread.)

`cipherd serve` claims the address first (`claim_address`), so that a port in use fails at once
and port 0 picks one port for all, and the supervisor holds it (bound, never listening) while it
restarts any worker that dies. SIGTERM or SIGINT stops the workers gracefully; so does the
supervisor's own death. SIGHUP is passed on to every worker (each reloads its TLS files).

A worker that hangs is worse here than behind a shared socket: its socket still listens, so the
kernel goes on giving it a share of the new connections, which wait forever. Each worker's event
loop therefore stamps a heartbeat ten times a second, and the supervisor kills and replaces a
worker whose heartbeat is older than the unresponsive limit.
"""

import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from ctypes import c_double
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from app.server.logs import release_native_output
from app.server.metrics import forget_process
from app.server.uvicorn_internals import STARTUP_FAILURE, serve

log = logging.getLogger("cipherd.workers")
_spawn = multiprocessing.get_context("spawn")
# A worker that keeps dying this soon after it started is not restarted in a tight loop.
_RESTART_PAUSE_SECONDS = 1.0
# After SIGTERM and uvicorn's grace period, how long a worker gets to exit before SIGKILL.
_EXIT_SECONDS = 2.0
# A gap this long between two passes of the watch loop (normally 0.5 s, 1.5 s with a restart)
# means the supervisor itself was not running.
_PAUSED_SECONDS = 2.0


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with SO_REUSEPORT, ready for `listen`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def claim_address(host: str, port: int, shared: bool) -> socket.socket:
    """A TCP socket bound to (host, port), or OSError if another socket listens there.

    The bind is made without SO_REUSEPORT: Linux lets sockets that all set it share a port
    (when one user owns them), so a bind with it would join another server's listening
    sockets, another `cipherd serve` included, and take a share of its connections. With
    `shared` the option is turned on once bound, for the workers' own sockets to bind beside.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        # Past connections waiting out TIME_WAIT on the port do not count as its being in use.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    except BaseException:
        sock.close()
        raise
    return sock


def _stop_with_supervisor() -> None:
    """SIGTERM to this worker once its supervisor is gone (killed outright, say): a worker left
    behind would go on serving, unwatched, beside the workers of the next supervisor."""
    supervisor = multiprocessing.parent_process()
    if supervisor is not None:
        wait([supervisor.sentinel])
        os.kill(os.getpid(), signal.SIGTERM)


def _worker(options: dict[str, Any], heartbeat: c_double) -> None:
    """One worker process: its own socket on the shared address, then uvicorn's server."""
    threading.Thread(target=_stop_with_supervisor, name="supervisor-watch", daemon=True).start()
    # The supervisor passes SIGHUP on; without TLS there is nothing to reload, and with it the
    # handler is installed once the context is built.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # Stopping is the supervisor's: Ctrl-C in a terminal reaches every process of the group, and
    # uvicorn, which takes SIGINT while it serves, raises it again once it has stopped, which
    # without this ended the worker in a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    host, port = options["host"], options["port"]
    try:
        sock = listening_socket(host, port)
    except OSError as exc:  # nothing a restart would change
        log.error("worker cannot bind %s:%s: %s", host, port, exc)
        sys.exit(STARTUP_FAILURE)

    def stamp() -> None:
        """The heartbeat: monotonic seconds, on each tick of the event loop."""
        heartbeat.value = time.monotonic()

    try:
        serve(options, [sock], on_tick=stamp)
    finally:  # the process ends with os._exit: no atexit functions
        release_native_output()


class Supervisor:
    def __init__(self, options: dict[str, Any], workers: int, unresponsive_seconds: float) -> None:
        self.options = dict(options)  # `port` is filled in once bound
        self.workers = workers
        self.unresponsive_seconds = unresponsive_seconds
        self.processes: list[BaseProcess] = []
        # Per worker: its event loop's last tick, 0.0 until it serves.
        self.heartbeats: list[c_double] = []
        self.stopping = False

    def run(self, reserved: socket.socket) -> int:
        """Serve on the address `reserved` holds (from `claim_address`) until SIGTERM or
        SIGINT; the exit status (STARTUP_FAILURE if workers cannot start)."""
        with reserved:
            self.options["port"] = reserved.getsockname()[1]
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._stop)
            signal.signal(signal.SIGHUP, self._forward)
            log.info(
                "serving on %s:%s with %d workers",
                self.options["host"],
                self.options["port"],
                self.workers,
                extra={"port": self.options["port"], "workers": self.workers},
            )
            self.heartbeats = [_spawn.Value("d", 0.0, lock=False) for _ in range(self.workers)]
            self.processes = [self._start(heartbeat) for heartbeat in self.heartbeats]
            status = self._watch()
            self._shut_down()
        return status

    def _start(self, heartbeat: c_double) -> BaseProcess:
        heartbeat.value = 0.0
        process = _spawn.Process(
            target=_worker, args=(self.options, heartbeat), name="cipherd-worker"
        )
        process.start()
        return process

    def _watch(self) -> int:
        """Restart workers that die or hang, until asked to stop or a worker cannot start."""
        last_pass = resumed = time.monotonic()
        while not self.stopping:
            wait([process.sentinel for process in self.processes], timeout=0.5)
            # After a pause of the whole service (a stopped job, a paused machine) every
            # heartbeat looks old until the workers tick again: each gets the full limit anew.
            now = time.monotonic()
            if now - last_pass > _PAUSED_SECONDS:
                resumed = now
            last_pass = now
            for index, process in enumerate(self.processes):
                if self.stopping:
                    break
                if process.is_alive():
                    self._kill_if_unresponsive(process, self.heartbeats[index].value, resumed)
                    continue
                if process.pid is not None:
                    forget_process(process.pid)
                if process.exitcode == STARTUP_FAILURE:
                    log.error("worker %s could not start; stopping", process.pid)
                    return STARTUP_FAILURE
                log.warning("worker %s exited with %s; restarting", process.pid, process.exitcode)
                time.sleep(_RESTART_PAUSE_SECONDS)
                if not self.stopping:
                    self.processes[index] = self._start(self.heartbeats[index])
        return 0

    def _kill_if_unresponsive(self, process: BaseProcess, heartbeat: float, since: float) -> None:
        """SIGKILL a serving worker whose event loop has not ticked for the limit (counted from
        `since` at the earliest); the next pass of `_watch` restarts it."""
        silent = time.monotonic() - max(heartbeat, since)
        if heartbeat and silent > self.unresponsive_seconds:
            log.error("worker %s unresponsive for %.0f s; killing it", process.pid, silent)
            process.kill()
            process.join()

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        """SIGHUP (reload the TLS files) goes on to every live worker."""
        for process in self.processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signum)

    def _shut_down(self) -> None:
        """SIGTERM to every worker (uvicorn's graceful shutdown), SIGKILL to any left after
        its grace period."""
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        # uvicorn's grace, and 2 s for the process to exit: 5 s in all, well inside the 10 s a
        # container runtime waits after SIGTERM before it kills everything.
        grace = self.options.get("timeout_graceful_shutdown", 3) + _EXIT_SECONDS
        deadline = time.monotonic() + grace
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
