"""The container's health check: `python -m app.server.probe [PATH [PORT]]` exits 0 when the
service in this container answers 200 at PATH (default /healthz).

Without PORT, the port is the one given to `cipherd serve` on PID 1's command line (cipherd
itself, or the init process in front of it), else `CIPHERD_PORT`, else 8000. With
`CIPHERD_TLS_CERT_FILE` the probe speaks TLS to the loopback address without checking the
server's name (it is this container); with `CIPHERD_TLS_CLIENT_CA_FILE` it presents the
server's own certificate and key as its client certificate, which the server then accepts only
if its client CA issued them for client use too.
"""

import os
import ssl
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path

DEFAULT_PORT = 8000


def serve_port(command_line: Sequence[str]) -> int:
    """The `--port` of a `cipherd serve` command line, as one word or two, else the setting's."""
    for index, word in enumerate(command_line):
        if word.startswith("--port="):
            return int(word.removeprefix("--port="))
        if word == "--port" and index + 1 < len(command_line):
            return int(command_line[index + 1])
    return int(os.environ.get("CIPHERD_PORT") or DEFAULT_PORT)


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if os.environ.get("CIPHERD_TLS_CLIENT_CA_FILE"):
        context.load_cert_chain(
            os.environ["CIPHERD_TLS_CERT_FILE"], os.environ["CIPHERD_TLS_KEY_FILE"]
        )
    return context


def main(argv: Sequence[str]) -> int:
    path = argv[0] if argv else "/healthz"
    if len(argv) > 1:
        port = int(argv[1])
    else:
        command_line = Path("/proc/1/cmdline").read_bytes().decode(errors="replace").split("\0")
        port = serve_port(command_line)
    if os.environ.get("CIPHERD_TLS_CERT_FILE"):
        url, context = f"https://127.0.0.1:{port}{path}", _tls_context()
    else:
        url, context = f"http://127.0.0.1:{port}{path}", None
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as answer:
            return 0 if answer.status == 200 else 1
    except OSError as exc:
        print(f"{url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
