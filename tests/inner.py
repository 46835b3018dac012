"""Inner pytest sessions for the plugin's own tests: a subprocess each, with only the
plugins the session needs."""

from __future__ import annotations

import pytest

INNER_TIMEOUT = 120  # seconds an inner session may take


def run_session(pytester: pytest.Pytester, *args: str, timeout: float = INNER_TIMEOUT):
    """`pytester.runpytest_subprocess` loading this project's plugin (and pytest-xdist under
    `-n`) by name instead of every installed one: autoloading them all (hypothesis,
    schemathesis, Faker, ...) costs about 2.5 s of CPU in each process, more than most inner
    sessions' own tests. Sessions that check what an installed plugin does to a plain run
    use `runpytest_subprocess` itself."""
    plugins = ["-p", "mock_server.pytest_plugin"]
    if "-n" in args:
        plugins += ["-p", "xdist.plugin"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        return pytester.runpytest_subprocess(*plugins, *args, timeout=timeout)
