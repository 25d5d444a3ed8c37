"""The request and answer examples of the documentation are what the service does.

Every page under docs/ that shows HTTP exchanges (fenced `http` blocks: a request, then the
answer that follows it) is replayed, in order, against a fresh service with the admin token
(unless the example sends an `Authorization` header of its own). Each answer must match its
example: the status, every header the example shows, and the JSON body field by field.

Values the service draws afresh on every run (ciphertexts, signatures, ids, times, tokens) are
compared by shape only, and where a later example sends such a value back (a ciphertext to its
decryption, a token in a header), the value this run received takes its place. A string that
ends in "…" stands for a long value the page shortens: any string matches it.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

DOCS = Path(__file__).parents[2] / "docs"
ADMIN_TOKEN = "docs-examples-admin-token"
BLOCK = re.compile(r"^```http\n(.*?)^```", re.MULTILINE | re.DOTALL)
ELIDED = "…"

# Fields whose values differ from one run to the next.
DRAWN = frozenset(
    {
        "backup",
        "chain",
        "ciphertext",
        "client",
        "created_at",
        "deletion_date",
        "expires_at",
        "functional_key",
        "hmac",
        "id",
        "mac",
        "max_expires_at",
        "nonce",
        "plaintext",
        "public_key",
        "random",
        "request_id",
        "signature",
        "signing_key",
        "time",
        "token",
        "updated_at",
    }
)


@dataclass
class Exchange:
    page: str
    number: int
    method: str
    path: str
    headers: dict[str, str]
    body: str
    status: int
    answer_headers: dict[str, str]
    answer: str

    def __str__(self) -> str:
        return f"{self.page}, example {self.number} ({self.method} {self.path})"


def _message(text: str) -> tuple[str, dict[str, str], str]:
    head, _, body = text.partition("\n\n")
    first, *lines = head.splitlines()
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return first, headers, body.strip()


def exchanges(page: Path) -> list[Exchange]:
    blocks = BLOCK.findall(page.read_text())
    name = str(page.relative_to(DOCS))
    found = []
    for number, index in enumerate(range(0, len(blocks), 2), start=1):
        request, answer = blocks[index], blocks[index + 1] if index + 1 < len(blocks) else ""
        line, headers, body = _message(request)
        status_line, answer_headers, answer_body = _message(answer)
        assert status_line.startswith("HTTP/1.1 "), (
            f"{name}, example {number}: a request block must be followed by its answer"
        )
        method, path, _version = line.split(" ")
        found.append(
            Exchange(
                name,
                number,
                method,
                path,
                headers,
                body,
                int(status_line.split(" ")[1]),
                answer_headers,
                answer_body,
            )
        )
    return found


def pages() -> Iterator[Path]:
    for page in sorted(DOCS.rglob("*.md")):
        if BLOCK.search(page.read_text()):
            yield page


class Replay:
    """One page's exchanges against one service, carrying drawn values from answer to request."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.received: dict[str, str] = {}

    def substitute(self, text: str) -> str:
        for shown in sorted(self.received, key=len, reverse=True):
            text = text.replace(shown, self.received[shown])
        return text

    def run(self, exchange: Exchange) -> None:
        headers = {name: self.substitute(value) for name, value in exchange.headers.items()}
        headers.setdefault("authorization", f"Bearer {ADMIN_TOKEN}")
        answer = self.client.request(
            exchange.method,
            self.substitute(exchange.path),
            content=self.substitute(exchange.body).encode() or None,
            headers=headers,
        )
        assert answer.status_code == exchange.status, (str(exchange), answer.text)
        for name, value in exchange.answer_headers.items():
            assert answer.headers.get(name) == value, (str(exchange), name, answer.headers)
        if exchange.answer:
            self.match(json.loads(exchange.answer), answer.json(), str(exchange), "$")
        else:
            assert not answer.content, (str(exchange), answer.content)

    def match(self, shown: Any, got: Any, where: str, at: str) -> None:
        if isinstance(shown, dict):
            assert isinstance(got, dict) and shown.keys() == got.keys(), (where, at, got)
            for name in shown:
                self.match(shown[name], got[name], where, f"{at}.{name}")
        elif isinstance(shown, list):
            assert isinstance(got, list) and len(shown) == len(got), (where, at, got)
            for index, (one, other) in enumerate(zip(shown, got, strict=True)):
                self.match(one, other, where, f"{at}[{index}]")
        elif isinstance(shown, str):
            assert isinstance(got, str), (where, at, got)
            expected = self.substitute(shown)
            if expected != got:
                field = at.rsplit(".", 1)[-1].split("[")[0]
                assert shown.endswith(ELIDED) or field in DRAWN, (where, at, shown, got)
                self.received[shown] = got
        else:
            assert shown == got and type(shown) is type(got), (where, at, shown, got)


@pytest.mark.parametrize("page", list(pages()), ids=lambda page: str(page.relative_to(DOCS)))
def test_page_examples_are_what_the_service_answers(page: Path, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        admin_token=ADMIN_TOKEN,
        fe_processes=0,
        # A deletion is answered once no cache can hold the key: at once here.
        key_cache_seconds=0,
    )
    with TestClient(create_app(settings)) as client:
        replay = Replay(client)
        for exchange in exchanges(page):
            replay.run(exchange)


def test_a_wrong_answer_fails_its_page() -> None:
    """The comparison can fail: a shown value that is not drawn must be the one received."""
    replay = Replay(client=None)
    with pytest.raises(AssertionError):
        replay.match({"valid": True}, {"valid": False}, "page", "$")
    with pytest.raises(AssertionError):
        replay.match({"state": "active"}, {"state": "pending-deletion"}, "page", "$")
    with pytest.raises(AssertionError):
        replay.match({"name": "a"}, {"name": "a", "extra": 1}, "page", "$")
    replay.match({"ciphertext": "Y2lw…"}, {"ciphertext": "Y2lwaGVy"}, "page", "$")
    assert replay.substitute("decrypt Y2lw…") == "decrypt Y2lwaGVy"
