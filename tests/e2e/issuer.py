"""A real JWT issuer for the login tests: keys made with pyca/cryptography, tokens signed with
joserfc, and its OIDC discovery document and JWKS served over HTTP on a free loopback port by a
small server thread, which counts the requests for its keys.

`rotate()` gives the issuer a new key (a new `kid`) and publishes both, as an issuer does during
a rotation; `retire()` drops every key but the newest.
"""

import http.server
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc import jwt
from joserfc.jwk import ECKey, Key, RSAKey

from tests.e2e.server import free_port, http_server


def new_key(kind: str = "RSA") -> Key:
    """A signing key made by pyca, as a joserfc key with a fresh `kid`."""
    kid = "k-" + secrets.token_hex(4)
    if kind == "RSA":
        private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return RSAKey.import_key(pem, {"kid": kid, "use": "sig"})
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ECKey.import_key(pem, {"kid": kid, "use": "sig"})


def public_pem(key: Key) -> str:
    """A key's public half as PEM (for `jwt_validation_pubkeys`)."""
    return key.as_pem(private=False).decode()  # type: ignore[attr-defined, no-any-return]


@dataclass
class Issuer:
    url: str
    keys: list[Key] = field(default_factory=list)
    jwks_requests: int = 0

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/keys"

    def sign(self, claims: dict[str, Any], key: Key | None = None, alg: str | None = None) -> str:
        """A token of `claims`, signed by `key` (the newest of the issuer's by default)."""
        key = key or self.keys[-1]
        alg = alg or ("RS256" if key.key_type == "RSA" else "ES256")
        return jwt.encode({"alg": alg, "kid": key.kid, "typ": "JWT"}, claims, key)

    def claims(self, **extra: Any) -> dict[str, Any]:
        """Claims of a token valid for five minutes, issued by this issuer now."""
        now = int(time.time())
        return {"iss": self.url, "iat": now, "nbf": now, "exp": now + 300, **extra}

    def rotate(self, kind: str = "RSA") -> Key:
        key = new_key(kind)
        self.keys.append(key)
        return key

    def retire(self) -> None:
        self.keys[:] = self.keys[-1:]

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.as_dict(private=False) for key in self.keys]}


def kubernetes_claims(
    issuer: Issuer, namespace: str, account: str, audience: str
) -> dict[str, Any]:
    """A projected service-account token's claims, in the shape the Kubernetes API server gives
    them (`kubernetes.io` holding the namespace, pod and service account)."""
    return issuer.claims(
        aud=[audience],
        sub=f"system:serviceaccount:{namespace}:{account}",
        **{
            "kubernetes.io": {
                "namespace": namespace,
                "pod": {"name": f"{account}-7d9f8", "uid": secrets.token_hex(16)},
                "serviceaccount": {"name": account, "uid": secrets.token_hex(16)},
            }
        },
    )


@contextmanager
def running_issuer() -> Iterator[Issuer]:
    """An issuer with one RSA key, its discovery document at
    `<url>/.well-known/openid-configuration` and its keys at `<url>/keys`."""
    port = free_port()
    issuer = Issuer(f"http://127.0.0.1:{port}")
    issuer.rotate()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                body = {"issuer": issuer.url, "jwks_uri": issuer.jwks_url}
            elif self.path == "/keys":
                with lock:
                    issuer.jwks_requests += 1
                body = issuer.jwks()
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read the counts."""

    with http_server(port, Handler):
        yield issuer
