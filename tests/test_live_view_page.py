"""The live view's page as the server serves it: its files from the package, each with a
Content-Security-Policy that runs only the page's own script, and nothing in them that
inserts markup from data or reaches another origin. (What it does in a browser:
tests/test_live_view_browser.py.)"""

from __future__ import annotations

import re

import pytest

from mock_server.http import view_page as page
from tests.conftest import assert_error

FILES = [pytest.param(path, id=path.rsplit("/", 1)[-1] or "index") for path in page.FILES]


@pytest.mark.parametrize("path", FILES)
def test_each_file_of_the_page_is_served_with_the_policy(anonymous, path):
    response = anonymous.get(path)

    assert response.status_code == 200
    assert response.headers["content-type"] == page.FILES[path][1]
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "default-src 'none'" in policy
    assert "unsafe" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_page_needs_no_token_and_holds_nothing_secret(anonymous, mock):
    text = anonymous.get(page.PREFIX).text

    assert mock.auth.admin_token() not in text


def test_the_page_has_no_inline_script_or_style(anonymous):
    html = anonymous.get(page.PREFIX).text

    assert re.findall(r"<script[^>]*>", html) == ['<script src="/__admin/ui/view.js" defer>']
    assert "style=" not in html and "<style" not in html
    assert not re.search(r"<[^>]*\son[a-z]+=", html)  # no handler attribute


def test_the_script_never_inserts_markup(anonymous):
    script = anonymous.get(page.PREFIX + "/view.js").text

    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink


def test_the_script_keeps_the_token_out_of_urls(anonymous):
    script = anonymous.get(page.PREFIX + "/view.js").text

    assert "sessionStorage" in script
    assert "EventSource" not in script.split('"use strict";', 1)[1]  # it cannot send a header
    assert not re.search(r"searchParams\.set\([^)]*token", script, re.IGNORECASE)


def test_the_page_loads_nothing_from_another_origin(anonymous):
    for path in page.FILES:
        assert not re.search(
            r"(https?:)?//[a-z]", anonymous.get(path).text.replace("http://www.w3.org/2000/svg", "")
        ), path


def test_a_file_the_page_has_not_is_404(anonymous):
    assert_error(anonymous.get(page.PREFIX + "/app.js"), 404, 40401)


def test_a_post_to_the_page_is_405_allowing_get(anonymous):
    response = anonymous.post(page.PREFIX)

    assert_error(response, 405, 40501)
    assert response.headers["allow"] == "GET, HEAD"


def test_head_of_the_page_has_no_body(anonymous):
    response = anonymous.head(page.PREFIX + "/view.js")

    assert response.status_code == 200 and response.content == b""
