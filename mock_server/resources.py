"""Where the files the mock ships with live: `spec/`, `fixtures/` and the fixture schema.

In a source checkout they sit beside the package; in an installed wheel they are inside it.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def package_file(name: str) -> Path:
    """Path of a shipped file or folder, inside the package first, then in the checkout."""
    for base in (PACKAGE_DIR, PACKAGE_DIR.parent):
        candidate = base / name
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{name} is missing from the installation ({PACKAGE_DIR})")
