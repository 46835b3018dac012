"""Inner pytest sessions for the plugin's own tests: a subprocess each, with only the
plugins the session needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

INNER_TIMEOUT = 120  # seconds an inner session may take
Run = TypeVar("Run")


def run_once(runs: dict[str, Any], key: str, run: Callable[[], Run]) -> Run:
    """The inner session of `key` (the `inner_runs` fixture's), run the first time it is
    asked for: a module's tests that read one session share it."""
    if key not in runs:
        runs[key] = run()
    result: Run = runs[key]
    return result


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
