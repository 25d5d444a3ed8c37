"""What the TLS connection of a request tells: the client's certificate, from ASGI's TLS
extension (`scope["extensions"]["tls"]`, which `app.server.uvicorn_internals` fills in)."""

import ssl

from starlette.types import Scope


def client_certificate(scope: Scope) -> bytes | None:
    """The DER of the certificate the client showed in its connection's handshake (which the
    server verified against `CIPHERD_TLS_CLIENT_CA_FILE`); None without TLS or a certificate."""
    tls = scope.get("extensions", {}).get("tls")
    chain = tls.get("client_cert_chain") if isinstance(tls, dict) else None
    if not chain:
        return None
    return ssl.PEM_cert_to_DER_cert(chain[0])
