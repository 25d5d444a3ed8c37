"""What `cipherd serve` listens on and what it accepts there: address, TLS, reverse proxies, the
pace and size of requests, connections, failed authentications."""

import ipaddress
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from app.settings.fields import BodyBytes, Interval, items


class ListenerSettings(BaseModel):
    host: str = Field(
        "127.0.0.1",
        description="The address `cipherd serve` (and `make serve`) listens on, unless `--host` "
        "says otherwise.",
    )
    port: int = Field(
        8000,
        ge=0,
        le=65535,
        description="The port `cipherd serve` listens on, unless `--port` says otherwise; 0 "
        "picks a free one (shared by all workers).",
    )
    tls_cert_file: Path | None = Field(
        None,
        description="A PEM certificate chain: with `CIPHERD_TLS_KEY_FILE`, `cipherd serve` "
        "speaks only HTTPS (TLS 1.2 or 1.3). SIGHUP reads the TLS files again. Unset: plain "
        "HTTP.",
    )
    tls_key_file: Path | None = Field(
        None, description="The PEM private key of the certificate in `CIPHERD_TLS_CERT_FILE`."
    )
    tls_client_ca_file: Path | None = Field(
        None,
        description="PEM CA certificates: every client must present a certificate issued by "
        "one of them (mutual TLS), and still a bearer token, but to log in with that "
        "certificate (`POST /v1/auth/cert/login`).",
    )
    trusted_proxies: str = Field(
        "",
        description="IP addresses or networks (`10.0.0.0/8`), comma-separated, of the reverse "
        "proxies in front of the service: a request from one of them has its client address (for "
        "the failed-authentication throttle and the audit trail's `client`) and scheme from "
        "`X-Forwarded-For` and `X-Forwarded-Proto`; from anyone else, 127.0.0.1 included, those "
        "headers are ignored. Unset: none.",
    )
    max_body_bytes: BodyBytes = Field(
        256 * 1024 * 1024,
        description="The largest raw (`application/octet-stream`) request body; a larger one "
        "is answered 413.",
    )
    max_json_body_bytes: BodyBytes = Field(
        32 * 1024 * 1024,
        description="The largest request body of any other type (JSON): parsing one costs far "
        "more per byte than raw bytes do.",
    )
    max_head_bytes: int = Field(
        64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="The longest request head (request line and headers); a longer one is "
        "answered 431 and closed as it arrives. Clients send a few kilobytes; reading a head "
        "costs the square of its length.",
    )
    head_timeout_seconds: Interval = Field(
        15.0,
        description="A connection that has not sent a whole request head within this is "
        "answered 408 and closed (deadlines are checked once a second).",
    )
    body_timeout_seconds: Interval = Field(
        20.0,
        description="A request body that stalls this long is answered 408 and closed; also the "
        "grace before its pace is checked.",
    )
    min_body_bytes_per_second: int = Field(
        16384,
        ge=0,
        description="After that grace, a request body arriving slower than this on average is "
        "answered 408 and closed.",
    )
    max_connections: int = Field(
        1024,
        ge=1,
        description="Open connections per worker; one more is answered 503 "
        "`too-many-connections` with `Retry-After` and closed.",
    )
    body_memory_bytes: BodyBytes = Field(
        512 * 1024 * 1024,
        description="Request bodies held in memory at once per worker, a JSON body counted 8 "
        "times its size (what parsing it takes); a request that does not fit is answered 503 "
        "`overloaded` with `Retry-After` before its body is read.",
    )
    auth_failures_burst: int = Field(
        20,
        ge=1,
        description="Requests with a missing or invalid token a client address may make at "
        "once, per worker, before further ones are answered 429 "
        "`too-many-failed-authentications`.",
    )
    auth_failures_per_second: float = Field(
        1.0,
        gt=0,
        le=1_000_000,
        description="How fast a client address earns those failed authentications back, per "
        "worker.",
    )
    documentation_url: str | None = Field(
        None,
        pattern=r"^(https?://|/)[^\s\"<>]*$",
        description="Where the documentation site (`docs/`, built with MkDocs) is served: an "
        "`http(s)://` address, or a path on this host beginning with `/`. The front page `/` "
        "links to it. Unset: `/` names the site without a link.",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: str) -> str:
        for item in items(value):
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"trusted_proxies: {item!r} is not an IP address or network"
                ) from None
        return value

    @property
    def trusted_proxy_list(self) -> list[str]:
        """The addresses and networks `trusted_proxies` names."""
        return items(self.trusted_proxies)
