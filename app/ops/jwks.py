"""The signing keys of a JWT issuer, as its JWKS URL or OIDC discovery document gives them.

A key set is fetched over HTTP(S) within a deadline for the whole fetch and a size bound
(`MAX_DOCUMENT_BYTES`), never following a redirect, and trusting the CA certificates a mount
names (else the system's). Each process keeps one key set per source for `KEYS_CACHE_SECONDS`; a
token whose `kid` the set does not hold makes it fetch again, at most once per
`min_refetch_seconds` per source, so that a stream of tokens with unknown key ids costs the
issuer one request per interval at most, while an issuer's key rotation is seen within that
interval. Errors and audit records show an issuer's URL without its userinfo and query
(`shown_url`), where credentials may be.
"""

import asyncio
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

from app.ops.errors import Problem
from app.ops.vault_fields import json_document

# Bounds on what an issuer may send: a document (a JWKS or a discovery document), the time to
# connect or to wait for each read, the time for the whole fetch however slowly the issuer
# answers, and the keys a set may hold.
MAX_DOCUMENT_BYTES = 256 * 1024
FETCH_TIMEOUT_SECONDS = 5.0
FETCH_DEADLINE_SECONDS = 10.0
MAX_KEYS = 100
# How long a fetched key set is used before it is fetched again on its next use.
KEYS_CACHE_SECONDS = 3600.0
# Sources cached at once per process (past it, the oldest are dropped).
MAX_SOURCES = 1000


class IssuerUnreachable(Problem):
    """The issuer's document could not be fetched or read: the login is refused, naming the URL
    and the reason, never the token."""

    def __init__(self, detail: str) -> None:
        super().__init__(400, "issuer-unreachable", "Issuer unreachable", detail)


@dataclass(frozen=True)
class Source:
    """Where a mount's keys come from: a JWKS URL, or an OIDC discovery URL (whose document
    names the JWKS URL), with the CA certificates (PEM) to trust for it."""

    url: str
    ca_pem: str = ""
    discovery: bool = False


def shown_url(url: str) -> str:
    """A URL as errors and audit records show it: `scheme://host[:port]/path`, without the
    userinfo, query and fragment, where a password or an access token may be."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an invalid URL)"
    if not parts.netloc:
        return f"{parts.scheme[:16]}:(no host)" if parts.scheme else "(no host)"
    if "@" in f"{parts.path}?{parts.query}#{parts.fragment}":
        # A password holding an unencoded '/', '?' or '#' ends the authority early: the rest of
        # it is in what follows, up to an '@'.
        return f"{parts.scheme}://(hidden)"
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"[:200]


def fetch_json(url: str, ca_pem: str) -> Any:
    """The JSON document at `url` (IssuerUnreachable if it cannot be had within the bounds).
    It runs in a worker thread, on an event loop of its own: one deadline then bounds the whole
    fetch (connecting, the headers, the body), which per-read timeouts do not."""
    shown = shown_url(url)
    if not url.startswith(("https://", "http://")):
        raise IssuerUnreachable(f"{shown}: not an http(s) URL")
    verify: ssl.SSLContext | bool = True
    if ca_pem:
        try:
            verify = ssl.create_default_context(cadata=ca_pem)
        except (ssl.SSLError, ValueError):
            raise IssuerUnreachable("the CA PEM holds no usable certificate") from None
    try:
        body = asyncio.run(_fetch(url, shown, verify, FETCH_DEADLINE_SECONDS))
    except TimeoutError:
        raise IssuerUnreachable(
            f"{shown}: no complete answer within {FETCH_DEADLINE_SECONDS:g} s"
        ) from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise IssuerUnreachable(f"{shown}: {type(exc).__name__}") from None
    try:
        return json_document(body)
    except ValueError:
        raise IssuerUnreachable(f"{shown}: not a JSON document") from None


async def _fetch(url: str, shown: str, verify: ssl.SSLContext | bool, deadline: float) -> bytes:
    async with (
        asyncio.timeout(deadline),
        httpx.AsyncClient(verify=verify, timeout=FETCH_TIMEOUT_SECONDS, trust_env=False) as client,
        client.stream("GET", url, headers={"Accept": "application/json"}) as response,
    ):
        if response.status_code != 200:
            raise IssuerUnreachable(f"{shown}: HTTP {response.status_code}")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_DOCUMENT_BYTES:
                raise IssuerUnreachable(f"{shown}: over {MAX_DOCUMENT_BYTES} bytes")
        return bytes(body)


def discovered_jwks_url(discovery_url: str, ca_pem: str) -> tuple[str, str]:
    """The (issuer, jwks_uri) of an OIDC discovery document (OpenID Connect Discovery 1.0 §4:
    the document is at `<issuer>/.well-known/openid-configuration`, and names that issuer)."""
    base = discovery_url.rstrip("/")
    document = fetch_json(f"{base}/.well-known/openid-configuration", ca_pem)
    if not isinstance(document, dict):
        raise IssuerUnreachable(f"{shown_url(base)}: the discovery document is not an object")
    issuer, jwks_uri = document.get("issuer"), document.get("jwks_uri")
    if not isinstance(jwks_uri, str) or not isinstance(issuer, str):
        raise IssuerUnreachable(
            f"{shown_url(base)}: the discovery document lacks issuer or jwks_uri"
        )
    if issuer.rstrip("/") != base:
        raise IssuerUnreachable(f"{shown_url(base)}: the discovery document names another issuer")
    return issuer, jwks_uri


def key_set(document: Any, url: str) -> KeySet:
    """The signing keys of a JWKS document (keys for encryption and symmetric ones left out)."""
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list) or len(entries) > MAX_KEYS:
        raise IssuerUnreachable(f"{shown_url(url)}: not a JWKS of at most {MAX_KEYS} keys")
    keys: list[Key] = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        if entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        try:
            keys.append(KeySet.import_key_set({"keys": [entry]}).keys[0])
        except (JoseError, ValueError, TypeError, KeyError):
            continue  # a key this service cannot use is not one a token can name
    return KeySet(keys)


@dataclass
class _Cached:
    keys: KeySet
    issuer: str | None
    fetched_at: float


class IssuerKeys:
    """The key sets of the issuers this process's mounts name, cached and re-fetched within
    bounds (one instance per process)."""

    def __init__(
        self, min_refetch_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.min_refetch_seconds = min_refetch_seconds
        self._clock = clock
        self._cache: dict[Source, _Cached] = {}
        # When each source was last asked for, answered or not: the bound on fetches.
        self._attempted: dict[Source, float] = {}
        self._lock = threading.Lock()
        # One fetch per source at a time: the others wait for its result.
        self._fetching: dict[Source, threading.Lock] = {}

    def load(self, source: Source) -> tuple[KeySet, str | None]:
        """The source's keys and, for a discovery URL, the issuer its document names, fetched
        now: for a configuration being written, to check it."""
        fetched = self._fetch(source, None, force=True)
        return fetched.keys, fetched.issuer

    def keys_for(self, source: Source, kid: str | None) -> tuple[KeySet, str | None]:
        """The keys to check a token whose header names `kid`, and the discovered issuer: the
        cached set, fetched again when it is old, or when it lacks `kid` and the last attempt
        is at least `min_refetch_seconds` old."""
        with self._lock:
            cached = self._cache.get(source)
            attempted = self._attempted.get(source)
        now = self._clock()
        recent = attempted is not None and now - attempted < self.min_refetch_seconds
        if cached is not None and now - cached.fetched_at < KEYS_CACHE_SECONDS:
            if kid is None or _holds(cached.keys, kid) or recent:
                return cached.keys, cached.issuer
        elif recent and cached is None:
            raise IssuerUnreachable(
                f"{shown_url(source.url)}: its keys could not be fetched less than "
                f"{self.min_refetch_seconds:g} s ago"
            )
        fetched = self._fetch(source, cached, force=False)
        return fetched.keys, fetched.issuer

    def _fetch(self, source: Source, stale: _Cached | None, force: bool) -> _Cached:
        with self._lock:
            gate = self._fetching.setdefault(source, threading.Lock())
        with gate:
            with self._lock:
                current = self._cache.get(source)
            if not force and current is not None and current is not stale:
                return current  # another thread fetched it while this one waited
            with self._lock:
                if len(self._attempted) >= MAX_SOURCES and source not in self._attempted:
                    self._attempted.clear()  # sources that never answered: forget them
                self._attempted[source] = self._clock()
            issuer: str | None = None
            url = source.url
            if source.discovery:
                issuer, url = discovered_jwks_url(source.url, source.ca_pem)
            fetched = _Cached(key_set(fetch_json(url, source.ca_pem), url), issuer, self._clock())
            with self._lock:
                if len(self._cache) >= MAX_SOURCES and source not in self._cache:
                    oldest = min(self._cache, key=lambda known: self._cache[known].fetched_at)
                    del self._cache[oldest]
                    self._attempted.pop(oldest, None)
                    self._fetching.pop(oldest, None)
                self._cache[source] = fetched
            return fetched


def _holds(keys: KeySet, kid: str) -> bool:
    return any(key.kid == kid for key in keys)
