"""Where the files the mock ships with live: the contract (`spec/`) and the default world
(`fixtures/`).

In a source checkout they sit beside the package; in an installed wheel they are inside it, in
`mock_server/shipped/` (apart from the package's own folders, such as `mock_server/fixtures/`).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def package_file(name: str) -> Path:
    """Path of a shipped file or folder, inside the package first, then in the checkout."""
    for base in (PACKAGE_DIR / "shipped", PACKAGE_DIR.parent):
        candidate = base / name
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{name} is missing from the installation ({PACKAGE_DIR})")
