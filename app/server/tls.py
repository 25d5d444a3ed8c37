"""TLS for `cipherd serve`: a server context built from the certificate, key and optional client
CA files, and rebuilt from them on SIGHUP.

uvicorn builds its SSL context once. Here each worker gets a `ReloadableContext`, an SSL context
that hands every new connection to the context last built from the files: SIGHUP rebuilds it, so
new connections get the new certificate while connections in flight keep theirs. A rebuild that
fails (a half-written file, a key that does not match) is logged and the last good context stays.
"""

import logging
import signal
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger("cipherd.tls")


class TlsError(RuntimeError):
    """The TLS files cannot make a server context; the message names the setting."""


@dataclass(frozen=True)
class TlsFiles:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """A server context: TLS 1.2 at least; with a client CA, a client certificate from it is
    required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(files.cert_file, files.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise TlsError(
            "CIPHERD_TLS_CERT_FILE and CIPHERD_TLS_KEY_FILE do not give a certificate and its "
            f"key: {_reason(exc)}"
        ) from None
    if files.client_ca_file is not None:
        try:
            context.load_verify_locations(cafile=files.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise TlsError(
                f"CIPHERD_TLS_CLIENT_CA_FILE holds no usable CA certificate: {_reason(exc)}"
            ) from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _reason(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return f"{exc.filename}: {exc.strerror}"


class ReloadableContext(ssl.SSLContext):
    """An SSL context whose connections are made by the context last loaded from `files`.

    asyncio and uvloop make each connection's TLS object with `wrap_bio` on the context given
    to `create_server`: that is the one call redirected.
    """

    files: TlsFiles
    current: ssl.SSLContext

    def __new__(cls, files: TlsFiles) -> "ReloadableContext":
        self = super().__new__(cls, ssl.PROTOCOL_TLS_SERVER)
        self.files = files
        self.current = server_context(files)
        return self

    def reload(self) -> None:
        """Load the files again; keep the current context if they do not make one."""
        try:
            self.current = server_context(self.files)
        except TlsError as exc:
            log.error("TLS files not reloaded, the previous ones stay in use: %s", exc)
            return
        log.info("TLS certificate reloaded from %s", self.files.cert_file)

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return self.current.wrap_bio(incoming, outgoing, server_side, server_hostname, session)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        return self.current.wrap_socket(*args, **kwargs)


def reloading_context_factory(config: Any, default_factory: Any) -> ssl.SSLContext:
    """uvicorn's `ssl_context_factory`: a `ReloadableContext` over the files uvicorn was given,
    reloaded on SIGHUP (handled from here on in this process)."""
    context = ReloadableContext(
        TlsFiles(
            Path(config.ssl_certfile),
            Path(config.ssl_keyfile),
            Path(config.ssl_ca_certs) if config.ssl_ca_certs else None,
        )
    )

    def on_hangup(signum: int, frame: FrameType | None) -> None:
        # Off the signal handler: reading files and building a context is no handler's work.
        threading.Thread(target=context.reload, name="tls-reload", daemon=True).start()

    signal.signal(signal.SIGHUP, on_hangup)
    return context


def uvicorn_tls_options(files: TlsFiles | None) -> dict[str, Any]:
    """What `uvicorn_options` adds for TLS (nothing without it)."""
    if files is None:
        return {}
    return {
        "ssl_certfile": str(files.cert_file),
        "ssl_keyfile": str(files.key_file),
        "ssl_ca_certs": None if files.client_ca_file is None else str(files.client_ca_file),
        "ssl_context_factory": reloading_context_factory,
    }
