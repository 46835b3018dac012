"""Contract-driven, stateful mock of the platform's control plane and model gateway."""

from __future__ import annotations

from mock_server.core.version import __version__

# Not `typing`'s: importing it costs the command's every start more than a third of the
# interpreter's own (mypy reads any `TYPE_CHECKING` as true).
TYPE_CHECKING = False

__all__ = ["MockConfig", "PlatformMock", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from mock_server.http.mock import MockConfig, PlatformMock


def __getattr__(name: str) -> Any:
    # Imported on first use, so that `python -m mock_server` can set up warnings first.
    if name in ("MockConfig", "PlatformMock"):
        from mock_server.http import mock as app

        return getattr(app, name)
    raise AttributeError(f"module 'mock_server' has no attribute {name!r}")
