"""The live view in a real browser: Debian's headless Chromium, driven by Playwright.

One browser serves the module; each test opens the page in a context of its own (its own
sessionStorage), gives it the admin token as a person would, and watches the console: a
test fails on any console error or uncaught exception of the page. Chromium comes from
Debian's `chromium` package (`.ci/run` installs it), never from Playwright's downloads.

Every wait is WAIT_MS, a bound on a hang from the tests' one budget (`tests.budget`), never a
bare number: Playwright's own defaults (5 s for `expect`, 30 s for an action) are replaced by
it too. A wait that is met returns at once, so a generous bound costs a passing test nothing;
what the page must do without waiting (a request shown with no reload) is checked by what it
does, not by a stopwatch.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from mock_server import MockConfig, PlatformMock
from mock_server.cli.watch import FixtureWatcher
from mock_server.core.masking import HIDDEN
from mock_server.http.server import BackgroundServer
from tests.budget import budget

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
# What an expectation or an action of the page may wait, at most: 10 s on the reference machine
# (a page that answers takes milliseconds), scaled to this one.
WAIT_MS = budget(10.0) * 1000
expect.set_options(timeout=WAIT_MS)
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


def new_page(browser: Browser, **options: Any) -> Page:
    """A page in a context of its own, whose actions wait WAIT_MS at most."""
    context = browser.new_context(**options)
    context.set_default_timeout(WAIT_MS)
    return context.new_page()


def open_view(browser: Browser, url: str, admin_token: str, path: str = VIEW) -> Watched:
    page = new_page(browser, viewport={"width": 1400, "height": 900}, accept_downloads=True)
    watched = Watched(page)
    watched.page.goto(url + path)
    watched.page.fill("#token", admin_token)
    watched.page.click("#gate button[type=submit]")
    expect(watched.page.locator("#live")).to_have_text("live")
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


def test_a_request_a_client_sends_appears_without_a_reload(view, api):
    expect(_rows(view.page)).to_have_count(0)
    view.page.evaluate("window.__same_page = true")

    assert api.get(RUNS, params={"limit": 3}).status_code == 200

    expect(_rows(view.page).first).to_contain_text("limit=3")
    expect(_rows(view.page).first).to_contain_text("listJobRuns")
    assert view.page.evaluate("window.__same_page") is True


@pytest.mark.platform_mock(expect_violations=True)
def test_a_violating_request_shows_the_rule_it_broke(view, api):
    api.get(RUNS, params={"status": "FAILD"})
    row = _rows(view.page).first
    expect(row).to_contain_text("broke it")
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
    expect(page.locator("#faults tbody tr td").nth(6)).to_have_text("1")


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
    expect(_rows(view.page)).to_have_count(2)

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
    expect(page.locator("#live")).to_have_text("live")

    assert token not in page.url and not any(token in url for url in requested)
    assert page.evaluate("sessionStorage.getItem('platform-mock.admin-token')") == token


def test_a_new_tab_asks_for_the_token(browser, server, view):
    other = Watched(new_page(browser))
    other.page.goto(server.url + VIEW)

    expect(other.page.locator("#gate")).to_be_visible()
    expect(other.page.locator("#main")).to_be_hidden()
    other.page.context.close()
    assert other.errors == []


def test_a_wrong_token_is_refused_and_asked_again(browser, server, mock):
    page = new_page(browser)
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

    expect(_rows(view.page)).to_have_count(0)
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
    coverage = admin.get("/journal/report").json()["operations"]["listJobRuns"]["coverage"]

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

    body = view.page.locator("#detail pre.response-body")

    expect(body).to_contain_text(HIDDEN)
    assert token not in view.page.content()


def test_the_page_goes_on_after_the_journal_is_cleared(view, api, admin):
    api.get(RUNS)
    expect(_rows(view.page)).to_have_count(1)

    assert admin.delete("/journal").is_success

    expect(_rows(view.page)).to_have_count(0)
    api.get("/session")
    expect(_rows(view.page)).to_have_count(1)


# -- acting from the page ---------------------------------------------------------------------


def test_copy_as_curl_puts_the_line_with_the_token_variable_on_the_clipboard(
    view, api, admin, server, token
):
    view.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    api.get(RUNS, params={"limit": 2}, headers={"X-Request-Id": "req-9"})
    _rows(view.page).first.click()
    button = view.page.locator("#detail .copy-curl")

    button.click()

    expect(button).to_have_text("Copied")
    copied = view.page.evaluate("navigator.clipboard.readText()")
    seq = int(_rows(view.page).first.get_attribute("data-seq"))
    assert copied == admin.get(f"/requests/{seq}").json()["curl"]
    assert copied.startswith('curl -sS "$PLATFORM_MOCK_URL"\'/api/svc/v1' + RUNS + "?limit=2'")
    assert '"Authorization: Bearer $PLATFORM_MOCK_TOKEN"' in copied
    assert "'x-request-id: req-9'" in copied
    assert token not in copied


def test_the_journal_is_cleared_from_the_page_and_the_world_kept(view, api, store):
    group = store.secrets.group_named("llm-keys").resource.id
    assert api.delete(f"/secret-groups/{group}").status_code == 200
    api.get(RUNS)
    expect(_rows(view.page)).to_have_count(2)

    view.page.click("#clear-journal")

    expect(_rows(view.page)).to_have_count(0)
    assert store.identity.find_resource("secret-group", "llm-keys") is None
    view.page.click("button[data-tab=coverage]")
    row = view.page.locator("#coverage tbody tr", has_text="listJobRuns")
    expect(row.locator("td").nth(1)).to_have_text("0")
    expect(view.page.locator("#coverage-summary")).to_contain_text(
        "since the journal was last cleared"
    )


def test_a_permalink_opens_its_request_on_load(view, browser, api, server, mock):
    api.get(RUNS, params={"limit": 4})
    api.get("/session")
    _rows(view.page).nth(1).click()
    expect(view.page.locator("#detail h3").first).to_contain_text("limit=4")
    link = view.page.url.removeprefix(server.url)
    assert link.startswith(VIEW + "#request-")

    other = open_view(browser, server.url, mock.auth.admin_token(), path=link)

    expect(other.page.locator("#detail")).to_be_visible()
    expect(other.page.locator("#detail h3").first).to_contain_text("GET /api/svc/v1/jobs/")
    expect(other.page.locator("#detail h3").first).to_contain_text("limit=4")
    other.page.context.close()
    assert other.errors == []


def test_a_request_links_its_operation_in_the_docs(view, api):
    api.get(RUNS)
    _rows(view.page).first.click()
    link = view.page.locator("#detail a.docs")
    expect(link).to_have_attribute("href", "/docs/#/jobs/listJobRuns")

    with view.page.context.expect_page() as opened:
        link.click()

    docs = opened.value
    # Swagger UI opens the operation the link names: its body shown, the others folded.
    expect(docs.locator("#operations-jobs-listJobRuns .opblock-body")).to_be_visible()
    assert docs.locator(".opblock-body").count() == 1


@pytest.mark.platform_mock(expect_violations=True)
def test_the_requests_sort_by_a_column_and_back(view, api, anonymous):
    api.get(RUNS)  # 200
    api.get("/no-such-path")  # 404
    anonymous.get("/api/svc/v1" + RUNS)  # 401
    expect(_rows(view.page)).to_have_count(3)
    status = view.page.locator("#requests th[data-sort=status]")

    status.click()

    expect(_rows(view.page).locator("td.status")).to_have_text(["200", "401", "404"])
    expect(status).to_have_attribute("aria-sort", "ascending")
    status.click()
    expect(_rows(view.page).locator("td.status")).to_have_text(["404", "401", "200"])
    view.page.click("#requests th[data-sort=order]")
    expect(_rows(view.page).locator("td.status")).to_have_text(["401", "404", "200"])


def _to_fixed(number: float) -> str:
    """`number.toFixed(1)` as the page's JavaScript writes it: a tie (3.25, exact in binary)
    goes up, where Python's `:.1f` would give the even digit (3.2)."""
    return str(Decimal(number).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def test_to_fixed_rounds_a_tie_up_as_javascript_does():
    assert (_to_fixed(3.25), _to_fixed(3.35), _to_fixed(1.0)) == ("3.3", "3.4", "1.0")


def test_coverage_shows_each_operations_latency(view, api, admin):
    for limit in (1, 2, 3):
        api.get(RUNS, params={"limit": limit})
    expect(_rows(view.page)).to_have_count(3)
    took = admin.get("/journal/report").json()["latency"]["listJobRuns"]

    view.page.click("button[data-tab=coverage]")

    cell = view.page.locator("#coverage tbody tr", has_text="listJobRuns").locator("td.latency")
    shown = " / ".join(_to_fixed(took[key]) for key in ("p50Ms", "p90Ms", "maxMs"))
    expect(cell).to_have_text(shown)
    expect(cell).to_have_attribute("title", "3 request(s) held")


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

        expect(banner).to_contain_text("was not loaded; the world is as it was")
        expect(banner.locator("li")).to_have_count(len(refused["errors"]))
        expect(banner.locator("li").first).to_contain_text("people.yaml:2: users[0]:")
        expect(banner.locator("li").last).to_contain_text("people.yaml:4: users[1]:")
        path.write_text("users:\n  - email: erin@acme.example\n")

        watcher.reload(["people.yaml"])

        expect(banner).to_contain_text("Fixtures reloaded")
        watched.page.click("button[data-tab=world]")
        expect(watched.page.locator("#kinds button", has_text="users")).to_have_text("users 4")
        # The world's refresh that follows a reload leaves the banner saying so.
        expect(banner).to_contain_text("Fixtures reloaded")
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

        expect(banner).to_contain_text("The fixture watcher stopped")
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
    expect(status).to_be_visible()
    shown = status.inner_text().strip()
    block.locator(".opblock-summary").click()  # folded again: the page stays light
    return shown


# The control plane's operations are tried in parts, each in a page of its own: one page
# for all of them was the suite's slowest test by far (a minute on a slow machine), which
# pytest-xdist could not share between its workers.
PARTS = {"control plane": 3, "gateway": 1, "admin API": 1}
TRIED = [
    pytest.param(document, part, id=document if PARTS[document] == 1 else f"{document} {part}")
    for document in DOCS
    for part in range(PARTS[document])
]


@pytest.mark.parametrize(("document", "part"), TRIED)
def test_every_try_it_out_of_the_docs_answers_2xx_in_the_default_world(browser, document, part):
    base, scheme = DOCS[document]
    mock = PlatformMock()
    with BackgroundServer(mock) as server:
        # The first request of this mock: the one `GET /requests/{id}`'s example opens.
        httpx.get(server.url + "/api/svc/v1/min-cli-version")
        watched = Watched(new_page(browser, viewport={"width": 1300, "height": 900}))
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
        order = list(dict.fromkeys(order))
        # Every operation is some part's (an operation and the one tried after it, the same).
        assert {*order, *(AFTER[op] for op in order if op in AFTER)} == set(operations) - NOT_TRIED
        mine = order[part :: PARTS[document]]
        answered: dict[str, str] = {}
        for operation_id in mine:
            answered[operation_id] = _try_it_out(page, operation_id)
            if operation_id in AFTER:
                answered[AFTER[operation_id]] = _try_it_out(page, AFTER[operation_id])
            mock.reset()
        violations = page.evaluate("window.__violations")
        page.context.close()
    assert violations == []
    assert {op: status for op, status in answered.items() if not status.startswith("2")} == {}
    assert set(answered) == {*mine, *(AFTER[op] for op in mine if op in AFTER)}
    assert watched.errors == []
