"""The README's examples run as tests: each block marked `<!-- example: python -->` (run
against the session's server, with `TOKEN` and `ADMIN_TOKEN`) or `<!-- example: pytest -->`
(run as a test file in a fresh pytest session, through the plugin)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mock_server import fixtures
from mock_server.state import Store

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE = re.compile(r"<!-- example: (python|pytest) -->\n```python\n(.*?)```", re.DOTALL)
DOCUMENTED_URL = "http://127.0.0.1:8080"


def examples(kind: str) -> list:
    text = README.read_text()
    found = [
        pytest.param(match.group(2), id=f"README-line-{text.count(chr(10), 0, match.start()) + 2}")
        for match in EXAMPLE.finditer(text)
        if match.group(1) == kind
    ]
    assert found, f"the README has no {kind} example"
    return found


@pytest.mark.parametrize("code", examples("python"))
def test_python_example_runs(code, server, mock):
    namespace = {"TOKEN": mock.auth.dev_token(), "ADMIN_TOKEN": mock.auth.admin_token()}
    exec(compile(code.replace(DOCUMENTED_URL, server.url), str(README), "exec"), namespace)


PYTEST_EXAMPLES = examples("pytest")
# One inner pytest session runs every pytest example, each as a test file of its own (a
# session costs seconds to start: one per example made the suite's slowest tests); each
# outer test reads its own file's outcome. Kept here by the first test that needs it.
_INNER: dict[str, pytest.RunResult] = {}


def _file_of(example_id: str) -> str:
    return "test_" + example_id.replace("-", "_").lower()


@pytest.mark.parametrize("code", PYTEST_EXAMPLES)
def test_pytest_example_passes(code, pytester, request):
    name = _file_of(request.node.callspec.id)
    if "result" not in _INNER:
        pytester.makepyfile(**{_file_of(p.id): p.values[0] for p in PYTEST_EXAMPLES})
        _INNER["result"] = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result = _INNER["result"]
    outcomes = re.findall(rf"^(PASSED|FAILED|ERROR) {name}\.py::(\S+)", result.stdout.str(), re.M)
    assert outcomes, result.stdout.str()[-3000:]
    assert {outcome for outcome, _ in outcomes} == {"PASSED"}, result.stdout.str()[-3000:]


def quickstart_commands() -> list[str]:
    section = README.read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.DOTALL)


def test_quickstart_is_two_commands():
    commands = quickstart_commands()
    assert len(commands) == 2 and all("\n" not in command for command in commands)


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    assert quickstart_commands()[1] in ci


def test_fixture_example_loads_on_the_default_world():
    section = README.read_text().split("## Fixtures", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    store = Store(0, [*fixtures.default_fixtures(), fixtures.parse(example, "README.md")])
    nightly = store.deployments.application_named("nightly")
    assert len(store.world.job_runs[nightly.id]) == 501
