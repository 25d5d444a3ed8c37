"""/docs and /redoc render every operation in headless Chromium with no request leaving the host.

Chromium (Debian's package, installed by `scripts/install.sh --dev`) is driven by playwright-core
(tests/interop/docs_page.js), which refuses every request to an origin other than the service's:
a page that still loaded a script, a style or a font from a CDN would show nothing, or list the
refused URL.
"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

PAGE_SCRIPT = Path(__file__).resolve().parents[1] / "interop" / "docs_page.js"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(tmp_path_factory.mktemp("docs") / "data") as started:
        yield started


def _documented(server: Server) -> set[str]:
    document = httpx.get(f"{server.url}/openapi.json", timeout=10).json()
    return {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
    }


@pytest.mark.parametrize("page", ["docs", "redoc"])
def test_the_page_lists_every_operation_offline(server: Server, page: str) -> None:
    assert Path("/usr/bin/chromium").exists(), "scripts/install.sh --dev installs chromium"
    shown = subprocess.run(
        ["node", str(PAGE_SCRIPT), server.url, page],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    rendered = json.loads(shown.stdout)
    assert rendered["refused"] == []
    assert rendered["errors"] == []
    assert set(rendered["operations"]) == _documented(server)
    assert len(rendered["operations"]) == len(_documented(server))


def test_the_assets_are_served_by_the_service(server: Server) -> None:
    for page in ("docs", "redoc"):
        answer = httpx.get(f"{server.url}/{page}", timeout=10)
        assert "https://" not in answer.text, answer.text
        assert "default-src 'self'" in answer.headers["content-security-policy"]
    script = httpx.get(f"{server.url}/docs/assets/swagger-ui-bundle.js", timeout=10)
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
