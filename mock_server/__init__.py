"""Contract-driven, stateful mock of the platform's control plane and model gateway."""

__version__ = "0.1.0"

from mock_server.app import MockConfig, PlatformMock

__all__ = ["MockConfig", "PlatformMock", "__version__"]
