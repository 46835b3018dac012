"""The docs site (`mkdocs.yml`, `docs/*.md`) builds with `mkdocs build --strict`, reaching
nothing outside the machine, and what it writes loads nothing from elsewhere: every link
and anchor between the pages resolves, and every page is in the navigation."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.pages import DOCS, ROOT

# A proxy at a port nothing listens on: a build that fetched anything would fail on it.
NO_INTERNET = {name: "http://127.0.0.1:9" for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
# What loads a resource when a page is opened: a script, a picture, a style sheet, a font.
LOADED = re.compile(r'<(?:script|img|source|iframe)[^>]*\ssrc="([^"]+)"|<link[^>]*\shref="([^"]+)"')


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env |= NO_INTERNET | {"NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = tmp_path_factory.mktemp("site")
    done = build(ROOT / "mkdocs.yml", built)
    assert done.returncode == 0, done.stderr[-5000:]
    return built


def test_the_site_builds_strictly_offline(site):
    assert (site / "index.html").is_file() and (site / "curl" / "index.html").is_file()


def test_every_page_of_docs_is_built(site):
    built = [site / ("" if p.stem == "index" else p.stem) / "index.html" for p in DOCS.glob("*.md")]
    assert [p for p in built if not p.is_file()] == []


def test_the_pages_load_nothing_from_elsewhere(site):
    loaded = [
        (page.relative_to(site), url)
        for page in site.rglob("*.html")
        for found in LOADED.finditer(page.read_text())
        for url in found.groups()
        if url and (url.startswith(("http:", "https:", "//")))
    ]
    assert loaded == []


def test_the_theme_asks_for_no_web_font():
    theme = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["theme"]
    assert theme["font"] is False


@pytest.mark.parametrize(
    ("page", "added", "named"),
    [
        pytest.param("index.md", "[gone](no-such-page.md)", "no-such-page.md", id="page"),
        pytest.param("index.md", "[gone](curl.md#no-such-anchor)", "no-such-anchor", id="anchor"),
        pytest.param("orphan.md", "# Not in the navigation", "orphan.md", id="left-out-of-nav"),
    ],
)
def test_a_broken_link_or_a_page_left_out_fails_the_build(tmp_path, page, added, named):
    """The strict build's checks bite: a copy of the site with one fault fails, naming it."""
    copy = tmp_path / "copy"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    with (copy / "docs" / page).open("a") as text:
        text.write(f"\n{added}\n")
    done = build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert named in done.stderr


def _nav_pages(nav: list) -> set[str]:
    found: set[str] = set()
    for entry in nav:
        for value in entry.values():
            found |= _nav_pages(value) if isinstance(value, list) else {value}
    return found


@pytest.mark.parametrize(
    ("page", "prefix", "unlisted"),
    [
        pytest.param(ROOT / "README.md", "docs/", {"index.md", "site.md"}, id="README"),
        pytest.param(DOCS / "index.md", "", {"index.md"}, id="home-page"),
    ],
)
def test_the_table_of_pages_names_every_page_of_the_navigation(page, prefix, unlisted):
    """The README's table of the docs, and the home page's, name the pages the site's
    navigation lists (the README leaves out the home page and the page on the site)."""
    listed = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    row = re.compile(rf"^\| \[[^]]+\]\({prefix}([\w-]+\.md)[#)]", re.MULTILINE)
    assert set(row.findall(page.read_text())) == listed - unlisted
