"""The web console at /ui in a real browser: Debian's Chromium, driven by Playwright, against a
real `cipherd serve`, with every request to any other origin refused.

Each test checks what the page shows against what the API says, and leaves the browser's
console free of errors (a refused script, a broken policy, an uncaught exception, a failed
request all land there). A screenshot of each main page goes to build/console-screenshots/.
"""

import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from app.http.console import PAGE_POLICY
from tests.e2e.server import Server, running

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "console-screenshots"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
DOCUMENTATION = "https://docs.example.org/cipherd/"
# The longest a page may take to show what it is waiting for: a deletion alone waits out the
# key cache (2 s) before it answers.
expect.set_options(timeout=20_000)

# Every token the tests handed the server, to look for in its log at the end.
TOKENS_USED: list[str] = []


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # INFO: the access log is on, so the last test can show that no token reached it.
    settings = {"CIPHERD_LOG_LEVEL": "INFO", "CIPHERD_DOCUMENTATION_URL": DOCUMENTATION}
    with running(tmp_path_factory.mktemp("console") / "data", env=settings) as started:
        TOKENS_USED.append(started.admin_token)
        yield started


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    assert CHROMIUM.exists(), "scripts/install.sh --dev installs chromium"
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield launched
    launched.close()


@dataclass
class Tab:
    """A page of its own browser context, and what it did: its console errors, the requests it
    made, the ones refused for leaving the service."""

    page: Page
    server: Server
    errors: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    # Console errors the test causes on purpose (a request the service refuses, by design).
    expected: list[str] = field(default_factory=list)

    def sign_in(self, token: str | None = None, fragment: str = "keys") -> None:
        """Sign in at #/<fragment> with the keyboard alone, as a user without a mouse would."""
        token = token or self.server.admin_token
        self.page.goto(f"{self.server.url}/ui/#/{fragment}")
        expect(self.page.get_by_label("Token")).to_be_focused()
        self.page.keyboard.type(token)
        self.page.keyboard.press("Enter")
        expect(self.page.get_by_role("button", name="Sign out")).to_be_visible()

    def visit(self, fragment: str) -> None:
        """Go to #/<fragment> and wait until it has loaded what it shows."""
        self.page.goto(f"{self.server.url}/ui/#/{fragment}")
        expect(self.page.get_by_role("heading", level=1)).to_be_visible()
        expect(self.page.locator(".loading")).to_have_count(0)

    def heading(self, text: str) -> None:
        expect(self.page.get_by_role("heading", level=1)).to_have_text(text)

    def status(self, text: str | re.Pattern[str]) -> None:
        expect(self.page.get_by_role("status").filter(has_text=text)).to_be_visible()

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


@contextmanager
def _browsing(browser: Browser, server: Server, **options: Any) -> Iterator[Tab]:
    """A tab in a browser context of its own (`options`: viewport, colour scheme, ...), checked
    on the way out: no console error but those expected, no request outside the service, no
    token in any URL."""
    context = browser.new_context(accept_downloads=True, **options)
    tab = Tab(context.new_page(), server)

    def only_the_service(route: Any) -> None:
        url = route.request.url
        tab.urls.append(url)
        if url.startswith(f"{server.url}/"):
            route.continue_()
        else:
            tab.refused.append(url)
            route.abort()

    context.route("**/*", only_the_service)

    def console_message(message: Any) -> None:
        if message.type == "error":
            tab.errors.append(message.text)

    tab.page.on("console", console_message)
    tab.page.on("pageerror", lambda error: tab.errors.append(f"uncaught: {error}"))
    try:
        yield tab
    finally:
        context.close()
    unexpected = [e for e in tab.errors if not any(part in e for part in tab.expected)]
    assert unexpected == [], unexpected
    assert tab.refused == []
    for token in TOKENS_USED:
        assert not any(token in url for url in tab.urls), "a token in a URL"


@pytest.fixture
def tab(browser: Browser, server: Server) -> Iterator[Tab]:
    with _browsing(browser, server, viewport=DESKTOP) as opened:
        yield opened


def _api(server: Server, token: str | None = None) -> httpx.Client:
    return server.client(token)


def _until(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.1)


def _create(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    answer = http.post("/v1/keys", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _key(http: httpx.Client, name: str) -> dict[str, Any]:
    answer = http.get(f"/v1/keys/{name}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _expect_rows(tab: Tab, caption: str, names: list[str]) -> None:
    """The table `caption` shows these rows (their heading cells), in this order."""
    table = tab.page.get_by_role("region", name=caption)
    expect(table.locator("tbody th[scope=row]")).to_have_text(names)


@pytest.fixture(scope="module")
def seeded(server: Server) -> None:
    """Keys of the kinds whose pages show the most: an FE key with a policy and a released
    function, and a key with a public part."""
    with _api(server) as http:
        _create(http, {"name": "seed-ecies", "type": "ecies-x25519"})
        _create(
            http,
            {"name": "seed-fe", "type": "qfe-sgp", "dimension": 2, "fe_policy": {"max_rank": 3}},
        )
        answer = http.post("/v1/fe/seed-fe/keygen", json={"f": [[1, 0], [0, 1]]})
        assert answer.status_code == 200, answer.text


def test_the_front_page_and_the_console_carry_the_policy(tab: Tab) -> None:
    front = tab.page.goto(tab.server.url + "/")
    assert front is not None and front.headers["content-security-policy"] == PAGE_POLICY
    for name, address in (
        ("Console", "ui/"),
        ("API reference (Swagger UI)", "docs"),
        ("API reference (ReDoc)", "redoc"),
        ("Documentation", DOCUMENTATION),
    ):
        link = tab.page.get_by_role("link", name=name, exact=True)
        expect(link).to_have_attribute("href", address)
    tab.shot("front")
    tab.page.get_by_role("link", name="Console").click()
    expect(tab.page.get_by_label("Token")).to_be_visible()
    shell = tab.page.goto(tab.server.url + "/ui/")
    assert shell is not None
    assert shell.headers["content-security-policy"] == PAGE_POLICY
    assert shell.headers["cache-control"] == "no-store"
    tab.shot("sign-in")


def test_keys_made_through_the_api_are_listed_by_name_a_page_at_a_time(tab: Tab) -> None:
    with _api(tab.server) as http:
        for name in ("api-orders", "api-payments"):
            _create(http, {"name": name, "type": "aez"})
        _create(http, {"name": "api-signing", "type": "ed25519", "deletion_protection": True})
        for n in range(30):
            _create(http, {"name": f"bulk-{n:02}", "type": "hmac"})
        everything = [key["name"] for key in http.get("/v1/keys").json()["keys"]]
    tab.sign_in()
    tab.heading("Keys")
    _expect_rows(tab, "Keys", everything[:25])
    row = tab.page.get_by_role("row").filter(has_text="api-signing")
    expect(row).to_contain_text("ed25519")
    expect(row).to_contain_text("active")
    expect(row).to_contain_text("deletion protected")
    tab.shot("keys")

    tab.page.get_by_role("button", name="Next").click()
    expect(tab.page.get_by_text("Page 2")).to_be_visible()
    _expect_rows(tab, "Keys", everything[25:50])
    tab.page.get_by_role("button", name="Previous").click()
    expect(tab.page.get_by_text("Page 1")).to_be_visible()
    _expect_rows(tab, "Keys", everything[:25])

    # A search looks through the whole list, and pages through what it finds.
    tab.page.get_by_label("Name contains").fill("BULK-")
    tab.page.get_by_role("button", name="Search").click()
    _expect_rows(tab, "Keys", [f"bulk-{n:02}" for n in range(25)])
    tab.page.get_by_role("button", name="Next").click()
    _expect_rows(tab, "Keys", [f"bulk-{n:02}" for n in range(25, 30)])
    tab.page.get_by_label("Name contains").fill("payments")
    tab.page.get_by_role("button", name="Search").click()
    _expect_rows(tab, "Keys", ["api-payments"])


def test_a_key_from_creation_to_backup_through_its_page(tab: Tab) -> None:
    page = tab.page
    tab.sign_in()
    page.get_by_role("button", name="Create a key").click()
    page.get_by_label("Name", exact=True).fill("console-orders")
    page.get_by_label("Type", exact=True).select_option("ecies-secp256k1")
    page.get_by_label("Allow backups").check()
    tab.shot("key-create")
    page.get_by_role("button", name="Create", exact=True).click()
    tab.heading("Key console-orders")
    tab.status("Key created.")
    http = _api(tab.server)
    created = _key(http, "console-orders")
    assert (created["type"], created["allow_backup"], created["latest_version"]) == (
        "ecies-secp256k1",
        True,
        1,
    )
    public = http.get("/v1/keys/console-orders/public").json()["public_key"]
    expect(page.get_by_label("Public key of v1 (base64)")).to_have_value(public)

    page.get_by_role("button", name="Rotate").click()
    tab.status("Rotated: v2 is the latest version.")
    assert _key(http, "console-orders")["latest_version"] == 2
    _expect_rows(tab, "Versions", ["v2 (latest)", "v1"])
    tab.shot("key")

    # The rotation in the audit view, every field of its record as the API has it.
    page.get_by_role("link", name="Audit records").click()
    tab.heading("Audit trail")
    expect(page.get_by_label("Key", exact=True)).to_have_value("console-orders")
    # The rotation's outcome (a change may have the record of its intent before it).
    rotation = page.get_by_role("row").filter(has_text="keys_rotate_key").filter(has_text="v2")
    expect(rotation).to_have_count(1)
    expect(rotation).to_contain_text("console-orders v2")
    expect(rotation).to_contain_text("200")
    (record,) = (
        found
        for found in http.get(
            "/v1/audit", params={"key": "console-orders", "operation": "keys_rotate_key"}
        ).json()["records"]
        if found["outcome"] == "success"
    )
    rotation.get_by_role("button", name=re.compile("^Show")).click()
    fields = page.locator("tr.record-fields")
    for value in (record["request_id"], record["mac"], record["chain"], "admin"):
        expect(fields).to_contain_text(value)
    tab.shot("audit")
    page.go_back()
    tab.heading("Key console-orders")

    # Policies, then a trim of what they no longer let decrypt.
    page.get_by_label("Minimum decryption version").fill("2")
    page.get_by_role("button", name="Save policies").click()
    tab.status("Policies saved.")
    assert _key(http, "console-orders")["min_decryption_version"] == 2
    page.get_by_role("button", name="Trim old versions").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("destroys v1")
    dialog.get_by_role("button", name="Destroy these versions").click()
    tab.status("Trimmed: v1 destroyed.")
    assert [v["version"] for v in _key(http, "console-orders")["versions"]] == [2]

    # Deletion asks first: Escape leaves the key as it was; the action waits for its name.
    page.get_by_role("button", name="Schedule deletion").click()
    expect(dialog.get_by_role("button", name="Schedule deletion")).to_be_disabled()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert _key(http, "console-orders")["state"] == "active"
    page.get_by_role("button", name="Schedule deletion").click()
    dialog.get_by_label("Type console-orders to confirm").fill("console-orders")
    dialog.get_by_role("button", name="Schedule deletion").click()
    tab.status("Deletion scheduled")
    pending = _key(http, "console-orders")
    assert pending["state"] == "pending-deletion"
    date = pending["deletion_date"][:19].replace("T", " ") + " UTC"
    tab.status(date)
    expect(page.locator("dl.summary")).to_contain_text(f"pending deletion (destroyed on {date})")
    page.get_by_role("button", name="Restore").click()
    tab.status("Restored: the key is back with every version.")
    assert _key(http, "console-orders")["state"] == "active"

    # The backup downloaded is what the import takes.
    page.get_by_role("button", name="Use this service's wrapping key").click()
    wrapping = http.get("/v1/sys/wrapping-key").json()["public_key"]
    expect(page.get_by_label(re.compile("^Wrapping key"))).to_have_value(wrapping)
    with page.expect_download() as downloading:
        page.get_by_role("button", name="Download backup").click()
    download = downloading.value
    assert re.fullmatch(
        r"console-orders-backup-\d{4}-\d{2}-\d{2}\.json", download.suggested_filename
    )
    saved = Path(download.path())
    assert list(json.loads(saved.read_text())) == ["backup"]

    # Imported through the keys page under another name, it is the same key.
    page.get_by_role("navigation", name="Console").get_by_role(
        "link", name="Keys", exact=True
    ).click()
    page.get_by_role("button", name="Import a backup").click()
    page.get_by_label("Backup file").set_input_files(
        files=[{"name": "notes.json", "mimeType": "application/json", "buffer": b"[1, 2]"}]
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("it has no backup")
    page.get_by_label("Backup file").set_input_files(saved)
    page.get_by_label("Name", exact=True).fill("console-orders-copy")
    page.get_by_role("button", name="Import", exact=True).click()
    tab.heading("Key console-orders-copy")
    tab.status("Key imported.")
    copy = _key(http, "console-orders-copy")
    assert (copy["type"], [v["version"] for v in copy["versions"]]) == ("ecies-secp256k1", [2])
    public = http.get("/v1/keys/console-orders/public").json()["public_key"]
    expect(page.get_by_label("Public key of v2 (base64)")).to_have_value(public)
    http.close()


def test_a_token_issued_with_scopes_and_revoked(tab: Tab) -> None:
    page = tab.page
    with _api(tab.server) as http:
        _create(http, {"name": "billing-ledger", "type": "aez"})
    tab.sign_in(fragment="tokens")
    tab.heading("Tokens")
    page.get_by_text("Issue a token").click()
    page.get_by_label("Description").fill("billing service")
    page.get_by_label("Key name patterns").fill("billing-*, invoices")
    page.get_by_label("read", exact=True).check()
    page.get_by_label("encrypt", exact=True).check()
    page.get_by_role("button", name="Issue", exact=True).click()
    issued = page.get_by_label("The new token")
    expect(issued).to_have_value(re.compile(r"^cdt_"))
    token = issued.input_value()
    TOKENS_USED.append(token)
    tab.shot("token-issued")
    with _api(tab.server, token) as scoped:
        assert [k["name"] for k in scoped.get("/v1/keys").json()["keys"]] == ["billing-ledger"]
        token_id = next(
            t["id"]
            for t in _api(tab.server).get("/v1/tokens").json()["tokens"]
            if t["description"] == "billing service"
        )
        row = page.get_by_role("row").filter(has_text="billing service")
        expect(row).to_contain_text("billing-*")
        expect(row).to_contain_text("encrypt, read")
        tab.shot("tokens")

        row.get_by_role("button", name=f"Revoke token {token_id}").click()
        page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
        tab.status(f"Token {token_id} revoked.")
        expect(page.get_by_role("row").filter(has_text="billing service")).to_have_count(0)
        _until(lambda: scoped.get("/v1/keys").status_code == 401)


def test_the_tokens_a_page_at_a_time(tab: Tab) -> None:
    """50 tokens a page, in the order of their ids, as the service pages them."""
    with _api(tab.server) as http:
        for index in range(55):
            body = {"description": f"paged {index}", "keys": ["p-*"], "operations": ["read"]}
            made = http.post("/v1/tokens", json=body)
            assert made.status_code == 201, made.text
            TOKENS_USED.append(made.json()["token"])
        everything = [
            t["id"] for t in http.get("/v1/tokens", params={"limit": 1000}).json()["tokens"]
        ]
    tab.sign_in(fragment="tokens")
    tab.heading("Tokens")
    _expect_rows(tab, "Scoped tokens", everything[:50])
    tab.page.get_by_role("button", name="Next").click()
    expect(tab.page.get_by_text("Page 2")).to_be_visible()
    _expect_rows(tab, "Scoped tokens", everything[50:100])
    tab.page.get_by_role("button", name="Previous").click()
    _expect_rows(tab, "Scoped tokens", everything[:50])


def test_an_fe_key_and_its_policies_through_the_forms(tab: Tab) -> None:
    page = tab.page
    tab.sign_in()
    page.get_by_role("button", name="Create a key").click()
    page.get_by_label("Name", exact=True).fill("console-quadratic")
    page.get_by_label("Type", exact=True).select_option("qfe-sgp")
    page.get_by_label("Dimension").fill("2")
    page.get_by_label("Pairing curve").select_option("bn254")
    page.get_by_label("Maximum rank").fill("3")
    page.get_by_label("Largest entry").fill("100")
    page.get_by_label("Quota: keys").fill("10")
    page.get_by_label("Quota: period (seconds)").fill("86400")
    page.get_by_label("Allowed functions (JSON)").fill("[[[1,0],[0,1]], [[0,1],[1,0]]]")
    page.get_by_label("Allow their non-zero multiples too").check()
    page.get_by_label("Deletion protection").check()
    page.get_by_role("button", name="Create", exact=True).click()
    tab.heading("Key console-quadratic")
    http = _api(tab.server)
    created = _key(http, "console-quadratic")
    assert (created["type"], created["dimension"], created["curve"]) == ("qfe-sgp", 2, "bn254")
    assert created["deletion_protection"] is True
    assert created["fe_policy"] == {
        "max_rank": 3,
        "max_abs_entry": 100,
        "keygen_quota": {"count": 10, "period_seconds": 86400},
        "allowed_functions": [[[1, 0], [0, 1]], [[0, 1], [1, 0]]],
        "allow_multiples": True,
    }

    expect(page.get_by_role("button", name="Schedule deletion")).to_be_disabled()
    expect(page.get_by_text("Deletion protection is on")).to_be_visible()

    # The policy form sends what changed, and only that.
    page.get_by_label("Rotate every (days)").fill("30")
    page.get_by_label("Deletion protection").uncheck()
    page.get_by_label("Maximum rank").fill("2")
    page.get_by_label("Allowed functions (JSON)").fill("")
    with page.expect_request(lambda r: r.method == "PATCH") as patching:
        page.get_by_role("button", name="Save policies").click()
    assert patching.value.post_data_json == {
        "auto_rotate_seconds": 30 * 86400,
        "deletion_protection": False,
        "fe_policy": {
            "max_rank": 2,
            "max_abs_entry": 100,
            "keygen_quota": {"count": 10, "period_seconds": 86400},
        },
    }
    tab.status("Policies saved.")
    changed = _key(http, "console-quadratic")
    assert changed["auto_rotate_seconds"] == 30 * 86400
    assert changed["deletion_protection"] is False
    assert changed["fe_policy"]["max_rank"] == 2
    assert changed["fe_policy"].get("allowed_functions") is None
    expect(page.get_by_role("button", name="Schedule deletion")).to_be_enabled()
    # A form the console cannot read is not sent.
    page.get_by_label("Allowed functions (JSON)").fill("[[1, 0]")
    page.get_by_role("button", name="Save policies").click()
    expect(page.get_by_role("alert")).to_contain_text("Allowed functions: a JSON list")
    http.close()


def test_fe_keys_show_their_rank_against_max_rank_and_their_quota(tab: Tab) -> None:
    with _api(tab.server) as http:
        _create(
            http,
            {
                "name": "fe-scores",
                "type": "ipfe-opt",
                "dimension": 3,
                "fe_policy": {"max_rank": 2, "keygen_quota": {"count": 5, "period_seconds": 3600}},
            },
        )
        for y in ([1, 0, 0], [0, 1, 0], [2, 2, 0]):  # the third is in the span: rank stays 2
            answer = http.post("/v1/fe/fe-scores/keygen", json={"y": y})
            assert answer.status_code == 200, answer.text
    tab.sign_in(fragment="fe")
    tab.heading("Functional-encryption keys")
    row = tab.page.get_by_role("row").filter(has_text="fe-scores")
    expect(row).to_contain_text("3 functions released, rank 2 of at most 2")
    expect(row).to_contain_text("5 per 1 h per token")
    tab.shot("fe-keys")
    row.get_by_role("link", name="fe-scores").click()
    tab.heading("Functions released under fe-scores")
    functions = tab.page.get_by_role("region", name="Released functions")
    expect(functions.locator("tbody tr")).to_have_count(3)
    expect(functions).to_contain_text("[2,2,0]")
    quota = tab.page.get_by_role("region", name="Quota used per token")
    expect(quota.get_by_role("row").filter(has_text="admin").locator("td")).to_have_text(["3", "2"])
    tab.shot("fe-functions")


def test_the_status_page_shows_health_readiness_and_figures(tab: Tab) -> None:
    tab.sign_in(fragment="status")
    tab.heading("Status")
    summary = tab.page.locator("dl.health")
    expect(summary).to_contain_text("alive")
    expect(summary).to_contain_text("ready")
    answered = tab.page.locator("dt", has_text="Answered").locator("xpath=../dd")
    expect(answered).to_have_text(re.compile(r"^[1-9]\d*$"))
    busiest = tab.page.get_by_role("region", name="Busiest routes")
    expect(busiest).to_contain_text("GET /v1/keys")
    tab.shot("status")


def test_the_audit_chains_are_verified_from_the_page(tab: Tab) -> None:
    with _api(tab.server) as http:
        expected = http.post("/v1/audit/verify").json()
    assert expected["verified"] is True
    tab.sign_in(fragment="audit")
    tab.page.get_by_role("button", name="Verify the audit chains").click()
    result = tab.page.get_by_role("status").filter(has_text="Verified")
    expect(result).to_contain_text(re.compile(r"Verified: \d+ records in \d+ chains, 0 faults"))
    shown = int(re.search(r"(\d+) records", result.inner_text()).group(1))  # type: ignore[union-attr]
    assert shown >= expected["records"]  # the page's own requests add records meanwhile
    expect(result).to_contain_text("Compared with the anchor kept in file")
    tab.shot("audit-verified")


def test_a_refused_token_ends_the_session(tab: Tab) -> None:
    with _api(tab.server) as http:
        answer = http.post("/v1/tokens", json={"keys": ["*"], "operations": ["read"]})
        issued = answer.json()
    TOKENS_USED.append(issued["token"])
    tab.sign_in(issued["token"])
    tab.heading("Keys")
    # The key list's own request must be answered before the revocation, or it is the one refused.
    expect(tab.page.get_by_text("Loading the keys")).to_have_count(0)
    assert tab.page.evaluate("sessionStorage.getItem('cipherd.token')") == issued["token"]
    with _api(tab.server) as http:
        assert http.delete(f"/v1/tokens/{issued['id']}").status_code == 204
        with _api(tab.server, issued["token"]) as scoped:
            _until(lambda: scoped.get("/v1/keys").status_code == 401)
    tab.expected.append("status of 401")
    tab.page.get_by_role("link", name="Tokens").click()
    expect(tab.page.get_by_text("The service refused the token")).to_be_visible()
    expect(tab.page.get_by_label("Token")).to_be_visible()
    assert tab.page.evaluate("sessionStorage.getItem('cipherd.token')") is None
    assert sum("status of 401" in e for e in tab.errors) == 1


def test_signing_out_forgets_the_token(tab: Tab) -> None:
    tab.sign_in()
    assert tab.page.evaluate("sessionStorage.getItem('cipherd.token')") == tab.server.admin_token
    tab.page.get_by_role("button", name="Sign out").click()
    expect(tab.page.get_by_text("Signed out")).to_be_visible()
    assert tab.page.evaluate("sessionStorage.length") == 0
    tab.page.reload()
    expect(tab.page.get_by_label("Token")).to_be_visible()
    assert tab.page.evaluate("document.cookie") == ""


# Every visible form control with no label, and every button without a name.
UNLABELLED = """() => [
  ...[...document.querySelectorAll("input, select, textarea")]
    .filter((e) => e.type !== "hidden" && e.labels.length === 0 && !e.getAttribute("aria-label")),
  ...[...document.querySelectorAll("button")]
    .filter((b) => !b.textContent.trim() && !b.getAttribute("aria-label")),
].map((e) => e.outerHTML)"""

# Text whose contrast with what is behind it is under WCAG AA's 4.5:1.
LOW_CONTRAST = """() => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const behind = (e) => { for (; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor; const p = rgb(c);
    if (p.length === 3 || p[3] > 0) return p.slice(0, 3); } return [255, 255, 255]; };
  const low = [];
  for (const e of document.querySelectorAll("body *")) {
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || e.closest("[disabled], option, noscript") || !e.checkVisibility()) continue;
    const a = lum(rgb(getComputedStyle(e).color)), b = lum(behind(e));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const text = e.textContent.trim().slice(0, 30);
    if (ratio < 4.5) low.push(`${e.tagName} "${text}" ${ratio.toFixed(2)}`);
  }
  return low;
}"""

MAIN_PAGES = [
    "keys",
    "keys/seed-fe",
    "keys/seed-ecies",
    "audit",
    "tokens",
    "fe",
    "fe/seed-fe",
    "status",
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.usefixtures("seeded")
def test_every_page_is_labelled_and_legible(browser: Browser, server: Server, scheme: str) -> None:
    with _browsing(browser, server, viewport=DESKTOP, color_scheme=scheme) as tab:
        tab.sign_in()
        for fragment in MAIN_PAGES:
            tab.visit(fragment)
            if fragment == "keys":
                tab.page.get_by_role("button", name="Create a key").click()
                tab.page.get_by_label("Type", exact=True).select_option("qfe-sgp")
            if fragment == "tokens":
                tab.page.get_by_text("Issue a token").click()
            assert tab.page.evaluate(UNLABELLED) == [], fragment
            assert tab.page.evaluate(LOW_CONTRAST) == [], fragment


@pytest.mark.usefixtures("seeded")
def test_every_page_fits_a_phone(browser: Browser, server: Server) -> None:
    with _browsing(browser, server, viewport=PHONE, is_mobile=True, has_touch=True) as tab:
        tab.sign_in()
        for fragment in MAIN_PAGES:
            tab.visit(fragment)
            width = tab.page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
            assert width[0] <= width[1], fragment
            tab.shot(f"phone-{fragment.replace('/', '-')}")


def test_no_token_reached_the_log(server: Server) -> None:
    """Last: every token the tests used, in no line the server wrote."""
    output = server.output()
    assert "/ui/" in output, "the access log was on"
    for token in TOKENS_USED:
        assert token not in output
