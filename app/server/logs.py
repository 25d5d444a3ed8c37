"""Structured logs: one JSON object per line, with the request id of the request being served.

The request id comes from the client's X-Request-ID header (when it is short and printable) or is
generated, and is echoed back in the response. Log records never carry request bodies or headers,
so keys and tokens cannot reach the log.
"""

import asyncio
import atexit
import contextlib
import contextvars
import ctypes
import json
import logging
import os
import sys
import threading
import time
from typing import TextIO

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
access_log = logging.getLogger("cipherd.access")

_STANDARD_ATTRIBUTES = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's copy of the message with terminal colour codes
}


def _timestamp(created: float) -> str:
    """UTC with milliseconds: `2026-01-31T12:00:00.123Z`."""
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
        + f".{int((created - int(created)) * 1000):03d}Z"
    )


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": _timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": request_id_var.get(),
        }
        entry.update(
            (key, value)
            for key, value in record.__dict__.items()
            if key not in _STANDARD_ATTRIBUTES
        )
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{super().format(record)} request_id={request_id_var.get()}"


_MAX_CACHED_FIELDS = 1024


class _AccessWriter:
    """Writes the access line of a request as the JSON formatter would, built by hand.

    Every request has one, and the general path (a LogRecord, the caller's frame, a dict of
    extra attributes, json.dumps) costs as much as serving a small request. The line has the
    same fields in the same order. Only the handler `configure_logging` installed is written to
    this way; with any other handler the line goes through `logging` as usual.

    The lines of one turn of the event loop are written together at its end: one `write` for
    all the requests answered in that turn rather than one each.
    """

    def __init__(self) -> None:
        self.handler: logging.StreamHandler[TextIO] | None = None
        self._lines: list[str] = []
        self._second = -1
        self._time_prefix = ""
        self._fields: dict[tuple[str, str, int], tuple[str, str]] = {}

    def write(
        self, method: str, route: str, status: int, duration_ms: float, request_id: str
    ) -> None:
        if not access_log.isEnabledFor(logging.INFO):
            return
        handler = self.handler
        if handler is None or logging.getLogger().handlers != [handler]:
            self._through_logging(method, route, status, duration_ms)
            return
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self._time_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        before_id, after_id = self._fields.get((method, route, status)) or self._cache_fields(
            method, route, status
        )
        line = (
            f'{{"time": "{self._time_prefix}.{int((now - second) * 1000):03d}Z", {before_id}'
            f'"request_id": "{request_id}", {after_id}"duration_ms": {duration_ms}}}\n'
        )
        if not self._lines:
            try:
                asyncio.get_running_loop().call_soon(self._flush, handler)
            except RuntimeError:  # no event loop: a test's direct call, say
                self._lines.append(line)
                self._flush(handler)
                return
        self._lines.append(line)

    def _flush(self, handler: "logging.StreamHandler[TextIO]") -> None:
        lines, self._lines = self._lines, []
        try:
            with handler.lock:  # type: ignore[union-attr]
                handler.stream.write("".join(lines))
                handler.stream.flush()
        except Exception:  # a broken stream: let logging report it as it would
            access_log.error("%d access log lines lost: the log stream refused them", len(lines))

    def _cache_fields(self, method: str, route: str, status: int) -> tuple[str, str]:
        """The fields before and after the request id, which depend on the method, route and
        status alone: built once each, not per request. Bounded, since the method is the
        client's (PROPFIND, say)."""
        # The method is an HTTP token, the route a template of ours and the request id checked
        # against a pattern, so only the route needs JSON quoting in principle; it gets it.
        quoted_route = json.dumps(route)
        fields = (
            f'"level": "INFO", "logger": "cipherd.access", '
            f'"message": "{method} {quoted_route[1:-1]} {status}", ',
            f'"method": "{method}", "route": {quoted_route}, "status": {status}, ',
        )
        if len(self._fields) < _MAX_CACHED_FIELDS:
            self._fields[method, route, status] = fields
        return fields

    @staticmethod
    def _through_logging(method: str, route: str, status: int, duration_ms: float) -> None:
        access_log.info(
            "%s %s %d",
            method,
            route,
            status,
            extra={"method": method, "route": route, "status": status, "duration_ms": duration_ms},
        )


access_writer = _AccessWriter()


# Where log lines go once `capture_native_output` took stdout and stderr over: the stderr the
# process started with.
_log_stream: TextIO | None = None


def configure_logging(log_format: str, level: str) -> None:
    """Route cipherd's and uvicorn's loggers through one handler on stderr."""
    handler = logging.StreamHandler(_log_stream or sys.stderr)
    access_writer.handler = handler if log_format == "json" else None
    handler.setFormatter(
        JsonFormatter()
        if log_format == "json"
        else TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # The access log is written by our middleware, with route, status, latency and request id.
    logging.getLogger("uvicorn.access").disabled = True


native_log = logging.getLogger("cipherd.native")
# A line longer than this (no newline in sight) is logged in pieces.
_MAX_NATIVE_LINE = 16384
_IOLBF = 1  # setvbuf's line buffering (glibc, musl)


def capture_native_output() -> None:
    """Keep what the C libraries write out of the log stream: RELIC prints "ERROR THROWN ..."
    to stdout when it rejects an encoding, between the JSON lines of the log.

    File descriptors 1 and 2 of this process become a pipe, and a thread logs each line read
    from it as a record of `cipherd.native`; the log handler writes to the stderr the process
    started with. A line that is a JSON object already (the log of a child process, which
    inherits the pipe) passes through as it is. For `cipherd serve`'s worker processes, with
    JSON logs: nothing else owns the process's descriptors there."""
    global _log_stream
    if _log_stream is not None:
        return
    destination = os.dup(2)
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(write_end, 1)
    os.dup2(write_end, 2)
    os.close(write_end)
    _log_stream = open(destination, "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115  # the process's log stream from now on
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(_log_stream)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        # C's stdout on a pipe is block-buffered: a line would wait for 4 KiB more of them.
        libc = ctypes.CDLL(None)
        libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, _IOLBF, 0)
    relay = threading.Thread(
        target=_relay, args=(read_end, _log_stream), name="native-output", daemon=True
    )
    relay.start()
    atexit.register(release_native_output)
    _release_args.append((relay, destination))


# What `release_native_output` needs in a process that captured its output (one entry at most).
_release_args: list[tuple[threading.Thread, int]] = []


def release_native_output() -> None:
    """On the way out, give stdout and stderr back and let the relay log what is still in the
    pipe (a traceback printed at exit, say). For a process that ends without running its atexit
    functions (a multiprocessing child) too; a second call does nothing."""
    if not _release_args:
        return
    relay, destination = _release_args.pop()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os.dup2(destination, 1)
    os.dup2(destination, 2)
    relay.join(timeout=2)  # EOF once no process holds the pipe any longer


def _relay(read_end: int, stream: TextIO) -> None:
    """Log each line written to the captured descriptors (see `capture_native_output`). It must
    not stop while the process runs: a full pipe would block the next C write, under the lock
    that serialises the pairing library."""
    pending = b""
    while chunk := os.read(read_end, 65536):
        *lines, pending = (pending + chunk).split(b"\n")
        if len(pending) > _MAX_NATIVE_LINE:
            lines.append(pending)
            pending = b""
        for line in lines:
            _relay_line(line, stream)
    _relay_line(pending, stream)


def _relay_line(line: bytes, stream: TextIO) -> None:
    try:
        if line.startswith(b"{") and line.endswith(b"}"):
            # One write of the whole line, as the log handler makes: they do not interleave.
            os.write(stream.fileno(), line + b"\n")
        elif line.strip():
            native_log.warning("%s", line.decode("utf-8", "replace").rstrip())
    except Exception:  # nowhere left to report it; the relay goes on
        pass
