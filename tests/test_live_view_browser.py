"""The live view in a real browser: Debian's headless Chromium, driven by Playwright.

One browser serves the module; each test opens the page in a context of its own (its own
sessionStorage), gives it the admin token as a person would, and watches the console: a
test fails on any console error or uncaught exception of the page. Chromium comes from
Debian's `chromium` package (`.ci/run` installs it), never from Playwright's downloads.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from mock_server import MockConfig, PlatformMock
from mock_server.cli.watch import FixtureWatcher
from mock_server.core.masking import HIDDEN
from mock_server.http.server import BackgroundServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As this machine's notes say Chromium runs here: headless (Playwright's default), as root
# without a sandbox, and never reaching out to Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEW = "/__admin/ui"
RUNS = "/jobs/app-trainer/runs"
INJECTED = '<img src=x onerror="window.__injected=1"><script>window.__injected=2</script>'


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), (
        "the browser tests need Debian's chromium (apt-get install chromium)"
    )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Watched:
    """A page of the live view, and what its console said."""

    def __init__(self, page: Page):
        self.page = page
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)


def open_view(browser: Browser, url: str, admin_token: str) -> Watched:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    watched = Watched(context.new_page())
    watched.page.goto(url + VIEW)
    watched.page.fill("#token", admin_token)
    watched.page.click("#gate button[type=submit]")
    expect(watched.page.locator("#live")).to_have_text("live", timeout=5000)
    return watched


@pytest.fixture
def view(browser, server, mock) -> Iterator[Watched]:
    watched = open_view(browser, server.url, mock.auth.admin_token())
    yield watched
    watched.page.context.close()
    assert watched.errors == []


def _rows(page: Page):
    return page.locator("#requests tbody tr")


# -- it loads, and it is live -------------------------------------------------------------


def test_the_page_loads_without_console_errors(view):
    expect(view.page.locator("#main")).to_be_visible()
    expect(view.page.locator("#world-line")).to_contain_text("tenant acme")
    assert view.errors == []


def test_a_request_a_client_sends_appears_within_a_second(view, api):
    expect(_rows(view.page)).to_have_count(0)

    sent = time.monotonic()
    assert api.get(RUNS, params={"limit": 3}).status_code == 200
    expect(_rows(view.page).first).to_contain_text("limit=3", timeout=1000)

    assert time.monotonic() - sent < 1.0
    expect(_rows(view.page).first).to_contain_text("listJobRuns")


@pytest.mark.platform_mock(expect_violations=True)
def test_a_violating_request_shows_the_rule_it_broke(view, api):
    api.get(RUNS, params={"status": "FAILD"})
    row = _rows(view.page).first
    expect(row).to_contain_text("broke it", timeout=1000)
    expect(row).to_contain_text("query status[]")

    row.click()

    detail = view.page.locator("#detail")
    expect(detail.locator(".rule .name")).to_have_text("query status[]")
    expect(detail.locator(".rule .hint")).to_have_text("→ did you mean 'FAILED'?")


def test_a_fault_armed_from_the_page_is_delivered(view, api):
    page = view.page
    page.click("button[data-tab=faults]")
    page.select_option("#a-operation", "listJobRuns")
    page.select_option("#a-status", "503")
    page.fill("#a-times", "1")

    page.click("#fault-form button[type=submit]")
    expect(page.locator("#faults tbody tr")).to_have_count(1)
    armed = page.locator("#faults tbody tr td").first.inner_text()

    response = api.get(RUNS)

    assert response.status_code == 503
    assert response.headers["x-platform-mock-fault"] == armed
    expect(page.locator("#faults tbody tr td").nth(6)).to_have_text("1", timeout=2000)


def test_a_fault_removed_from_the_page_is_gone(view, api, mock):
    rule = mock.faults.add("listJobRuns", status=503, times=None)
    page = view.page
    page.click("button[data-tab=faults]")
    row = page.locator(f"#faults tbody tr[data-fault='{rule.id}']")

    row.get_by_role("button", name="Remove").click()

    expect(row).to_have_count(0)
    assert api.get(RUNS).status_code == 200


@pytest.mark.platform_mock(expect_violations=True)
def test_an_injected_script_in_a_request_does_not_run(view, api):
    api.get(RUNS, params={"q": INJECTED})
    api.post("/secrets/deployments", json={"secretIds": [INJECTED]})
    expect(_rows(view.page)).to_have_count(2, timeout=1000)

    for index in (0, 1):
        _rows(view.page).nth(index).click()
        expect(view.page.locator("#detail")).to_contain_text("window.__injected")

    assert view.page.evaluate("window.__injected") is None
    assert view.page.locator("#main img, #main script").count() == 0
    expect(_rows(view.page).nth(1)).to_contain_text('<img src=x onerror="window.__injected=1">')


def test_the_token_never_reaches_a_url_and_stays_for_the_tab(view, mock):
    page = view.page
    token = mock.auth.admin_token()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    page.reload()
    expect(page.locator("#live")).to_have_text("live", timeout=5000)

    assert token not in page.url and not any(token in url for url in requested)
    assert page.evaluate("sessionStorage.getItem('platform-mock.admin-token')") == token


def test_a_new_tab_asks_for_the_token(browser, server, view):
    other = Watched(browser.new_context().new_page())
    other.page.goto(server.url + VIEW)

    expect(other.page.locator("#gate")).to_be_visible()
    expect(other.page.locator("#main")).to_be_hidden()
    other.page.context.close()
    assert other.errors == []


def test_a_wrong_token_is_refused_and_asked_again(browser, server, mock):
    page = browser.new_context().new_page()
    page.goto(server.url + VIEW)
    page.fill("#token", mock.auth.dev_token())  # a platform user's, not the admin's

    page.click("#gate button[type=submit]")

    expect(page.locator("#gate-error")).to_contain_text("admin")
    expect(page.locator("#main")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('platform-mock.admin-token')") is None
    page.context.close()


def test_the_world_is_reset_from_the_page(view, api, store):
    group = store.secrets.group_named("llm-keys").resource.id
    assert api.delete(f"/secret-groups/{group}").status_code == 200
    view.page.once("dialog", lambda dialog: dialog.accept())

    view.page.click("#reset")

    expect(_rows(view.page)).to_have_count(0, timeout=2000)
    assert store.identity.find_resource("secret-group", "llm-keys") is not None


def test_the_report_downloads_from_the_page(view, api):
    api.get(RUNS)
    with view.page.expect_download() as download:
        view.page.click("#download")

    report = json.loads(Path(download.value.path()).read_text())

    assert report["operations"]["listJobRuns"]["calls"] >= 1


def test_coverage_shows_each_operations_figures_as_the_report_has_them(view, api, admin):
    api.get(RUNS, params={"limit": 2})
    view.page.click("button[data-tab=coverage]")
    expect(view.page.locator("#coverage tbody tr")).not_to_have_count(0)
    coverage = admin.get("/report").json()["operations"]["listJobRuns"]["coverage"]

    row = view.page.locator("#coverage tbody tr", has_text="listJobRuns")

    # The page shows a whole percentage without a decimal point (25%, where the report says 25.0).
    expect(row.locator("td").nth(3)).to_have_text(f"{coverage['percent']:g}%")
    for status in coverage["statusesReturned"]:
        expect(row.locator(".tag.ok", has_text=str(status))).to_have_count(1)
    not_sent = ", ".join(coverage["parametersNotSent"])
    if not_sent:
        expect(row).to_contain_text(f"parameters {not_sent}")


def test_the_world_is_browsed_and_searched(view, store):
    page = view.page
    page.click("button[data-tab=world]")
    page.locator("#kinds button", has_text="runs").click()

    page.fill("#w-query", "failed")

    failed = sum(run.status == "FAILED" for run in store.world.job_runs["app-trainer"])
    expect(page.locator("#records-line")).to_have_text(f"1\u2013{failed} of {failed}")
    page.locator("#records li").first.click()
    expect(page.locator("#record")).to_contain_text('"status": "FAILED"')


def test_a_token_in_a_response_is_hidden(view, api):
    token = api.get("/personal-access-tokens/ci").json()["token"]
    _rows(view.page).first.click()

    body = view.page.locator("#detail pre").nth(1)

    expect(body).to_contain_text(HIDDEN)
    assert token not in view.page.content()


def test_the_page_goes_on_after_the_journal_is_cleared(view, api, admin):
    api.get(RUNS)
    expect(_rows(view.page)).to_have_count(1, timeout=1000)

    assert admin.delete("/journal").is_success

    expect(_rows(view.page)).to_have_count(0, timeout=2000)
    api.get("/session")
    expect(_rows(view.page)).to_have_count(1, timeout=1000)


def test_a_fixture_edit_refused_shows_every_problem_and_a_fixed_one_reloads(browser, tmp_path):
    path = tmp_path / "people.yaml"
    path.write_text("users:\n  - email: dana@acme.example\n")
    mock = PlatformMock(MockConfig(fixtures=[path]))
    watcher = FixtureWatcher(mock, lambda line: None, lambda text: None)
    with BackgroundServer(mock) as server:
        watched = open_view(browser, server.url, mock.auth.admin_token())
        banner = watched.page.locator("#reload")
        path.write_text("users:\n  - email: erin@acme.example\n    nick: e\n  - emial: x\n")

        refused = watcher.reload(["people.yaml"])

        expect(banner).to_contain_text("was not loaded; the world is as it was", timeout=1000)
        expect(banner.locator("li")).to_have_count(len(refused["errors"]))
        expect(banner.locator("li").first).to_contain_text("people.yaml:2: users[0]:")
        expect(banner.locator("li").last).to_contain_text("people.yaml:4: users[1]:")
        path.write_text("users:\n  - email: erin@acme.example\n")

        watcher.reload(["people.yaml"])

        expect(banner).to_contain_text("Fixtures reloaded", timeout=1000)
        watched.page.click("button[data-tab=world]")
        expect(watched.page.locator("#kinds button", has_text="users")).to_have_text("users 4")
        watched.page.context.close()
    assert watched.errors == []


def test_a_watcher_that_stopped_says_so_in_a_banner(browser, tmp_path, monkeypatch):
    def fails(self: FixtureWatcher) -> None:
        raise RuntimeError("the events broke")

    monkeypatch.setattr(FixtureWatcher, "_follow", fails)
    path = tmp_path / "people.yaml"
    path.write_text("users:\n  - email: dana@acme.example\n")
    mock = PlatformMock(MockConfig(fixtures=[path]))
    with BackgroundServer(mock) as server:
        watched = open_view(browser, server.url, mock.auth.admin_token())
        banner = watched.page.locator("#reload")

        FixtureWatcher(mock, lambda line: None, lambda text: None).start()

        expect(banner).to_contain_text("The fixture watcher stopped", timeout=5000)
        expect(banner.locator("li")).to_contain_text("RuntimeError: the events broke")
        watched.page.context.close()
    assert watched.errors == []


# -- the API docs a newcomer opens first, in Swagger UI itself ------------------------------

DOCS = {
    "control plane": ("", "bearerAuth"),
    "gateway": ("/gateway", "bearerAuth"),
    "admin API": ("/__admin", "adminAuth"),
}
# An operation whose example names what another's makes first in a mock just started (the
# first fault rule, the first world beside it), tried right after that one.
AFTER = {"adminAddFault": "adminDeleteFault", "adminCreateWorld": "adminDeleteWorld"}
# A stream that never ends: Swagger UI shows nothing until it does (spec/admin.yaml says so).
NOT_TRIED = {"adminEvents"}
# What the page's Content-Security-Policy refused, as the page saw it.
CSP_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def _try_it_out(page: Page, operation_id: str) -> str:
    """Expand an operation, press Try it out and Execute; the status Swagger UI shows."""
    block = page.locator(f"[id^='operations-'][id$='-{operation_id}']")
    block.locator(".opblock-summary").click()
    block.locator("button.try-out__btn").click()
    block.locator("button.execute").click()
    status = block.locator(".live-responses-table tbody .response-col_status").first
    expect(status).to_be_visible(timeout=10000)
    shown = status.inner_text().strip()
    block.locator(".opblock-summary").click()  # folded again: the page stays light
    return shown


@pytest.mark.parametrize("document", DOCS)
def test_every_try_it_out_of_the_docs_answers_2xx_in_the_default_world(browser, document):
    base, scheme = DOCS[document]
    mock = PlatformMock()
    with BackgroundServer(mock) as server:
        # The first request of this mock: the one `GET /requests/{id}`'s example opens.
        httpx.get(server.url + "/api/svc/v1/min-cli-version")
        watched = Watched(browser.new_context(viewport={"width": 1300, "height": 900}).new_page())
        page = watched.page
        page.add_init_script(CSP_VIOLATIONS)
        page.goto(f"{server.url}{base}/docs/")
        assert page.evaluate("window.__violations") == []  # the page, under its policy
        expect(page.locator(".opblock").first).to_be_visible()
        assert page.locator(".servers select option").all_inner_texts() == [
            f"{server.url}{base} - this mock"
        ]
        page.click("button.authorize")
        token = mock.auth.admin_token() if scheme == "adminAuth" else mock.auth.dev_token()
        page.fill(".auth-container input", token)
        page.click(".auth-btn-wrapper button.authorize")
        page.click(".btn-done")
        served = httpx.get(f"{server.url}{base}/openapi.json").json()
        operations = [
            operation["operationId"]
            for item in served["paths"].values()
            for operation in item.values()
            if isinstance(operation, dict) and "operationId" in operation
        ]
        order = [op for op in operations if op not in AFTER.values() and op not in NOT_TRIED]
        order = [*(op for op in order if op == "adminGetRequest"), *order]  # before a reset
        answered: dict[str, str] = {}
        for operation_id in dict.fromkeys(order):
            answered[operation_id] = _try_it_out(page, operation_id)
            if operation_id in AFTER:
                answered[AFTER[operation_id]] = _try_it_out(page, AFTER[operation_id])
            mock.reset()
        violations = page.evaluate("window.__violations")
        page.context.close()
    assert violations == []
    assert {op: status for op, status in answered.items() if not status.startswith("2")} == {}
    assert set(answered) == set(operations) - NOT_TRIED
    assert watched.errors == []
