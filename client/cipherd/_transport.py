"""How a call travels: the connection settings, the call's description, retries, answers.

A `Call` says what to send and how to read the answer, whatever client sends it; `Client` and
`AsyncClient` only differ in how they send it (`send_sync`, `send_async`), so every operation is
declared once.
"""

import asyncio
import email.utils
import json
import os
import random
import ssl
import stat
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import httpx

from cipherd.errors import TooManyRequests, UnreachableError, UntrustedCertificate, problem_from

T = TypeVar("T")

DEFAULT_ADDRESS = "http://127.0.0.1:8000"
CHUNK = 1 << 20  # bytes read from a source, and written to a sink, at a time
RETRY_STATUSES = frozenset({429, 503})

Source = bytes | IO[bytes] | Iterable[bytes] | AsyncIterable[bytes]
# Called as a request body goes: the bytes sent so far, and the body's length when known.
Progress = Callable[[int, int | None], None]


@dataclass(frozen=True)
class Retries:
    """Retries of idempotent calls after 429, 503 or a failed connection: `attempts` tries in
    all, waiting the answer's `Retry-After` if it has one (up to `max_wait` seconds), else an
    exponential backoff from `backoff` seconds with jitter."""

    attempts: int = 4
    backoff: float = 0.25
    max_wait: float = 30.0

    def wait(self, attempt: int, answer: httpx.Response | None) -> float:
        after = retry_after(answer) if answer is not None else None
        if after is None:
            after = self.backoff * (2**attempt) * (0.5 + random.random())
        return min(after, self.max_wait)


NO_RETRIES = Retries(attempts=1)


def _checked_token(token: str | None) -> str | None:
    """A token as a header carries it: visible ASCII (ValueError otherwise, here rather than a
    UnicodeEncodeError, or a line break taken for a network failure, when it is sent)."""
    if token and not (token.isascii() and token.isprintable() and " " not in token):
        raise ValueError("a token is visible ASCII, without spaces or line breaks")
    return token


@dataclass(frozen=True)
class Settings:
    """Where the service is and how to reach it, from the arguments or else the environment:
    CIPHERD_ADDR, CIPHERD_TOKEN (or CIPHERD_TOKEN_FILE), CIPHERD_CA_FILE,
    CIPHERD_CLIENT_CERT_FILE and CIPHERD_CLIENT_KEY_FILE."""

    address: str
    token: str | None
    ca_file: str | None
    client_cert: str | None
    client_key: str | None
    timeout: float
    retries: Retries

    @classmethod
    def resolve(
        cls,
        address: str | None = None,
        token: str | None = None,
        *,
        token_file: str | os.PathLike[str] | None = None,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        timeout: float = 60.0,
        retries: Retries | None = None,
    ) -> "Settings":
        env = os.environ
        token_file = token_file or env.get("CIPHERD_TOKEN_FILE")
        if token is None and token_file:
            try:
                token = Path(token_file).read_text().strip()
            except UnicodeDecodeError:
                raise ValueError(f"{token_file}: a token file holds text (UTF-8)") from None
        return cls(
            address=(address or env.get("CIPHERD_ADDR") or DEFAULT_ADDRESS).rstrip("/"),
            token=_checked_token(token if token is not None else env.get("CIPHERD_TOKEN")),
            ca_file=ca_file or env.get("CIPHERD_CA_FILE"),
            client_cert=client_cert or env.get("CIPHERD_CLIENT_CERT_FILE"),
            client_key=client_key or env.get("CIPHERD_CLIENT_KEY_FILE"),
            timeout=timeout,
            retries=retries or Retries(),
        )

    def httpx_options(self) -> dict[str, Any]:
        headers = {"User-Agent": "cipherd-python"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        options: dict[str, Any] = {
            "base_url": self.address,
            "headers": headers,
            "timeout": httpx.Timeout(self.timeout, connect=10.0),
        }
        if self.ca_file:
            options["verify"] = _ssl_context(self.ca_file)
        if self.client_cert:
            options["cert"] = (
                (self.client_cert, self.client_key) if self.client_key else self.client_cert
            )
        return options


def _ssl_context(ca_file: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its answer.

    `read` gets the answer (its body already read, unless `sink` is set: then the body has gone
    into `sink` and `read` gets the answer and the length written). Only `idempotent` calls are
    retried. `progress` hears of the body `content` as it is sent.
    """

    method: str
    path: str
    read: Callable[[httpx.Response, int], T]
    json: Any = None
    params: dict[str, Any] | None = None
    content: Source | None = None
    content_length: int | None = None
    sink: IO[bytes] | None = None
    idempotent: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    progress: Progress | None = None

    def request_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"headers": dict(self.headers)}
        if self.params:
            options["params"] = self.params
        if self.json is not None:
            options["json"] = self.json
        if self.content_length is not None:
            options["headers"]["Content-Length"] = str(self.content_length)
        return options


def retry_after(answer: httpx.Response) -> float | None:
    """The answer's Retry-After in seconds (a number or an HTTP date), if it has one."""
    value = answer.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


def raise_for_problem(answer: httpx.Response) -> None:
    """Raise the answer's problem as its exception if it is not a success."""
    if answer.is_success:
        return
    try:
        body: Any = json.loads(answer.read())
    except ValueError:
        body = answer.text
    request_id = answer.headers.get("X-Request-ID")
    problem = problem_from(answer.status_code, body, request_id, retry_after(answer))
    if answer.status_code == 429 and type(problem).__name__ == "ProblemError":
        raise TooManyRequests(
            problem.status,
            problem.type,
            problem.title,
            problem.detail,
            request_id,
            problem.errors,
            problem.retry_after,
        )
    raise problem


def _sync_chunks(call: Call[Any]) -> Iterator[bytes]:
    source = call.content
    if isinstance(source, bytes):
        chunks: Iterable[bytes] = [source]
    elif hasattr(source, "read"):
        chunks = iter(lambda: source.read(CHUNK), b"")  # type: ignore[union-attr]
    else:
        chunks = source  # type: ignore[assignment]
    sent = 0
    for chunk in chunks:
        yield chunk
        sent += len(chunk)
        if call.progress is not None:
            call.progress(sent, call.content_length)


async def _async_chunks(call: Call[Any]) -> AsyncIterator[bytes]:
    if not isinstance(call.content, AsyncIterable):
        for chunk in _sync_chunks(call):
            yield chunk
        return
    sent = 0
    async for chunk in call.content:
        yield chunk
        sent += len(chunk)
        if call.progress is not None:
            call.progress(sent, call.content_length)


def content_length(source: Source) -> int | None:
    """The length of a source whose length can be known without reading it: bytes, a regular
    file or an in-memory one, from its position on."""
    if isinstance(source, bytes):
        return len(source)
    seekable = getattr(source, "seekable", None)
    if seekable is None or not seekable():
        return None
    file: IO[bytes] = source  # type: ignore[assignment]
    try:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None  # a device may seek and still have no end
    except (OSError, ValueError):
        pass  # no file descriptor: in memory (io.BytesIO)
    position = file.tell()
    end = file.seek(0, os.SEEK_END)
    file.seek(position)
    return end - position


def _unreachable(settings: Settings, error: httpx.TransportError) -> UnreachableError:
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLCertVerificationError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None:
        reason = cause.verify_message or str(cause)
        return UntrustedCertificate(
            f"the TLS certificate of {settings.address} is not trusted ({reason}): give the "
            "certificate of the CA that issued it (ca_file, CIPHERD_CA_FILE)"
        )
    return UnreachableError(f"cannot reach {settings.address}: {error}")


def _replayable(content: Source | None) -> bool:
    """Whether a request body can be sent again: none, bytes, or a seekable file."""
    if content is None or isinstance(content, bytes):
        return True
    seekable = getattr(content, "seekable", None)
    return bool(seekable and seekable())


def _rewind(content: Source | None) -> Callable[[], None]:
    """What puts a replayable body back at its start before another attempt."""
    if content is None or isinstance(content, bytes):
        return lambda: None
    start: int = content.tell()  # type: ignore[union-attr]
    return lambda: content.seek(start)  # type: ignore[union-attr]


def _may_retry(error: httpx.TransportError, answered: bool) -> bool:
    """A failed connection, or one the service closed before answering (a kept-alive
    connection it had already given up): the request was not processed."""
    return not answered and isinstance(
        error, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError
    )


def send_sync(client: httpx.Client, settings: Settings, call: Call[T]) -> T:
    replayable = call.idempotent and _replayable(call.content)
    retries = settings.retries if replayable else NO_RETRIES
    rewind = _rewind(call.content) if replayable else (lambda: None)
    for attempt in range(retries.attempts):
        options = call.request_options()
        if call.content is not None:
            rewind()
            options["content"] = _sync_chunks(call)
        answered = False
        try:
            with client.stream(call.method, call.path, **options) as answer:
                answered = True
                if answer.status_code in RETRY_STATUSES and attempt + 1 < retries.attempts:
                    answer.read()
                    time.sleep(retries.wait(attempt, answer))
                    continue
                raise_for_problem(answer)
                return _finish_sync(call, answer)
        except httpx.TransportError as error:
            if attempt + 1 < retries.attempts and _may_retry(error, answered):
                time.sleep(retries.wait(attempt, None))
                continue
            raise _unreachable(settings, error) from error
    raise AssertionError("unreachable: the last attempt returns or raises")


def _finish_sync(call: Call[T], answer: httpx.Response) -> T:
    if call.sink is None:
        answer.read()
        return call.read(answer, len(answer.content))
    written = 0
    for chunk in answer.iter_bytes(CHUNK):
        call.sink.write(chunk)
        written += len(chunk)
    return call.read(answer, written)


async def send_async(client: httpx.AsyncClient, settings: Settings, call: Call[T]) -> T:
    replayable = call.idempotent and _replayable(call.content)
    retries = settings.retries if replayable else NO_RETRIES
    rewind = _rewind(call.content) if replayable else (lambda: None)
    for attempt in range(retries.attempts):
        options = call.request_options()
        if call.content is not None:
            rewind()
            options["content"] = _async_chunks(call)
        answered = False
        try:
            async with client.stream(call.method, call.path, **options) as answer:
                answered = True
                if answer.status_code in RETRY_STATUSES and attempt + 1 < retries.attempts:
                    await answer.aread()
                    await asyncio.sleep(retries.wait(attempt, answer))
                    continue
                if not answer.is_success:
                    await answer.aread()
                raise_for_problem(answer)
                if call.sink is None:
                    await answer.aread()
                    return call.read(answer, len(answer.content))
                written = 0
                async for chunk in answer.aiter_bytes(CHUNK):
                    call.sink.write(chunk)
                    written += len(chunk)
                return call.read(answer, written)
        except httpx.TransportError as error:
            if attempt + 1 < retries.attempts and _may_retry(error, answered):
                await asyncio.sleep(retries.wait(attempt, None))
                continue
            raise _unreachable(settings, error) from error
    raise AssertionError("unreachable: the last attempt returns or raises")
