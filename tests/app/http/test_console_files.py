"""The console's pages and files as the service serves them: the policy and cache headers, the
digest in the files' paths, pages with nothing inline, and the vendored libraries as recorded.
The console at work in a browser is tests/e2e/test_console.py."""

import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.http.console import PAGE_POLICY, Console, _walk, digest_of
from app.main import create_app
from app.settings import Settings

CONSOLE = Path(__file__).resolve().parents[3] / "app" / "http" / "console"


class _Page(HTMLParser):
    """What a page loads and links to, and whatever it holds inline."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script":
            self._in_script = True
            if found.get("src"):
                self.loads.append(str(found["src"]))
            else:
                self.inline.append("a script without src")
        if tag == "link" and found.get("href"):
            self.loads.append(str(found["href"]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))
        if tag == "style":
            self.inline.append("a style element")
        for name, _ in attrs:
            if name == "style" or name.startswith("on"):
                self.inline.append(f"the attribute {name} on {tag}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("script text")


def _read(client: TestClient, path: str) -> _Page:
    page = _Page()
    page.feed(client.get(path).text)
    return page


def _policy(header: str) -> dict[str, list[str]]:
    return {
        name: values
        for name, *values in (part.split() for part in header.split(";") if part.strip())
    }


@pytest.mark.parametrize("path", ["/", "/ui/"])
def test_the_pages_forbid_all_but_the_service_and_are_not_cached(
    anonymous: TestClient, path: str
) -> None:
    answer = anonymous.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-security-policy"] == PAGE_POLICY
    policy = _policy(PAGE_POLICY)
    assert policy["default-src"] == ["'self'"]
    # Nothing widens it: no other source for scripts or styles, no inline code, no eval.
    assert not {"script-src", "style-src", "connect-src"} & policy.keys()
    assert "unsafe" not in PAGE_POLICY
    assert policy["frame-ancestors"] == ["'none'"]
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    page = _Page()
    page.feed(answer.text)
    assert page.inline == []
    assert page.loads, "the page loads its style and scripts from the service"


def test_every_file_a_page_loads_is_served_for_a_year(anonymous: TestClient) -> None:
    for base, path in (("/ui/", "/ui/"), ("/", "/")):
        for load in _read(anonymous, path).loads:
            assert not re.match(r"^[a-z]+:|^//", load), f"{load} is not the service's"
            answer = anonymous.get(base + load)
            assert answer.status_code == 200, load
            assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
            assert answer.headers["x-content-type-options"] == "nosniff"
            expected = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}
            assert answer.headers["content-type"].startswith(expected[load.rsplit(".", 1)[1]])


def test_the_console_is_one_redirect_away_relative_to_the_service(
    anonymous: TestClient,
) -> None:
    answer = anonymous.get("/ui", follow_redirects=False)
    assert answer.status_code == 308
    # Relative: behind a proxy that serves the service under a prefix, it stays under it.
    assert answer.headers["location"] == "ui/"


def test_the_front_page_links_to_the_console_and_the_api_documentation(
    anonymous: TestClient,
) -> None:
    links = _read(anonymous, "/").links
    assert links == ["ui/", "docs", "redoc", "openapi.json"]
    for link in links:
        assert anonymous.get(f"/{link}").status_code == 200
    # Without an address for the documentation site, the page says how to give one.
    assert "CIPHERD_DOCUMENTATION_URL" in anonymous.get("/").text


@pytest.mark.parametrize("address", ["https://docs.example.org/cipherd/", "/documentation/"])
def test_the_front_page_links_to_the_documentation_site(settings: Settings, address: str) -> None:
    app = create_app(settings.model_copy(update={"documentation_url": address}))
    with TestClient(app) as client:
        assert _read(client, "/").links[-1] == address


@pytest.mark.parametrize(
    "address", ["javascript:alert(1)", "docs.example.org", '/x" onclick="y', "https://a b"]
)
def test_the_documentation_address_is_a_link_and_nothing_else(address: str) -> None:
    with pytest.raises(ValidationError, match="documentation_url"):
        Settings(documentation_url=address)


def test_files_are_found_only_under_this_release_digest(anonymous: TestClient) -> None:
    console = Console.load()
    base = f"/ui/static/{console.digest}"
    assert anonymous.get(f"{base}/js/main.js").status_code == 200
    assert anonymous.head(f"{base}/js/main.js").status_code == 200
    for missing in (
        f"/ui/static/{'0' * 16}/js/main.js",  # another release's
        f"{base}/js/absent.js",
        f"{base}/../__init__.py",
        f"{base}/%2e%2e/__init__.py",
        f"{base}/",
    ):
        answer = anonymous.get(missing)
        assert answer.status_code == 404, missing
        assert answer.headers["content-type"] == "application/problem+json"


def test_the_digest_changes_with_any_file(tmp_path: Path) -> None:
    (tmp_path / "js").mkdir()
    script = tmp_path / "js" / "a.js"
    script.write_text("export const a = 1;\n")
    first = digest_of(_walk(tmp_path))
    assert digest_of(_walk(tmp_path)) == first
    script.write_text("export const a = 2;\n")
    changed = digest_of(_walk(tmp_path))
    script.rename(tmp_path / "js" / "b.js")
    renamed = digest_of(_walk(tmp_path))
    assert len({first, changed, renamed}) == 3


def test_a_file_of_no_known_type_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("served as what?")
    with pytest.raises(ValueError, match=r"notes\.txt"):
        _walk(tmp_path)


def test_the_vendored_files_are_the_recorded_ones() -> None:
    record = (CONSOLE / "VENDORED.md").read_text()
    listed = dict(re.findall(r"→ `([^`]+)` \| `([0-9a-f]{64})`", record))
    vendor = CONSOLE / "static" / "vendor"
    shipped = {str(path.relative_to(vendor)) for path in vendor.rglob("*") if path.is_file()}
    assert shipped == set(listed)
    for path, digest in listed.items():
        assert hashlib.sha256((vendor / path).read_bytes()).hexdigest() == digest, path
    shell = (CONSOLE / "console.html").read_text()
    for script in (path for path in listed if path.endswith(".js")):
        assert f"$static/vendor/{script}" in shell
