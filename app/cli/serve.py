"""`cipherd serve`: the checks before any worker starts, the workers, and what a newcomer reads
on a terminal."""

import argparse
import logging
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app import __version__
from app.cli.store import configured_store
from app.settings import Settings

if TYPE_CHECKING:
    from app.server.tls import TlsFiles

STARTUP_SECONDS = 120  # how long the welcome waits for the address to take connections


def uvicorn_options(
    host: str, port: int, tls: "TlsFiles | None" = None, trusted_proxies: Sequence[str] = ()
) -> dict[str, Any]:
    """How every worker runs uvicorn (`bench/ecies_floor.py` runs a probe app the same way).

    X-Forwarded-For and X-Forwarded-Proto are believed only from `trusted_proxies`: uvicorn
    believes them from 127.0.0.1 by default, so that any local process could pass for any
    address (to the failed-authentication throttle, in the audit trail's `client`)."""
    from app.server.tls import uvicorn_tls_options

    return {
        "app": "app.main:create_served_app",
        "factory": True,
        "host": host,
        "port": port,
        "log_config": None,
        "access_log": False,
        "timeout_graceful_shutdown": 3,
        # httptools (what "auto" picks when uvicorn[standard] is installed), named so that a
        # missing C parser fails at start instead of halving throughput unnoticed (h11), with
        # the bounds on connections uvicorn lacks.
        "http": "app.server.protocol:BoundedHttpToolsProtocol",
        "loop": "uvloop",  # named for the same reason (asyncio)
        "proxy_headers": bool(trusted_proxies),
        "forwarded_allow_ips": list(trusted_proxies),
        **uvicorn_tls_options(tls),
    }


def _tls_files(args: argparse.Namespace, settings: Settings) -> "TlsFiles | None":
    """The TLS files from the flags, else the settings; checked by building a context once."""
    from app.server.tls import TlsError, TlsFiles, server_context

    cert = args.tls_cert_file or settings.tls_cert_file
    key = args.tls_key_file or settings.tls_key_file
    client_ca = args.tls_client_ca_file or settings.tls_client_ca_file
    if cert is None and key is None:
        if client_ca is not None:
            raise TlsError("CIPHERD_TLS_CLIENT_CA_FILE needs CIPHERD_TLS_CERT_FILE and _KEY_FILE")
        return None
    if cert is None or key is None:
        missing = "CIPHERD_TLS_CERT_FILE" if cert is None else "CIPHERD_TLS_KEY_FILE"
        raise TlsError(f"{missing} is needed with the other TLS file")
    files = TlsFiles(Path(cert), Path(key), None if client_ca is None else Path(client_ca))
    server_context(files)
    return files


def serve(args: argparse.Namespace, settings: Settings) -> None:
    from app.server.bootstrap import load_admin_token, root_key, secure_data_dir
    from app.server.logs import configure_logging
    from app.server.releases import require_all
    from app.server.uvicorn_internals import STARTUP_FAILURE, serve
    from app.server.workers import Supervisor, claim_address

    require_all()  # before anything is bound or written: FastAPI, Starlette and uvicorn
    host = settings.host if args.host is None else args.host
    port = settings.port if args.port is None else args.port
    try:
        claimed = claim_address(host, port, shared=args.workers > 1)
    except OSError as exc:
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise SystemExit(f"cannot listen on {address}: {exc.strerror}") from None
    # The supervising process logs too (worker deaths, restarts): the same JSON lines.
    configure_logging(settings.log_format, settings.log_level)
    # Generate the embedded default's secrets once, before any worker starts, and open the store
    # once: a wrong database URL or an unreachable database stops here, in one line.
    secure_data_dir(settings)
    root_key(settings)
    load_admin_token(settings)
    tls = _tls_files(args, settings)
    configured_store(settings, create=True).close()
    if not settings.admin_token:
        logging.getLogger("cipherd").warning("admin token: in %s", settings.admin_token_file)
    if sys.stderr.isatty():
        bound = claimed.getsockname()
        host_reached, port_reached, url = _reached(bound, tls is not None)
        everywhere = host_reached != bound[0]
        text = _welcome(url, everywhere, settings, args.workers, tls is not None)
        # Its own descriptor of the terminal: a worker in this process takes fd 2 over for its
        # log (app.server.logs.capture_native_output).
        terminal = os.fdopen(os.dup(2), "w")
        threading.Thread(
            target=_say_once_listening,
            args=(text, terminal, host_reached, port_reached),
            daemon=True,
        ).start()
    options = uvicorn_options(host, port, tls, settings.trusted_proxy_list)
    if args.workers > 1:
        supervisor = Supervisor(options, args.workers, settings.worker_unresponsive_seconds)
        metrics_dir = tempfile.mkdtemp(prefix="cipherd-metrics-", dir=_metrics_parent(settings))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        try:
            sys.exit(supervisor.run(claimed))
        finally:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    with claimed:
        started = serve(options, [claimed])
    if not started:
        sys.exit(STARTUP_FAILURE)


def _reached(bound: tuple[Any, ...], tls: bool) -> tuple[str, int, str]:
    """Where a client on this machine reaches the bound address: host, port and URL (a wildcard
    address on the loopback)."""
    host, port = bound[:2]
    reached = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    netloc = f"[{reached}]" if ":" in reached else reached
    return reached, port, f"{'https' if tls else 'http'}://{netloc}:{port}"


def _say_once_listening(text: str, terminal: TextIO, host: str, port: int) -> None:
    """Print `text` on `terminal` once (host, port) takes connections (a thread of the serving
    process): what it says must work when it is read."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            time.sleep(0.1)
            continue
        terminal.write(text + "\n")
        terminal.flush()
        return


def _welcome(url: str, everywhere: bool, settings: Settings, workers: int, tls: bool) -> str:
    """What a newcomer at a terminal needs to start: the address (`url`, from this machine;
    `everywhere` when the port is open on every address), the documentation, where the admin
    token is, and a line that points the client at this service."""
    if settings.admin_token:
        where = "CIPHERD_ADMIN_TOKEN, in this service's environment"
        token = '"$CIPHERD_ADMIN_TOKEN"'
    else:
        path = settings.admin_token_file.absolute()
        shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
        where, token = f"in {shown}", f"$(cat {shlex.quote(str(shown))})"
    lines = [
        f"cipherd {__version__} listening on {url} ({workers} worker{'s' * (workers > 1)})"
        + (", and on every other address of this machine" if everywhere else ""),
        f"  the API and its documentation: {url}/docs",
        f"  the admin token: {where}",
        "  in another shell:",
        f"    export CIPHERD_ADDR={url} CIPHERD_TOKEN={token}",
    ]
    if tls:
        lines.append("    export CIPHERD_CA_FILE=...  # the CA that issued the certificate")
    return "\n".join(lines)


def _metrics_parent(settings: Settings) -> str | None:
    """Where the workers' shared metrics files go: memory-backed and off the data directory's
    file system by default. They are mmap'd, and a page of one that the file system has no
    room for kills the worker writing it (SIGBUS): on the data directory, a full disk, which
    should fail only writes, took the workers with it."""
    if settings.metrics_dir is not None:
        return str(settings.metrics_dir)
    return "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
