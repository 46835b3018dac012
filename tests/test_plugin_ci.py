"""The pytest plugin as a CI check: what it costs a session that does not use it, the
contract coverage it measures and enforces (merged across pytest-xdist workers), and the
report formats it writes; in inner pytest sessions run with `pytester`.

As in test_pytest_plugin.py, each inner session runs once per module and several outer
tests check one behaviour each of its outcome.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.inner import INNER_TIMEOUT, run_once, run_session

pytest_plugins = ["pytester"]


# Runs first (files run in name order): the plugin is loaded, nothing has used it yet.
BEFORE_USE = """
import sys

WEB_STACK = ("connexion", "starlette", "flask", "uvicorn", "jsonschema", "httpx", "yaml")


def test_plugin_loaded_imports_no_web_stack(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("platform_mock")
    assert [name for name in WEB_STACK if name in sys.modules] == []
"""

# Then a test that uses the mock, calling one operation with one enum value.
USES_MOCK = """
def test_asks_for_the_runs_of_a_job(platform_mock):
    with platform_mock.client() as api:
        response = api.get("/jobs/{JOB}/runs", params={{"order": "{ORDER}"}})
    assert response.status_code == 404, response.text
"""
JOB = "application-0123456789abcdef"  # not in the default world: its 404 counts too


@dataclass
class Inner:
    result: pytest.RunResult
    path: Path  # the inner session's directory


def uses_mock(order: str) -> str:
    return USES_MOCK.format(JOB=JOB, ORDER=order)


@pytest.fixture
def unused_then_used(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> Inner:
    """A subprocess session (nothing imported beforehand): a test that does not use the
    mock, then one that does, with deprecation warnings shown as pytest shows them."""

    def run() -> Inner:
        pytester.makepyfile(test_a=BEFORE_USE, test_b=uses_mock("asc"))
        result = pytester.runpytest_subprocess("-v", "-W", "default", timeout=INNER_TIMEOUT)
        return Inner(result, pytester.path)

    return run_once(inner_runs, "unused", run)


@pytest.fixture
def below_coverage(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> Inner:
    """A passing session that exercised little of the contract, asked for 90% coverage
    and every report format in a directory."""

    def run() -> Inner:
        pytester.makepyfile(test_runs=uses_mock("asc"))
        result = run_session(
            pytester,
            "--platform-mock-min-coverage", "90", "--platform-mock-report", "reports",
            timeout=INNER_TIMEOUT,
        )  # fmt: skip
        return Inner(result, pytester.path)

    return run_once(inner_runs, "below", run)


@pytest.fixture
def under_xdist(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> Inner:
    """Two workers, each sending one of `order`'s two values."""

    def run() -> Inner:
        pytester.makepyfile(test_asc=uses_mock("asc"), test_desc=uses_mock("desc"))
        result = run_session(
            pytester,
            "-n", "2", "--dist", "loadfile", "--platform-mock-report", "report.json",
            timeout=INNER_TIMEOUT,
        )  # fmt: skip
        return Inner(result, pytester.path)

    return run_once(inner_runs, "xdist", run)


# -- a plugin that costs nothing until used --------------------------------------------------


def test_loading_the_plugin_imports_no_web_stack(unused_then_used: Inner):
    unused_then_used.result.stdout.fnmatch_lines(
        ["*test_a.py::test_plugin_loaded_imports_no_web_stack PASSED*"]
    )


def test_using_the_mock_shows_no_third_party_deprecation_warning(unused_then_used: Inner):
    unused_then_used.result.assert_outcomes(passed=2)
    assert "DeprecationWarning" not in unused_then_used.result.stdout.str()


# -- coverage --------------------------------------------------------------------------------


def test_session_below_min_coverage_fails(below_coverage: Inner):
    below_coverage.result.assert_outcomes(passed=1)
    assert below_coverage.result.ret == pytest.ExitCode.TESTS_FAILED


def test_session_below_min_coverage_says_why_and_what_was_never_exercised(below_coverage: Inner):
    below_coverage.result.stdout.fnmatch_lines(
        [
            "*platform mock contract report*",
            "*never exercised: status 200, 400, 401, 403, 422, 500, 503 never returned;*",
            "*never called: generateRoleBindingManifests*",
            "platform mock: contract check FAILED: contract coverage *% (* of *), below "
            "--platform-mock-min-coverage 90%*",
        ]
    )


def test_min_coverage_that_is_not_a_percentage_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("--platform-mock-min-coverage", "101")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--platform-mock-min-coverage: '101' is not from 0 to 100*"])


def test_report_targets_are_checked_before_the_session(pytester: pytest.Pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess(
        "--platform-mock-report", "r.json", "--platform-mock-report", "json=other.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--platform-mock-report: the json report is named twice*"])


def test_coverage_is_merged_across_xdist_workers(under_xdist: Inner):
    under_xdist.result.assert_outcomes(passed=2)
    report = json.loads((under_xdist.path / "report.json").read_text())
    coverage = report["operations"]["listJobRuns"]["coverage"]
    assert coverage["enumValuesSent"] == {"order": ["asc", "desc"]}


# -- report formats --------------------------------------------------------------------------


def test_report_directory_gets_every_format(below_coverage: Inner):
    reports = below_coverage.path / "reports"
    names = sorted(path.name for path in reports.iterdir())
    assert names == [f"contract-report.{s}" for s in ("json", "md", "txt", "xml")]


def test_junit_report_fails_the_coverage_check_and_skips_operations_never_called(
    below_coverage: Inner,
):
    junit = below_coverage.path / "reports" / "contract-report.xml"
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    assert cases["the contract coverage reaches --min-coverage"].find("failure") is not None
    assert cases["listJobRuns keeps the contract"].find("skipped") is None
    assert cases["deleteSecretGroup keeps the contract"].find("skipped") is not None


# -- options given as `--option VALUE` -------------------------------------------------------


@pytest.fixture(params=["report", "fixtures"])
def space_form(pytester: pytest.Pytester, request: pytest.FixtureRequest) -> pytest.RunResult:
    """A project with an ini file and its tests in tests/, run with an option's value, a path
    outside the project, given as a word of its own."""
    outside = pytester.path.parent / f"outside-{request.param}"
    outside.mkdir(exist_ok=True)
    value = outside
    if request.param == "fixtures":
        value = outside / "extra.yaml"
        value.write_text("users:\n  - email: dana@acme.example\n")
    pytester.makeini("[pytest]\naddopts = -ra\ntestpaths = tests\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    return run_session(pytester, f"--platform-mock-{request.param}", str(value), "--junitxml=j.xml")


def test_space_form_of_an_option_leaves_the_rootdir(space_form: pytest.RunResult, pytester):
    space_form.stdout.fnmatch_lines([f"rootdir: {pytester.path}", "configfile: tox.ini"])


def test_space_form_of_an_option_leaves_the_test_ids(space_form: pytest.RunResult, pytester):
    root = ET.parse(pytester.path / "j.xml").getroot()
    assert [case.get("classname") for case in root.iter("testcase")] == ["tests.test_x"]


def test_pytests_parts_read_to_find_the_rootdir_again_are_there(pytestconfig: pytest.Config):
    from _pytest.config.findpaths import determine_setup

    assert callable(determine_setup)
    for name in ("_rootpath", "_inipath", "_inicfg", "_inicache", "_parser"):
        assert hasattr(pytestconfig, name), name
    for name in ("_validate_args", "_configure_python_path"):
        assert callable(getattr(pytestconfig, name)), name
    assert "rootdir" in pytestconfig._parser.extra_info


# -- in-process clients ----------------------------------------------------------------------

NO_SOCKET = """
def test_clients_reach_the_mock_before_it_listens(platform_mock):
    with platform_mock.client() as api:
        assert api.get("/personal-access-tokens/ci").status_code == 200
    assert not platform_mock.backend.serving


def test_asking_for_the_url_serves_it_over_tcp(platform_mock):
    import httpx

    url = platform_mock.api_url
    assert platform_mock.backend.serving
    headers = {"Authorization": f"Bearer {platform_mock.token}"}
    assert httpx.get(url + "/personal-access-tokens/ci", headers=headers).status_code == 200
"""


def test_the_mock_listens_only_once_a_test_asks_where_it_is(pytester: pytest.Pytester):
    pytester.makepyfile(test_no_socket=NO_SOCKET)
    result = run_session(pytester)
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param("-1", id="negative"),
        pytest.param("1_0", id="underscore"),
        pytest.param(str(2**53), id="past-2-53"),
        pytest.param("x", id="not-a-number"),
    ],
)
def test_a_seed_outside_the_seed_rule_is_a_usage_error(pytester: pytest.Pytester, seed: str):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--platform-mock-seed={seed}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--platform-mock-seed*a seed is a whole number from 0*"])
