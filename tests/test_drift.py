"""The drift check: a proxy in front of a platform whose answers differ from the contract in
known ways reports exactly those differences, each with its operation and field, and counts
a slow or failing answer as the target's failure, never as drift.

The target is a second mock (its own world, served over loopback) whose answers are altered
on their way out as a platform with another contract would answer: an extra field, a
missing required field, an enum value renamed, a status the contract does not list, an
error code the contract does not have; with a fault rule of its own it answers one
operation too slowly and drops the connection of another. A client's test suite (httpx and
the OpenAI client) runs once through the proxy, for the whole module.
"""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from openai import APIStatusError, OpenAI

from mock_server.contract.documents import GATEWAY_SPEC, operations
from mock_server.contract.routing import Router
from mock_server.core.masking import HIDDEN
from mock_server.handlers.session import CLIENT_CONFIG
from mock_server.http.mock import MockConfig, PlatformMock
from mock_server.http.server import BackgroundServer
from mock_server.http.transport import MockTransport
from mock_server.proxy import forward as proxy_module
from mock_server.proxy.forward import BackgroundProxy, Proxy, caller_of
from mock_server.pytest_plugin import ssl_context
from mock_server.reports import drift, drift_files
from mock_server.reports.drift import (
    Difference,
    DriftReport,
    DriftReportWire,
    ProxiedExchange,
    check,
)
from mock_server.services.journal import BODY_LIMIT
from tests.budget import budget
from tests.conftest import CONTROL_PLANE
from tests.corpus import CORPUS, JWT, unescaped

PROXY_TIMEOUT = 0.5  # seconds; the slow operation of the target takes longer
SLOW_MS = 1500
# What the target answers otherwise than the contract: (operation, kind, field, found).
PLANTED = {
    ("getSession", "undocumented field", "user.avatarUrl", ""),
    ("generateRoleBindingManifests", "missing required field", "data[].name", ""),
    ("listJobRuns", "enum value", "data[].status", "SUCCEEDED"),
    ("listJobRuns", "error code", "code", "40499"),
    ("getModelResponse", "status", "", "410"),
}


def _altered(method: str, path: str, status: int, body: Any) -> tuple[int, Any]:
    """A mock's answer as the differing platform gives it."""
    if path == f"{CONTROL_PLANE}/session" and status == 200:
        body["user"]["avatarUrl"] = "https://avatars.acme.example/alice.png"
    elif path.endswith("/role-bindings/generate-manifest") and status == 200:
        for manifest in body["data"]:
            del manifest["name"]
    elif re.fullmatch(f"{CONTROL_PLANE}/jobs/[^/]+/runs", path) and status == 200:
        for run in body["data"]:
            run["status"] = "SUCCEEDED" if run["status"] == "FINISHED" else run["status"]
    elif re.fullmatch(f"{CONTROL_PLANE}/jobs/[^/]+/runs", path) and status == 404:
        body["code"] = 40499
    elif path.startswith("/gateway/responses/") and status == 404:
        status = body["statusCode"] = 410
    return status, body


class DifferingPlatform(PlatformMock):
    """A mock answering as a platform whose contract differs in known ways (`_altered`)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] == "HEAD":
            return await super().__call__(scope, receive, send)
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
            kind = dict(start["headers"]).get(b"content-type", b"")
            status = start["status"]
            if kind == b"application/json" and raw:
                status, body = _altered(scope["method"], scope["path"], status, json.loads(raw))
                raw = json.dumps(body).encode()
            headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            headers.append((b"content-length", str(len(raw)).encode()))
            await send({**start, "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": raw})

        return await super().__call__(scope, receive, held)


@dataclass
class Run:
    """What the client suite saw, and what the proxy made of it."""

    report: DriftReportWire
    answers: dict[str, httpx.Response]
    proxy: Proxy
    token: str
    target: PlatformMock


def client_suite(url: str, target: PlatformMock, token: str) -> dict[str, httpx.Response]:
    """A client's tests of the platform, through the proxy at `url`: the answers by name."""
    store = target.store
    trainer = store.deployments.application_named("trainer").id
    me = store.identity.subject_named("user", "alice@acme.example").id
    secrets = [s.id for s in store.secrets.group_named("llm-keys").secrets.values()]
    answers: dict[str, httpx.Response] = {}
    with httpx.Client(
        base_url=url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {token}"},
        verify=ssl_context(),
        timeout=budget(30),
    ) as api:
        answers["session"] = api.get("/session")
        answers["role bindings"] = api.get(
            "/role-bindings/generate-manifest", params={"subjectType": "user", "subjectId": me}
        )
        for offset in (0, 10, 20):
            answers[f"runs from {offset}"] = api.get(
                f"/jobs/{trainer}/runs", params={"limit": 10, "offset": offset}
            )
        answers["unknown job"] = api.get("/jobs/no-such-job/runs")
        answers["deployments"] = api.post("/secrets/deployments", json={"secretIds": secrets})
        answers["token"] = api.get("/personal-access-tokens/ci")
        answers["min cli version"] = api.get("/min-cli-version")
        answers["tenant"] = api.get("/tenant-id", params={"hostName": "platform.acme.example"})
        answers["signed urls"] = api.post("/data-directories/signed-urls", json={})
        answers["limit 0"] = api.get(f"/jobs/{trainer}/runs", params={"limit": 0})
    gateway = OpenAI(
        base_url=url + "/gateway",
        api_key=token,
        http_client=httpx.Client(verify=ssl_context()),  # type: ignore[arg-type]  # openai's types name its own httpx2
        max_retries=0,
    )
    answers["model response"] = gateway.responses.with_raw_response.retrieve(  # type: ignore[assignment]
        "resp_0000000000000000000000000000demo"
    ).http_response
    try:
        gateway.responses.retrieve("resp_unknown")
    except APIStatusError as exc:
        answers["unknown response"] = exc.response  # type: ignore[assignment]
    return answers


@pytest.fixture(scope="module")
def run() -> Run:
    target = DifferingPlatform()
    target.faults.add("getMinCliVersion", delay_ms=SLOW_MS, times=None)
    target.faults.add("getTenantId", drop=True, times=None)
    with BackgroundServer(target) as served:
        proxy = Proxy(served.url, timeout=PROXY_TIMEOUT)
        with BackgroundProxy(proxy) as front:
            token = served.coordinates.token
            assert token is not None
            answers = client_suite(front.url, target, token)
    report = proxy.report.to_dict()
    return Run({"verdict": drift.judge(report), **report}, answers, proxy, token, target)


def found(report: DriftReportWire) -> set[tuple[str, str, str, str]]:
    return {
        (op_id, d["kind"], d["field"], d["found"])
        for op_id, operation in report["operations"].items()
        for d in operation["differences"]
    }


# -- the planted differences -----------------------------------------------------------------


def test_a_jwt_the_limit_cuts_in_a_text_body_is_hidden_whole():
    jwt_at = BODY_LIMIT - 30  # the limit falls inside its payload
    raw = b"x" * jwt_at + JWT.encode() + b" and more text" * 10
    kept = proxy_module._kept(None, raw)
    assert b"eyJ" not in kept and len(kept) == BODY_LIMIT


def test_the_report_holds_exactly_the_planted_differences(run: Run):
    assert found(run.report) == PLANTED


@pytest.mark.parametrize(
    ("operation", "kind", "field", "value", "path"),
    [
        pytest.param(*planted[:4], path, id=planted[1].replace(" ", "-"))
        for planted, path in [
            (("getSession", "undocumented field", "user.avatarUrl", ""), "/session"),
            (
                ("generateRoleBindingManifests", "missing required field", "data[].name", ""),
                "/role-bindings/generate-manifest",
            ),
            (("listJobRuns", "enum value", "data[].status", "SUCCEEDED"), "/runs"),
            (("listJobRuns", "error code", "code", "40499"), "/jobs/no-such-job/runs"),
            (("getModelResponse", "status", "", "410"), "/gateway/responses/resp_unknown"),
        ]
    ],
)
def test_each_difference_names_its_operation_field_and_a_request(
    run: Run, operation: str, kind: str, field: str, value: str, path: str
):
    (difference,) = [
        d
        for d in run.report["operations"][operation]["differences"]
        if (d["kind"], d["field"], d["found"]) == (kind, field, value)
    ]
    assert difference["count"] >= 1
    assert path in difference["example"]["request"]


def test_a_difference_is_counted_once_per_answer_that_shows_it(run: Run):
    (missing,) = run.report["operations"]["generateRoleBindingManifests"]["differences"]
    assert missing["count"] == 1  # one answer, whatever the number of manifests in it


def test_an_enum_value_renamed_is_counted_in_each_page_that_shows_it(run: Run):
    pages = sum(
        "SUCCEEDED" in answer.text
        for name, answer in run.answers.items()
        if name.startswith("runs from")
    )
    (renamed,) = [
        d
        for d in run.report["operations"]["listJobRuns"]["differences"]
        if d["kind"] == "enum value"
    ]
    assert renamed["count"] == pages >= 1


def test_the_client_gets_the_targets_answer_as_it_came(run: Run):
    assert run.answers["session"].json()["user"]["avatarUrl"].startswith("https://")


def test_operations_that_differ_have_the_verdict_drifts(run: Run):
    drifting = {op for op, *_ in PLANTED}
    assert {
        op for op, found in run.report["operations"].items() if found["verdict"] == "drifts"
    } == drifting


def test_operations_answered_as_documented_agree(run: Run):
    operations = run.report["operations"]
    agreeing = ("listSecretDeployments", "getOrCreatePersonalAccessToken")
    assert [operations[op]["verdict"] for op in agreeing] == ["agrees", "agrees"]


def test_the_verdict_fails_on_drift(run: Run):
    verdict = run.report["verdict"]
    assert not verdict["passed"] and drift.drifted(verdict)


# -- what is not drift -------------------------------------------------------------------------


def test_a_slow_answer_is_a_timeout_not_drift(run: Run):
    operation = run.report["operations"]["getMinCliVersion"]
    assert (operation["differences"], [f["kind"] for f in operation["failures"]]) == (
        [],
        ["timeout"],
    )


def test_the_client_of_a_slow_answer_gets_a_504_in_the_platform_body(run: Run):
    answer = run.answers["min cli version"]
    assert (answer.status_code, answer.json()["code"]) == (504, 50401)


def test_a_failing_answer_is_a_target_error_not_drift(run: Run):
    operation = run.report["operations"]["getTenantId"]
    assert (operation["differences"], [f["kind"] for f in operation["failures"]]) == (
        [],
        ["error"],
    )


def test_the_client_of_a_failing_answer_gets_a_502_in_the_platform_body(run: Run):
    answer = run.answers["tenant"]
    assert (answer.status_code, answer.json()["code"]) == (502, 50201)


def test_the_verdict_says_the_target_failed_apart_from_drift(run: Run):
    (target,) = [c for c in run.report["verdict"]["checks"] if c["check"] == "target"]
    assert not target["passed"] and "1 timed out, 1 failed" in target["summary"]


def test_a_request_the_contract_does_not_cover_is_forwarded_and_listed(run: Run):
    assert run.report["uncovered"]["requests"] == {
        "POST /api/svc/v1/data-directories/signed-urls": 1
    }


def test_the_client_gets_the_targets_answer_to_an_uncovered_request(run: Run):
    assert run.answers["signed urls"].json()["code"] == 40401  # the target's own 404


def test_a_request_breaking_the_contract_is_the_clients_doing_not_drift(run: Run):
    (rule,) = run.report["operations"]["listJobRuns"]["requestViolations"]
    assert (rule["rule"], rule["count"]) == ("query limit", 1)


# -- credentials -------------------------------------------------------------------------------


def test_the_callers_credentials_reach_the_target(run: Run):
    assert run.answers["deployments"].status_code == 200  # an answer only a caller gets


def test_the_journal_keeps_both_directions_of_each_exchange(run: Run):
    session = run.proxy.journal.calls("getSession")[0]
    assert isinstance(session, ProxiedExchange)
    assert (session.status, json.loads(session.response_body)["user"]["email"]) == (
        200,
        "alice@acme.example",
    )


def test_the_journal_holds_no_token(run: Run):
    issued = run.answers["token"].json()["token"]
    kept = json.dumps([entry.to_dict() for entry in run.proxy.journal])
    assert run.token not in kept and issued not in kept and HIDDEN in kept


def test_the_report_holds_no_token(run: Run):
    assert run.token not in json.dumps(run.report)


# -- its formats -------------------------------------------------------------------------------


def test_the_junit_report_validates(run: Run, junit_schema):
    junit_schema.validate(drift_files.junit(run.report))


def test_every_failure_error_and_skip_of_the_junit_report_has_text(run: Run):
    root = ET.fromstring(drift_files.junit(run.report))
    outcomes = [e for tag in ("failure", "error", "skipped") for e in root.iter(tag)]
    assert {e.tag for e in outcomes} == {"failure", "error", "skipped"}
    assert [e.get("message") for e in outcomes if not (e.text or "").strip()] == []


def test_the_junit_report_fails_a_case_per_difference_and_errs_per_target_failure(run: Run):
    xml = drift_files.junit(run.report)
    assert (xml.count("<failure"), xml.count("<error")) == (
        len(PLANTED) + len({op for op, *_ in PLANTED}) + 1,  # each, each operation, the verdict
        2 + 1,  # the timeout, the dropped connection, the verdict's target check
    )


def test_the_text_report_names_each_difference_with_its_count(run: Run):
    shown = drift_files.text(run.report)
    assert [
        f"DRIFT {drift_files.difference_name(d)}: {d['count']} answer(s)" in shown
        for operation in run.report["operations"].values()
        for d in operation["differences"]
    ] == [True] * len(PLANTED)


def test_the_markdown_report_tables_each_difference(run: Run):
    shown = drift_files.markdown(run.report)
    assert shown.count("| `listJobRuns` | ") == 3  # its row, and each of its differences


def test_github_gets_the_summary_and_an_annotation_per_difference(run: Run, tmp_path):
    summary = tmp_path / "summary.md"
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    annotations = drift_files.ci(run.report, environ)
    assert (len(annotations), "Platform API drift" in summary.read_text()) == (len(PLANTED), True)


# -- checking one answer, without a network -----------------------------------------------------


@pytest.mark.parametrize(
    ("status", "content_type", "body", "expected"),
    [
        pytest.param(
            200, "application/json", {**CLIENT_CONFIG, "minVersion": 1},
            {("type", "minVersion", "integer")}, id="type",
        ),
        pytest.param(
            200, "text/html", "<html>", {("media type", "", "text/html")}, id="media-type"
        ),
        pytest.param(200, "application/json", b"{", {("body", "", "")}, id="not-json"),
        pytest.param(
            400, "application/json",
            {"statusCode": 401, "message": "m", "code": 40001, "details": []},
            {("error code", "statusCode", "401")}, id="status-code-in-body",
        ),
        pytest.param(
            202, "application/json", {}, {("status", "", "202")}, id="undocumented-status"
        ),
        pytest.param(
            200, "application/json; charset=utf-8", CLIENT_CONFIG, set(), id="agrees",
        ),
    ],
)  # fmt: skip
def test_check_classifies_a_difference(status, content_type, body, expected):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    found_ = check("getMinCliVersion", status, content_type, raw)
    assert {(d.kind, d.field, d.found) for d in found_} == expected


def test_check_reads_a_streamed_answer_event_by_event():
    stream = b'event: response.created\ndata: {"type": "response.created"}\n\n'
    (difference,) = check("getModelResponse", 200, "text/event-stream", stream)
    assert difference.field.startswith("event.0.data")


def test_check_takes_no_body_from_the_answer_to_a_head():
    assert check("getSession", 200, "application/json", b"", head=True) == []


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        pytest.param(
            "GET", "/api/svc/v1/jobs/j-1/runs", ("listJobRuns", {"jobId": "j-1"}),
            id="path-parameter",
        ),
        pytest.param("HEAD", "/api/svc/v1/session", ("getSession", {}), id="head-as-get"),
        pytest.param(
            "GET", "/llm/responses/r1", ("getModelResponse", {"id": "r1"}), id="gateway-prefix"
        ),
        pytest.param("GET", "/api/svc/v1/jobs/a/b/runs", None, id="slash-in-a-parameter"),
        pytest.param("POST", "/api/svc/v1/session", None, id="other-method"),
    ],
)  # fmt: skip
def test_the_router_finds_the_operation(method, path, expected):
    matched = Router("/llm").match(method, path)
    assert (None if matched is None else (matched[0].operation_id, matched[1])) == expected


# -- who the caller is ------------------------------------------------------------------------


def test_the_callers_claims_are_read_without_the_signature():
    token = (
        "eyJhbGciOiJIUzI1NiJ9."
        "eyJzdWIiOiJ1LTEiLCJzdWJqZWN0VHlwZSI6InVzZXIiLCJlbWFpbCI6ImFAYi5jIiwidGVuYW50TmFtZSI6InQifQ."
        "bm90LWNoZWNrZWQ"
    )
    caller = caller_of(f"Bearer {token}")
    assert caller is not None
    assert (caller.subject_id, caller.name, caller.tenant) == ("u-1", "a@b.c", "t")


# -- what a target sends never acts on a terminal or CI ------------------------------------------


def _hostile_report() -> DriftReportWire:
    """A report whose every difference holds a hostile text the target sent."""
    report = DriftReport("http://platform.acme.example")
    for index, text in enumerate(CORPUS.values()):
        exchange = ProxiedExchange(
            seq=index, method="GET", path=f"/api/svc/v1/jobs/{text}/runs", query={text: [text]},
            path_params={"jobId": text}, raw_headers={}, raw_body=b"", operation_id="listJobRuns",
            status=200,
        )  # fmt: skip
        exchange.differences = [
            Difference("enum value", "data[0].status", text, f"{text!r} is not one of [...]"),
            Difference("undocumented field", f"data[0].{text}", "", "is not a field"),
        ]
        report.add(exchange)
    found_ = report.to_dict()
    return {"verdict": drift.judge(found_), **found_}


@pytest.mark.parametrize("format_", list(drift_files.RENDERERS))
def test_no_rendered_line_breaks_the_escaping_rule(format_: str):
    rendered = drift_files.RENDERERS[format_](_hostile_report())
    assert "ZQJ" in rendered
    assert unescaped(rendered) == []


def test_markdown_holds_what_the_target_sent_only_in_code_spans():
    shown = drift_files.markdown(_hostile_report())
    assert "ZQJ" in shown and "ZQJ" not in re.sub(r"(`+)(.+?)\1", "", shown)


def test_the_hostile_junit_report_validates(junit_schema):
    junit_schema.validate(drift_files.junit(_hostile_report()))


def test_annotations_of_hostile_differences_are_one_line_each():
    annotations = drift_files.ci(_hostile_report(), {"GITHUB_ACTIONS": "true"})
    assert annotations and all("\n" not in a and "\r" not in a for a in annotations)


# -- bounds ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def platform() -> Any:
    """A mock of the default world, as a platform that keeps the contract."""
    with BackgroundServer(PlatformMock()) as served:
        yield served


async def _through(proxy: Proxy, method: str, path: str, **kwargs: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=proxy)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        try:
            return await client.request(method, path, **kwargs)
        finally:
            await proxy.aclose()


def test_a_request_body_over_the_limit_is_refused_unforwarded(platform):
    proxy = Proxy(platform.url)
    body = b"x" * (proxy_module.MAX_REQUEST_BODY + 1)
    before = platform.mock.journal.call_count
    path = f"{CONTROL_PLANE}/secrets/deployments"
    answer = asyncio.run(_through(proxy, "POST", path, content=body))
    assert (answer.status_code, answer.json()["code"], platform.mock.journal.call_count) == (
        413,
        41301,
        before,
    )


def test_an_answer_over_the_checked_size_is_passed_on_unchecked(platform, monkeypatch):
    monkeypatch.setattr(proxy_module, "MAX_CHECKED_BODY", 100)
    proxy = Proxy(platform.url)
    headers = {"Authorization": f"Bearer {platform.coordinates.token}"}
    answer = asyncio.run(_through(proxy, "GET", f"{CONTROL_PLANE}/session", headers=headers))
    (exchange,) = proxy.journal
    assert isinstance(exchange, ProxiedExchange)
    assert (answer.json()["user"]["email"], exchange.unchecked is not None) == (
        "alice@acme.example",
        True,
    )


def test_a_head_is_answered_as_its_get_without_the_body(platform):
    proxy = Proxy(platform.url)
    headers = {"Authorization": f"Bearer {platform.coordinates.token}"}
    got = asyncio.run(_through(proxy, "GET", f"{CONTROL_PLANE}/session", headers=headers))
    proxy = Proxy(platform.url)
    head = asyncio.run(_through(proxy, "HEAD", f"{CONTROL_PLANE}/session", headers=headers))
    assert (head.status_code, head.content, head.headers["content-length"]) == (
        200,
        b"",
        str(len(got.content)),
    )


def test_a_request_no_url_can_carry_is_refused_unforwarded(platform):
    proxy = Proxy(platform.url)
    scope = {
        "type": "http", "method": "GET", "path": "/api/svc/v1/jobs/a\x7fb/runs",
        "raw_path": b"/api/svc/v1/jobs/a\x7fb/runs", "query_string": b"", "headers": [],
    }  # fmt: skip
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(proxy(scope, receive, send))
    assert (sent[0]["status"], json.loads(sent[1]["body"])["code"]) == (400, 40001)


def test_the_router_takes_a_concrete_path_before_a_templated_one():
    # GET is not an operation of /artifact-versions/files: the mock's 405, not getArtifactVersion.
    assert Router("/llm").match("GET", "/api/svc/v1/artifact-versions/files") is None


def _every_documented_request() -> list[tuple[str, str]]:
    paths = sorted(
        {("/llm" if o.document == GATEWAY_SPEC else "") + o.path for o in operations().values()}
    )
    return [
        (method, re.sub(r"\{[^}]+\}", "x-1", path))
        for path in paths
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
    ]


def test_the_mock_routes_every_documented_path_as_the_proxys_router_does():
    mock = PlatformMock(MockConfig(gateway_prefix="/llm"))
    differ = []
    with httpx.Client(transport=MockTransport(mock), base_url="http://localhost") as client:
        for method, path in _every_documented_request():
            client.request(method, path)
            entry = mock.journal.last
            mocks = entry.operation_id if entry is not None and entry.path == path else None
            matched = Router("/llm").match(method, path)
            ours = matched[0].operation_id if matched else None
            if ours != mocks:
                differ.append((method, path, ours, mocks))
    assert differ == []
