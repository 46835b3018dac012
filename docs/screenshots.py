"""The README's pictures of the live view: `python docs/screenshots.py` (after
`pip install -e '.[test]'`, with Debian's chromium) writes docs/live-view-*.png.

A mock of the default world is served, a client sends a few requests (one breaking the
contract, one answered by a fault), and headless Chromium shows each tab of the view."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mock_server import PlatformMock  # noqa: E402
from mock_server.http.server import BackgroundServer  # noqa: E402
from tests.test_live_view_browser import CHROMIUM_ARGS  # noqa: E402

OUT = ROOT / "docs"
SIZE = {"width": 1280, "height": 720}


def traffic(server: BackgroundServer, mock: PlatformMock) -> None:
    """What a client under test might send."""
    headers = {"Authorization": f"Bearer {mock.auth.dev_token()}"}
    api = httpx.Client(base_url=server.url + "/api/svc/v1", headers=headers)
    gateway = httpx.Client(base_url=server.gateway_url, headers=headers)
    mock.journal.begin_test("tests/test_sdk.py::test_lists_failed_runs")
    api.get("/session")
    api.get("/jobs/app-trainer/runs", params={"status": "FAILED", "limit": 5})
    api.get("/jobs/app-trainer/runs", params={"status": "FAILD", "limit": 5})
    mock.journal.begin_test("tests/test_sdk.py::test_token_and_retrieve")
    api.get("/personal-access-tokens/ci")
    gateway.get("/responses/resp_0000000000000000000000000000demo")
    mock.faults.add("deleteSecretGroup", status=424)
    api.delete("/secret-groups/secret-group-llm-keys")
    api.get("/jobs/app-trainer/run")
    mock.journal.end_test()


def main() -> None:
    mock = PlatformMock()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with BackgroundServer(mock) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=SIZE)
        page.goto(server.url + "/__admin/ui")
        page.fill("#token", mock.auth.admin_token())
        page.click("#gate button[type=submit]")
        expect(page.locator("#live")).to_have_text("live")
        traffic(server, mock)
        rows = page.locator("#requests tbody tr")
        expect(rows).to_have_count(7)
        expect(page.locator("#journal-line")).to_contain_text("7 request(s) held")
        page.wait_for_timeout(1500)  # the new rows' highlight fades
        rows.nth(4).click()  # the misspelt status
        expect(page.locator("#detail .rule .hint")).to_be_visible()
        page.screenshot(path=OUT / "live-view-requests.png")
        page.click("button[data-tab=coverage]")
        expect(page.locator("#coverage tbody tr")).not_to_have_count(0)
        page.screenshot(path=OUT / "live-view-coverage.png")
        page.click("button[data-tab=world]")
        page.locator("#kinds button", has_text="runs").click()
        page.fill("#w-query", "failed")
        page.locator("#records li").first.click()
        expect(page.locator("#record")).to_be_visible()
        page.screenshot(path=OUT / "live-view-world.png")
        page.click("button[data-tab=faults]")
        page.select_option("#a-operation", "listJobRuns")
        page.fill("#a-times", "2")
        page.click("#fault-form button[type=submit]")
        expect(page.locator("#faults tbody tr")).to_have_count(2)
        page.screenshot(path=OUT / "live-view-faults.png")
        browser.close()
    for name in sorted(OUT.glob("live-view-*.png")):
        print(f"{name.relative_to(ROOT)}: {name.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
