"""What a client sends never acts on a terminal or on CI: a corpus of hostile texts, sent
through every door of a request (path, query key and value, headers, body key and value,
Content-Type and its charset), read back from every output of a CI run (the request log as
text and as JSON lines, the text summary, pytest's failure reports, the JUnit XML files, the
Markdown job summary, GitHub's `::error` annotations and the JSON report).

Two `platform-mock run` processes around one pytest suite that sends the corpus, once with
each log format, as GitHub Actions runs them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mock_server.core.escape import ESCAPED

MARK = "ZQJ"  # in every hostile text, to find where each one went
CORPUS = {
    "add-mask": "\n::add-mask::ZQJ-secret",
    "stop-commands": "\r\n::stop-commands::ZQJ",
    "fake-error": "\n  ::error title=x::ZQJ",
    "legacy-command": "##[error]ZQJ",
    "osc-title": "\x1b]0;ZQJ\x07",
    "csi-colour": "\x1b[31mZQJ\x1b[0m",
    "c1-csi": "\x9b31mZQJ",
    "nul": "\x00ZQJ",
    "del": "ZQJ\x7f",
    "bidi-override": "\u202eZQJ\u202c",
    "bidi-isolate": "\u2066ZQJ\u2069",
    "line-separator": "ZQJ\u2028::warning::x",
    "markdown": "@everyone [ZQJ](https://evil.example) <img src=x onerror=alert(1)> `|` **b**",
}
SUITE = """
import os

import httpx
import pytest

CORPUS = {corpus!r}
API = os.environ["PLATFORM_MOCK_API_URL"]
AUTH = {{"Authorization": "Bearer " + os.environ["PLATFORM_MOCK_TOKEN"]}}
client = httpx.Client(base_url=API, headers=AUTH)
PARAMS = [pytest.param(text, id=name) for name, text in CORPUS.items()]


@pytest.mark.parametrize("text", PARAMS)
def test_path(text):
    client.get("/personal-access-tokens/" + text.replace("/", "%2F"))


@pytest.mark.parametrize("text", PARAMS)
def test_query_key_and_value(text):
    client.get("/personal-access-tokens/ci", params={{text: text}})


@pytest.mark.parametrize("text", PARAMS)
def test_body_key_and_value(text):
    client.post("/artifact-versions/stage", json={{text: text}})


def header(text):
    # As bytes, which httpx sends as they are: all but the line breaks HTTP cannot carry.
    return text.encode("utf-8").replace(b"\\n", b" ").replace(b"\\r", b" ")


@pytest.mark.parametrize("text", PARAMS)
def test_headers(text):
    client.get("/personal-access-tokens/ci", headers={{"Prefer": b"code=" + header(text)}})


@pytest.mark.parametrize("text", PARAMS)
def test_content_type(text):
    clean = header(text)
    client.post(
        "/artifact-versions/stage", content=b"{{}}",
        headers={{"Content-Type": b"application/json; charset=" + clean}},
    )
    client.post(
        "/artifact-versions/stage", content=b"{{}}",
        headers={{"Content-Type": b"application/json", "Content-Encoding": clean}},
    )
"""


@dataclass
class Outputs:
    """Everything a CI run printed or wrote, by where it went."""

    files: dict[str, str]  # by name: what a reader would open or CI would render

    def lines(self) -> list[tuple[str, str]]:
        return [(name, line) for name, text in self.files.items() for line in text.split("\n")]


def ci_run(path: Path, log_format: str) -> Outputs:
    path.mkdir()
    (path / "test_hostile.py").write_text(SUITE.format(corpus=CORPUS))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PLATFORM_MOCK"))}
    env |= {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(path / "summary.md")}
    done = subprocess.run(
        [
            sys.executable, "-m", "mock_server", "run", "--fail-on-violation", "--report",
            "contract", "--log-format", log_format, "--log-file", "-", "--",
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml=junit.xml",
        ],
        cwd=path, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    files = {"stdout": done.stdout, "stderr": done.stderr, "summary.md": ""}
    files["summary.md"] = (path / "summary.md").read_text()
    files["junit.xml"] = (path / "junit.xml").read_text()
    for report in (path / "contract").iterdir():
        files[report.name] = report.read_text()
    return Outputs(files)


@pytest.fixture(scope="module")
def text_log(tmp_path_factory) -> Outputs:
    return ci_run(tmp_path_factory.mktemp("hostile") / "text", "text")


@pytest.fixture(scope="module")
def json_log(tmp_path_factory) -> Outputs:
    return ci_run(tmp_path_factory.mktemp("hostile") / "json", "json")


OUTPUTS = ["text_log", "json_log"]


@pytest.fixture(params=OUTPUTS)
def outputs(request) -> Outputs:
    return request.getfixturevalue(request.param)


def test_every_hostile_text_reached_the_outputs(outputs: Outputs):
    # Otherwise the checks below would pass for want of anything to check.
    assert all(MARK in outputs.files[name] for name in ("stderr", "summary.md", "stdout"))
    assert outputs.files["contract-report.json"].count(MARK) > len(CORPUS)


def test_no_output_holds_a_control_bidi_or_separator_character(outputs: Outputs):
    found = [
        (name, line[:120])
        for name, line in outputs.lines()
        if any(char in ESCAPED for char in line.replace("\t", ""))
    ]
    assert found == []


def test_no_line_is_a_workflow_command_the_mock_did_not_mean(outputs: Outputs):
    meant = re.compile(r"::error title=(Platform API contract|Contract violation)")
    found = [
        (name, line[:120])
        for name, line in outputs.lines()
        if line.lstrip().startswith("::") and not meant.match(line)
    ]
    assert found == []


def test_no_output_holds_githubs_legacy_command_form(outputs: Outputs):
    assert [(name, line[:120]) for name, line in outputs.lines() if "##[" in line] == []


def test_markdown_holds_what_a_client_sent_only_in_code_spans(outputs: Outputs):
    summary = outputs.files["summary.md"]
    outside = re.sub(r"(`+)(.+?)\1", "", summary)
    assert MARK in summary and MARK not in outside


def test_annotations_are_one_line_each(outputs: Outputs):
    annotations = [line for line in outputs.files["stdout"].split("\n") if line.startswith("::")]
    assert 0 < len(annotations) <= 10


def test_json_outputs_read_back_as_what_was_sent(json_log: Outputs):
    report = json.loads(json_log.files["contract-report.json"])
    sent = json.dumps(report, ensure_ascii=False)
    assert CORPUS["bidi-override"] in sent and CORPUS["c1-csi"] in sent


def test_json_log_lines_each_parse(json_log: Outputs):
    logged = [line for line in json_log.files["stderr"].split("\n") if line.startswith('{"time"')]
    assert len(logged) > len(CORPUS)
    assert all(json.loads(line)["status"] >= 400 for line in logged)


@pytest.mark.parametrize("name", ["junit.xml", "contract-report.xml"])
def test_junit_files_validate(text_log: Outputs, junit_schema, name: str):
    junit_schema.validate(text_log.files[name])
