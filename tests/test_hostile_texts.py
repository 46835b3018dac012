"""One table of hostile texts (tests/corpus.py) through every door, every output read back, for
the one escaping rule and the one masking rule: no output holds a character the escaping
rule escapes, a workflow command of GitHub or Azure Pipelines the mock did not mean, or a
credential.

Doors: a request's path, query key and value, headers, body key and value and Content-Type,
and the caller's own credential; fixture fields; the answers of a proxied target; the names
of fixture files. Three sessions, each as CI runs it (GitHub Actions' variables set):

- `platform-mock run` around a pytest suite that sends the table through every door of a
  request, on a world with a fixture of hostile fields, once with each log format. Its
  outputs: standard output and error (the request log, pytest's reports, the annotations),
  the contract report in every format, the job summary, and what the suite read of the
  admin API: the journal, the live view's requests, each request opened, the world, its
  records, and the event stream. The reports' `curl` lines, which send a request again,
  are among what is read back.
- `platform-mock serve --watch` on fixture files named by the table's texts, edited into
  files that do not load and back: its output, the event stream, the world and its records.
- `platform-mock proxy --record` in front of a target whose answers hold the table's texts
  and echo the caller's own credential: its output, the drift report in every format, the
  job summary and annotations, and the recording.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import yaml

from mock_server.core import escape
from mock_server.http.mock import PlatformMock
from mock_server.http.server import BackgroundServer
from tests.budget import budget
from tests.conftest import CONTROL_PLANE
from tests.corpus import (
    CORPUS,
    CREDENTIAL_FIELDS,
    ESCAPING,
    MARK,
    OWN_CREDENTIAL,
    OWN_CREDENTIAL_SHAPES,
    field_secret,
    unescaped,
    unmasked,
)

FIELD_SECRETS = {field: field_secret(field) for field in CREDENTIAL_FIELDS}
# The workflow commands the mock means: its own annotations.
MEANT = re.compile(r"::error title=(Platform API contract|Contract violation|Platform API drift)")
DEADLINE = 120.0  # seconds a session may take to show what a test waits for


@dataclass
class Outputs:
    """Everything a session printed or wrote, by where it went."""

    files: dict[str, str]  # by name: what a reader would open or CI would render

    def __getitem__(self, name: str) -> str:
        return self.files[name]


# -- the fixture of hostile fields -----------------------------------------------------------------


def hostile_fixture() -> dict[str, Any]:
    """A fixture document whose free fields hold the table's texts, and whose
    credential-named fields hold credentials."""
    texts = list(CORPUS.values())
    manifest = {
        "image": {"type": "image", "image_uri": "registry.acme.example/hostile:1"},
        "trigger": {"type": "manual"},
        "env": FIELD_SECRETS,
    }
    return {
        "users": [
            {"email": f"hostile-{index}@acme.example", "displayName": text}
            for index, text in enumerate(texts)
        ],
        "applications": [
            {
                "name": "hostile-job",
                "type": "job",
                "workspace": "ml-team",
                "deployments": [{"manifest": manifest}],
                "runs": [
                    {
                        "name": text,
                        "status": "FAILED",
                        "createdAt": "2026-01-01T00:00:00Z",
                        "durationSeconds": 1,
                        "command": text,
                        "error": text,
                    }
                    for text in texts
                ],
            }
        ],
        "artifactVersions": [
            {
                "manifest": {
                    "type": "artifact-version",
                    "name": "hostile-fixture",
                    "ml_repo": "demo-repo",
                    "source": {"type": "platform", "uri": "s3://bucket/hostile/"},
                    "metadata": {**FIELD_SECRETS, **{text: text for text in texts}},
                }
            }
        ],
        "modelResponses": [
            {
                "id": f"resp_hostile{index}",
                "text": text,
                "metadata": {"note": text, **FIELD_SECRETS},
            }
            for index, text in enumerate(texts)
        ],
    }


# -- `platform-mock run` around a client suite --------------------------------------------------

SUITE = """
import json
import os
import pathlib
import threading
import time

import httpx
import pytest

CORPUS = {corpus!r}
OWN = {own!r}
FIELDS = {fields!r}
API = os.environ["PLATFORM_MOCK_API_URL"]
ADMIN = os.environ["PLATFORM_MOCK_ADMIN_URL"]
ADMIN_AUTH = {{"Authorization": "Bearer " + os.environ["PLATFORM_MOCK_ADMIN_TOKEN"]}}
TOKEN = os.environ["PLATFORM_MOCK_TOKEN"]
client = httpx.Client(base_url=API, headers={{"Authorization": "Bearer " + TOKEN}})
own = httpx.Client(base_url=API, headers={{"Authorization": "Bearer " + OWN}})
admin = httpx.Client(base_url=ADMIN, headers=ADMIN_AUTH, timeout=60)
PARAMS = [pytest.param(text, id=name) for name, text in CORPUS.items()]
DEADLINE = {deadline!r}


def send(sender, *args, **kwargs):
    # A text httpx refuses to send (a line feed in a path) does not reach this door; the
    # test does not fail for it, so that pytest prints none of the client's own arguments.
    try:
        return sender(*args, **kwargs)
    except (httpx.InvalidURL, httpx.LocalProtocolError):
        return None

EVENTS = []


def _read_events():
    with httpx.Client(timeout=httpx.Timeout(DEADLINE, read=None)) as reader:
        with reader.stream("GET", ADMIN + "/events", headers=ADMIN_AUTH) as stream:
            for chunk in stream.iter_text():
                EVENTS.append(chunk)


def _until(found):
    end = time.monotonic() + DEADLINE
    while not found() and time.monotonic() < end:
        time.sleep(0.05)
    assert found(), "".join(EVENTS)[-2000:]


threading.Thread(target=_read_events, daemon=True).start()
_until(lambda: "event: hello" in "".join(EVENTS))


@pytest.mark.parametrize("text", PARAMS)
def test_path(text):
    send(client.get, "/personal-access-tokens/" + text.replace("/", "%2F"))


@pytest.mark.parametrize("text", PARAMS)
def test_query_key_and_value(text):
    send(client.get, "/personal-access-tokens/ci", params={{text: text}})


@pytest.mark.parametrize("text", PARAMS)
def test_body_key_and_value(text):
    send(client.post, "/artifact-versions/stage", json={{text: text}})


def header(text):
    # As bytes, which httpx sends as they are: all but the line breaks HTTP cannot carry.
    return text.encode("utf-8").replace(b"\\n", b" ").replace(b"\\r", b" ")


@pytest.mark.parametrize("text", PARAMS)
def test_headers(text):
    send(
        client.get,
        "/personal-access-tokens/ci",
        headers={{"Prefer": b"code=" + header(text), "User-Agent": header(text)}},
    )


@pytest.mark.parametrize("text", PARAMS)
def test_content_type(text):
    clean = header(text)
    send(
        client.post, "/artifact-versions/stage", content=b"{{}}",
        headers={{"Content-Type": b"application/json; charset=" + clean}},
    )
    send(
        client.post, "/artifact-versions/stage", content=b"{{}}",
        headers={{"Content-Type": b"application/json", "Content-Encoding": clean}},
    )


def test_credential_fields():
    staged = client.post("/artifact-versions/stage", json={{"manifest": {{
        "type": "artifact-version", "name": "hostile-request", "ml_repo": "demo-repo",
        "source": {{"type": "platform", "uri": "s3://bucket/hostile/"}},
        "metadata": {{
            **FIELDS, "env": [{{"name": "DB_PASSWORD", "value": FIELDS["DB_PASSWORD"]}}],
        }},
    }}}})
    assert staged.status_code == 200, staged.text
    client.get("/personal-access-tokens/ci", params=FIELDS)
    client.post("/secrets/deployments", json=FIELDS)


def test_own_credential():
    own.get("/personal-access-tokens/" + OWN, params={{"note": OWN}})
    own.post("/artifact-versions/stage", json={{"note": OWN}}, headers={{"Prefer": "code=" + OWN}})


@pytest.mark.parametrize(("headers", "path", "body"), [
    pytest.param(*shape, id=name) for name, shape in {shapes!r}.items()
])
def test_own_credential_in_other_shapes(headers, path, body):
    with httpx.Client(base_url=API, headers=headers) as shaped:
        if body is None:
            shaped.get(path)
        else:
            shaped.post(path, content=body, headers={{"Content-Type": "application/json"}})


def _json(path, **params):
    answer = admin.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_zz_read_the_admin_api():
    out = pathlib.Path("admin")
    out.mkdir()
    client.get("/personal-access-tokens/zz-last")
    _until(lambda: "zz-last" in "".join(EVENTS))
    (out / "events.txt").write_text("".join(EVENTS))
    (out / "journal.json").write_text(_json("/journal"))
    pages, before = [], None
    while True:
        page = _json("/requests", limit=100, **({{"before": before}} if before else {{}}))
        pages.append(page)
        before = json.loads(page)["next"]
        if before is None:
            break
    (out / "requests.json").write_text("\\n".join(pages))
    seqs = [row["seq"] for page in pages for row in json.loads(page)["data"]]
    (out / "opened.json").write_text("\\n".join(_json(f"/requests/{{seq}}") for seq in seqs))
    world = _json("/world")
    (out / "world.json").write_text(world)
    kinds = json.loads(world)["counts"]
    (out / "records.json").write_text(
        "\\n".join(_json("/records", kind=kind, limit=200) for kind in kinds)
    )
"""


def ci_run(path: Path, log_format: str) -> Outputs:
    path.mkdir()
    (path / "test_hostile.py").write_text(
        SUITE.format(
            corpus=CORPUS,
            own=OWN_CREDENTIAL,
            shapes=OWN_CREDENTIAL_SHAPES,
            fields=FIELD_SECRETS,
            deadline=DEADLINE,
        )
    )
    (path / "hostile.yaml").write_text(yaml.safe_dump(hostile_fixture()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PLATFORM_MOCK"))}
    env |= {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(path / "summary.md")}
    done = subprocess.run(
        [
            sys.executable, "-m", "mock_server", "run", "--fail-on-violation", "--report",
            "contract", "--log-format", log_format, "--log-file", "requests.log", "--fixtures",
            "hostile.yaml", "--",
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml=junit.xml",
        ],
        cwd=path, capture_output=True, text=True, timeout=budget(300),
        stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    files = {"stdout": done.stdout, "stderr": done.stderr}
    files["summary.md"] = (path / "summary.md").read_text()
    files["junit.xml"] = (path / "junit.xml").read_text()
    files["requests.log"] = (path / "requests.log").read_text()
    for report in (path / "contract").iterdir():
        files[report.name] = report.read_text()
    for read in (path / "admin").iterdir():
        files[f"admin {read.stem}"] = read.read_text()
    return Outputs(files)


@pytest.fixture(scope="module")
def text_log(tmp_path_factory) -> Outputs:
    return ci_run(tmp_path_factory.mktemp("hostile") / "text", "text")


@pytest.fixture(scope="module")
def json_log(tmp_path_factory) -> Outputs:
    return ci_run(tmp_path_factory.mktemp("hostile") / "json", "json")


RUN_OUTPUTS = [
    "stdout",
    "stderr",
    "summary.md",
    "junit.xml",
    "contract-report.json",
    "contract-report.txt",
    "contract-report.xml",
    "contract-report.md",
    "admin journal",
    "admin requests",
    "admin opened",
    "admin world",
    "admin records",
    "admin events",
]


@pytest.fixture(params=["text_log", "json_log"])
def ran(request) -> Outputs:
    return request.getfixturevalue(request.param)


def test_every_hostile_text_reached_the_outputs_of_a_run(ran: Outputs):
    # Otherwise the checks below would pass for want of anything to check.
    for name in ("stderr", "summary.md", "stdout", "admin requests", "admin events"):
        assert MARK in ran[name], name
    assert ran["contract-report.json"].count(MARK) > len(CORPUS)
    for name in ("admin journal", "admin opened", "admin records"):
        shown = " ".join(_strings([json.loads(line) for line in ran[name].split("\n") if line]))
        for text in ESCAPING.values():
            forms = (text, escape.text(text), escape.json_text(text)[1:-1])
            assert any(form in shown for form in forms), (name, text)


def _strings(value: Any) -> list[str]:
    """Every text a JSON value holds, its keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *_strings(list(value.values()))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def test_every_credential_reached_the_outputs_of_a_run_hidden(ran: Outputs):
    for name in ("admin journal", "admin opened", "admin records", "contract-report.json"):
        assert "<hidden>" in ran[name], name
    assert "hostile-request" in ran["admin records"] and "hostile-fixture" in ran["admin records"]
    sent = ran["admin journal"].count("test_own_credential_in_other_shapes[")
    assert sent == len(OWN_CREDENTIAL_SHAPES)


@pytest.mark.parametrize("output", RUN_OUTPUTS)
def test_no_output_of_a_run_breaks_the_escaping_rule(ran: Outputs, output: str):
    assert unescaped(ran[output], meant=MEANT) == []


@pytest.mark.parametrize("output", RUN_OUTPUTS)
def test_no_output_of_a_run_holds_a_credential(ran: Outputs, output: str):
    assert unmasked(ran[output]) == []


def test_markdown_holds_what_a_client_sent_only_in_code_spans(ran: Outputs):
    for name in ("summary.md", "contract-report.md"):
        outside = re.sub(r"(`+)(.+?)\1", "", ran[name])
        assert MARK in ran[name] and MARK not in outside, name


@pytest.mark.parametrize("name", ["contract-report.txt", "contract-report.md", "summary.md"])
def test_the_reports_curl_lines_carry_what_was_sent(ran: Outputs, name: str):
    # The escaping and masking checks above read these lines too: they must be there.
    curls = [line for line in ran[name].split("\n") if "curl -sS " in line]
    assert any(MARK in line for line in curls), name
    assert all("$PLATFORM_MOCK_URL" in line for line in curls), name


def test_annotations_are_one_line_each(ran: Outputs):
    annotations = [line for line in ran["stdout"].split("\n") if line.startswith("::")]
    assert 0 < len(annotations) <= 10


def test_json_outputs_read_back_as_what_was_sent(json_log: Outputs):
    report = json.dumps(json.loads(json_log["contract-report.json"]), ensure_ascii=False)
    journal = json.dumps(json.loads(json_log["admin journal"]), ensure_ascii=False)
    for text in (ESCAPING["bidi-override"], ESCAPING["c1-csi"], ESCAPING["azure-set-variable"]):
        assert text in report and text in journal


def test_the_journal_reads_back_what_was_sent_with_credentials_hidden(json_log: Outputs):
    bodies = [entry["body"] for entry in json.loads(json_log["admin journal"])["data"]]
    assert {ESCAPING["next-line"]: ESCAPING["next-line"]} in bodies
    assert {"ZQJ <hidden>": "ZQJ <hidden>"} in bodies  # a JWT in a key and in a value


def test_json_log_lines_each_parse(json_log: Outputs):
    logged = [line for line in json_log["requests.log"].split("\n") if line.startswith('{"time"')]
    assert len(logged) > len(CORPUS)
    assert all(isinstance(json.loads(line)["status"], int) for line in logged)


def test_the_event_stream_is_one_line_of_json_per_event(ran: Outputs):
    data = [line for line in ran["admin events"].split("\n") if line.startswith("data: ")]
    assert len(data) > len(CORPUS)
    assert all(json.loads(line.removeprefix("data: "))["type"] for line in data)


@pytest.mark.parametrize("name", ["junit.xml", "contract-report.xml"])
def test_junit_files_validate(text_log: Outputs, junit_schema, name: str):
    junit_schema.validate(text_log[name])


# -- `platform-mock serve --watch` on files named by the table ------------------------------------


def file_name(text: str) -> str:
    """A file name holding a text: all but what no name may hold (`/` and NUL)."""
    return text.replace("/", "_").replace("\x00", "_") + ".yaml"


def _world_of(index: int) -> str:
    return yaml.safe_dump({"users": [{"email": f"named-{index}@acme.example"}]})


def _broken(text: str, secret: str) -> str:
    """A fixture that does not load: an e-mail that is none, quoted in the error with the
    file's name, and a credential of the wrong type, quoted too."""
    return yaml.safe_dump(
        {
            "users": [{"email": text}],
            "modelResponses": [{"id": "resp_broken", "metadata": {"api_key": [secret]}}],
        }
    )


class Stream:
    """The admin API's event stream, read on a thread into `text`."""

    def __init__(self, url: str, token: str):
        self.text = ""
        self._client = httpx.Client(timeout=httpx.Timeout(DEADLINE, read=None))
        request = self._client.build_request(
            "GET", url + "/__admin/events", headers={"Authorization": f"Bearer {token}"}
        )
        self._response = self._client.send(request, stream=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.until(lambda text: "event: hello" in text)

    def _read(self) -> None:
        try:
            for chunk in self._response.iter_text():
                self.text += chunk
        except httpx.HTTPError:  # closed at the end of the test
            return

    def until(self, found: Callable[[str], bool]) -> None:
        end = time.monotonic() + DEADLINE
        while not found(self.text) and time.monotonic() < end:
            time.sleep(0.05)
        assert found(self.text), self.text[-2000:]

    def close(self) -> None:
        self._response.close()
        self._client.close()


def _serve(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_MOCK")},
    )  # fmt: skip


@pytest.fixture(scope="module")
def watched(tmp_path_factory) -> Outputs:
    """`serve --watch` on one fixture file per text of the table, named by it; every file
    edited into one that does not load (a credential in its fields), then back."""
    here = tmp_path_factory.mktemp("watched")
    names = [file_name(text) for text in CORPUS.values()]
    for index, name in enumerate(names):
        (here / name).write_text(_world_of(index))
    fixtures = [option for name in names for option in ("--fixtures", name)]
    process = _serve("--watch", *fixtures, cwd=here)
    files: dict[str, str] = {}
    try:
        assert process.stdout is not None
        banner = ""
        while "Press Ctrl-C" not in banner:
            line = process.stdout.readline()
            assert line, process.communicate(timeout=DEADLINE)
            banner += line
        found = re.search(r"admin token: +(\S+) +\(admin API: (http://\S+)/__admin\)", banner)
        assert found, banner
        token, url = found[1], found[2]
        stream = Stream(url, token)
        for index, (name, text) in enumerate(zip(names, CORPUS.values(), strict=True)):
            secret = field_secret(f"file-{index}")
            (here / name).write_text(_broken(text, secret))
        stream.until(lambda text: '"reloaded":false' in text)
        for index, name in enumerate(names):
            (here / name).write_text(_world_of(index))
        stream.until(lambda text: '"reloaded":true' in text)
        with httpx.Client(
            base_url=url + "/__admin", headers={"Authorization": f"Bearer {token}"}
        ) as admin:
            files["admin world"] = admin.get("/world").text
            files["admin records"] = admin.get("/records", params={"kind": "users"}).text
        stream.close()
        files["admin events"] = stream.text
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=DEADLINE)
    finally:
        process.kill()
    files["stdout"], files["stderr"] = banner + out, err
    return Outputs(files)


WATCHED_OUTPUTS = ["stdout", "stderr", "admin world", "admin records", "admin events"]


def test_the_names_and_problems_of_the_files_reached_the_outputs(watched: Outputs):
    for name in ("stderr", "admin events", "admin world"):
        assert MARK in watched[name] and "was not loaded" in watched["stderr"], name
    assert "the world is reloaded" in watched["stdout"] + watched["stderr"]


@pytest.mark.parametrize("output", WATCHED_OUTPUTS)
def test_no_output_of_serve_breaks_the_escaping_rule(watched: Outputs, output: str):
    assert unescaped(watched[output]) == []


@pytest.mark.parametrize("output", WATCHED_OUTPUTS)
def test_no_output_of_serve_holds_a_credential(watched: Outputs, output: str):
    assert unmasked(watched[output]) == []


def test_a_fixture_file_that_does_not_load_is_reported_escaped_and_masked(tmp_path):
    name = file_name("".join(ESCAPING[key] for key in ("osc-title", "azure-set-variable")))
    (tmp_path / name).write_text(_broken(CORPUS["jwt-in-text"], field_secret("start")))
    done = subprocess.run(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", "--fixtures", name],
        cwd=tmp_path, capture_output=True, text=True, timeout=DEADLINE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and MARK in done.stderr, done.stderr
    assert (unescaped(done.stderr), unmasked(done.stderr)) == ([], [])


# -- `platform-mock proxy --record` in front of a hostile target ----------------------------------


class HostilePlatform(PlatformMock):
    """A platform whose answers hold the table's texts: a job's runs (whatever job is asked
    for, its id and every text in their fields, the caller's own credential echoed in an
    error), undocumented fields of the session named by the texts, credentials in the
    manifests of deployments, and a stored response. It takes `OWN_CREDENTIAL` for its
    first user's token."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        headers = [
            (k, b"Bearer " + self.auth.dev_token().encode())
            if k == b"authorization" and OWN_CREDENTIAL.encode() in v
            else (k, v)
            for k, v in scope["headers"]
        ]
        scope = {**scope, "headers": headers}
        asked = scope["path"]
        runs = re.fullmatch(f"{CONTROL_PLANE}/jobs/(.+)/runs", asked)
        if runs:  # any job: the default world's
            scope["path"] = f"{CONTROL_PLANE}/jobs/app-trainer/runs"
            scope["raw_path"] = scope["path"].encode()
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def held(message):
            if message["type"] == "http.response.start":
                start.update(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            raw = b"".join(chunks)
            if raw and dict(start["headers"]).get(b"content-type") == b"application/json":
                body = _hostile(asked, runs[1] if runs else "", start["status"], json.loads(raw))
                raw = json.dumps(body).encode()
            headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            await send(
                {**start, "headers": [*headers, (b"content-length", str(len(raw)).encode())]}
            )
            await send({"type": "http.response.body", "body": raw})

        return await super().__call__(scope, receive, held)


# Jobs whose answers name them as no fixture can (a note of the recording's header says so).
LEFT_OUT = ("paragraph-separator", "next-line", "jwt-in-text")


def _hostile(path: str, job: str, status: int, body: Any) -> Any:
    texts = list(CORPUS.values())
    if status >= 400 and isinstance(body, dict) and "message" in body:
        body["message"] += f" (token {OWN_CREDENTIAL})"
    elif path.endswith("/session"):
        body["user"] |= {text: "x" for text in texts}
    elif job:
        index = texts.index(job) if job in texts else 0
        named = job if any(CORPUS[name] == job for name in LEFT_OUT) else f"hostile-job-{index}"
        for run in body.get("data", []):
            run |= {"applicationName": named, "command": job}
            run["error"] = f"{job} as Bearer {OWN_CREDENTIAL}, that is {OWN_CREDENTIAL}"
        if body.get("data"):
            body["data"][0]["status"] = job
    elif path.endswith("/secrets/deployments"):
        for deployment in body.get("data", []):
            deployment["manifest"]["env"] = {**FIELD_SECRETS, "NOTE": texts[0]}
    elif "/responses/" in path:
        body |= {"api_key": field_secret("api_key"), "instructions": " ".join(texts)}
    return body


@pytest.fixture(scope="module")
def proxied(tmp_path_factory) -> Outputs:
    """`platform-mock proxy --record` in front of the hostile platform, sent the table as a
    client would (with `OWN_CREDENTIAL` as its token), stopped with SIGTERM."""
    here = tmp_path_factory.mktemp("proxied")
    target = HostilePlatform()
    secrets = [s.id for s in target.store.secrets.group_named("llm-keys").secrets.values()]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PLATFORM_MOCK"))}
    env |= {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(here / "summary.md")}
    with BackgroundServer(target) as served:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "mock_server", "proxy", "--target", served.url,
                "--port", "0", "--report", str(here / "reports"),
                "--record", str(here / "world.yaml"),
            ],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:
            assert process.stdout is not None
            banner = ""
            while "Press Ctrl-C" not in banner:
                line = process.stdout.readline()
                assert line, process.communicate(timeout=DEADLINE)
                banner += line
            found = re.search(r"control plane: (http://\S+)/api/svc/v1", banner)
            assert found, banner
            auth = {"Authorization": f"Bearer {OWN_CREDENTIAL}"}
            with httpx.Client(base_url=found[1], headers=auth, timeout=DEADLINE) as client:
                client.get(f"{CONTROL_PLANE}/session")
                for text in CORPUS.values():
                    client.get(f"{CONTROL_PLANE}/jobs/{quote(text, safe='')}/runs")
                    client.get(
                        f"{CONTROL_PLANE}/jobs/app-trainer/runs", params={text: OWN_CREDENTIAL}
                    )
                client.post(f"{CONTROL_PLANE}/secrets/deployments", json={"secretIds": secrets})
                client.get("/gateway/responses/resp_0000000000000000000000000000demo")
                client.get("/gateway/responses/resp_none")  # its error echoes the credential
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=DEADLINE)
        finally:
            process.kill()
    files = {"stdout": banner + out, "stderr": err, "summary.md": (here / "summary.md").read_text()}
    for report in (here / "reports").iterdir():
        files[report.name] = report.read_text()
    files["recording"] = (here / "world.yaml").read_text()
    return Outputs(files)


PROXY_OUTPUTS = [
    "stdout",
    "stderr",
    "summary.md",
    "drift-report.json",
    "drift-report.txt",
    "drift-report.xml",
    "drift-report.md",
    "recording",
]


def test_the_targets_texts_reached_the_outputs_of_the_proxy(proxied: Outputs):
    for name in ("stdout", "summary.md", "drift-report.json", "drift-report.txt", "recording"):
        assert MARK in proxied[name], name
    assert "<hidden>" in proxied["recording"] and "<hidden>" in proxied["drift-report.json"]


@pytest.mark.parametrize("output", PROXY_OUTPUTS)
def test_no_output_of_the_proxy_breaks_the_escaping_rule(proxied: Outputs, output: str):
    assert unescaped(proxied[output], meant=MEANT) == []


@pytest.mark.parametrize("output", PROXY_OUTPUTS)
def test_no_output_of_the_proxy_holds_a_credential(proxied: Outputs, output: str):
    assert unmasked(proxied[output]) == []


def test_no_note_of_the_recording_becomes_a_line_of_yaml(proxied: Outputs):
    recorded = yaml.safe_load(proxied["recording"])
    assert "agents" not in recorded  # no separator in a note or a text began a line
    notes = [line for line in proxied["recording"].split("\n") if line.startswith("#")]
    assert sum(MARK in note and "left out" in note for note in notes) == len(LEFT_OUT)


def test_the_recording_keeps_what_a_target_sent_exactly(proxied: Outputs):
    recorded = yaml.safe_load(proxied["recording"])
    errors = [
        run.get("error", "") for app in recorded["applications"] for run in app.get("runs", [])
    ]
    assert any(ESCAPING["line-separator"] in error for error in errors)
    assert any("as Bearer <hidden>, that is <hidden>" in error for error in errors)
