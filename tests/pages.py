"""Where the project's text is: the README and the docs site's pages (`docs/*.md`, built by
`mkdocs.yml`), which the tests read their examples, recipes and tables from.

A test names a page only for a table or section that page owns; an example or recipe is
found by its marker on whichever page holds it, so a section moved between pages keeps
its tests."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def every_page() -> list[Path]:
    """The README, then the docs site's pages, in the order of their names."""
    return [README, *sorted(DOCS.glob("*.md"))]


def name(path: Path) -> str:
    """A page as the tests' ids name it: `README`, `docs/fixtures.md`."""
    return str(path.relative_to(ROOT))


def section(path: Path, title: str) -> str:
    """The text of a page's section `## title`, up to the next section of that level."""
    text = path.read_text()
    assert f"## {title}" in text, f"{name(path)} has no section {title!r}"
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def holding(marker: str) -> tuple[Path, str]:
    """The one page whose text holds `marker`, and its text."""
    found = [(path, path.read_text()) for path in every_page()]
    held = [(path, text) for path, text in found if marker in text]
    assert len(held) == 1, f"{marker!r} is on {[name(p) for p, _ in held]}, not on one page"
    return held[0]
