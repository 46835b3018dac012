"""The examples of the README and of the docs pages (`docs/*.md`) run as tests, as a reader
runs them: in an environment made by the quickstart's install line and the examples' install
line, verbatim (with `.venv` in a temporary directory), each block marked
`<!-- example: python -->` (a script against the session's server, with `TOKEN` and
`ADMIN_TOKEN`), `<!-- example: pytest -->` (a test file in a fresh pytest session, through
the plugin) or `<!-- example: run -->` (a `platform-mock run` line, in a folder of its own).
An example that needs a package those lines do not install fails."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mock_server.fixtures import loader as fixtures
from tests import environments, pages
from tests.budget import budget
from tests.conftest import new_store

pytest_plugins = ["pytester"]

README = pages.README
EXAMPLE = re.compile(r"<!-- example: (python|pytest) -->\n```python\n(.*?)```", re.DOTALL)
DOCUMENTED_URL = "http://127.0.0.1:8080"


def examples(kind: str) -> list:
    """The examples of a kind on every page, each with an id of its page's name and line
    (`fixtures-line-12`): a file name of the inner pytest session too."""
    found = []
    for path in pages.every_page():
        text = path.read_text()
        found += [
            pytest.param(
                match.group(2), id=f"{path.stem}-line-{text.count(chr(10), 0, match.start()) + 2}"
            )
            for match in EXAMPLE.finditer(text)
            if match.group(1) == kind
        ]
    assert found, f"no page has a {kind} example"
    return found


def install_lines() -> list[str]:
    """The README's lines that make the examples' environment: the quickstart's install
    (its start command left out), then the examples' own install line."""
    (start,) = [c for c in quickstart_commands() if c.endswith("platform-mock serve")]
    _, text = pages.holding("<!-- install: examples -->")
    (examples_line,) = re.findall(r"<!-- install: examples -->\n```sh\n(.*?)\n```", text, re.DOTALL)
    return [start.removesuffix(" && .venv/bin/platform-mock serve"), examples_line]


@pytest.fixture(scope="module")
def reader_python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of an environment made by the README's own lines, run from the clone as
    the README says, with `.venv` moved to pytest's cache (slow the first time: a venv and two
    pip installs, about a minute; kept by `tests/environments` while the lines, the
    project's metadata and the checkout's place are the same: the installs are editable, so
    the code itself is read from the checkout)."""
    lines = install_lines()
    pyproject = (README.parent / "pyproject.toml").read_text()

    def build(folder: Path) -> None:
        venv = folder / "venv"
        for line in lines:
            assert ".venv/" in line or ".venv " in line, line  # the path this test moves
            done = subprocess.run(
                line.replace(".venv", str(venv)),
                shell=True,
                cwd=README.parent,
                capture_output=True,
                text=True,
                timeout=budget(600),
            )
            assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"

    inputs = {"lines": lines, "pyproject": pyproject, "checkout": str(README.parent)}
    folder = environments.kept(request.config, tmp_path_factory, "readme-reader", inputs, build)
    return folder / "venv" / "bin" / "python"


@pytest.mark.parametrize("code", examples("python"))
def test_python_example_runs(code, reader_python, server, mock, tmp_path):
    script = tmp_path / "example.py"
    tokens = f"TOKEN = {mock.auth.dev_token()!r}\nADMIN_TOKEN = {mock.auth.admin_token()!r}\n"
    script.write_text(tokens + code.replace(DOCUMENTED_URL, server.url))
    done = subprocess.run(
        [str(reader_python), str(script)], capture_output=True, text=True, timeout=budget(120)
    )
    assert done.returncode == 0, done.stderr[-3000:]


PYTEST_EXAMPLES = examples("pytest")
# One inner pytest session runs every pytest example, each as a test file of its own (a
# session costs seconds to start: one per example made the suite's slowest tests); each
# outer test reads its own file's outcome. Kept here by the first test that needs it.
_INNER: dict[str, pytest.RunResult] = {}


def _file_of(example_id: str) -> str:
    return "test_" + example_id.replace("-", "_").lower()


@pytest.mark.parametrize("code", PYTEST_EXAMPLES)
def test_pytest_example_passes(code, reader_python, pytester, request):
    name = _file_of(request.node.callspec.id)
    if "result" not in _INNER:
        pytester.makepyfile(**{_file_of(p.id): p.values[0] for p in PYTEST_EXAMPLES})
        _INNER["result"] = pytester.run(
            reader_python, "-m", "pytest", "-p", "no:cacheprovider", "-rA", timeout=budget(300)
        )
    result = _INNER["result"]
    outcomes = re.findall(rf"^(PASSED|FAILED|ERROR) {name}\.py::(\S+)", result.stdout.str(), re.M)
    assert outcomes, result.stdout.str()[-3000:]
    assert {outcome for outcome, _ in outcomes} == {"PASSED"}, result.stdout.str()[-3000:]


RUN_EXAMPLE = re.compile(r"<!-- example: run -->\n```sh\n(.*?)\n```", re.DOTALL)


def run_examples() -> list:
    """The `platform-mock run` examples of every page: one command line each."""
    found = [
        pytest.param(line, id=f"{path.stem}-run-{n}")
        for path in pages.every_page()
        for n, line in enumerate(RUN_EXAMPLE.findall(path.read_text()), start=1)
    ]
    assert found, "no page has a run example"
    return found


@pytest.mark.parametrize("line", run_examples())
def test_run_example_passes_its_contract_check(line, reader_python, tmp_path):
    """As a reader runs it (its reports written in a folder of its own), with its own server
    on a free port."""
    assert "\n" not in line and line.startswith(".venv/bin/platform-mock run ")
    venv = reader_python.parent.parent
    done = subprocess.run(
        line.replace(".venv", str(venv)),
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = done.stderr.splitlines()[-1]
    assert verdict.startswith("platform-mock: contract check PASSED: the command passed"), verdict


def quickstart_commands() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", pages.section(README, "Quickstart"), re.DOTALL)


def test_quickstart_is_two_commands():
    commands = quickstart_commands()
    assert len(commands) == 2 and all("\n" not in command for command in commands)


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    assert quickstart_commands()[1] in ci


def test_fixture_example_loads_on_the_default_world():
    section = pages.section(pages.DOCS / "fixtures.md", "Fixtures")
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    store = new_store(0, [*fixtures.default_fixtures(), fixtures.parse(example, "fixtures.md")])
    nightly = store.deployments.application_named("nightly")
    assert len(store.world.job_runs[nightly.id]) == 501
