"""What the live view reads: the journal a page at a time, a request opened with every rule it
broke explained, the world's records, and the event stream (`spec/admin.yaml`).

Every text a client chose comes escaped by the one rule, every credential hidden; a page
costs a bounded part of the journal or the world; a stream that is not read holds nothing
but itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.core.masking import HIDDEN
from mock_server.http.server import BackgroundServer
from mock_server.services.journal import Entry, Journal
from mock_server.view import browse
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, assert_error

TOKENS = "/personal-access-tokens/ci"
RUNS = "/jobs/app-trainer/runs"
pytestmark = pytest.mark.platform_mock(expect_violations=True)


def _page(admin: httpx.Client, **params) -> dict:
    response = admin.get("/requests", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _opened(admin: httpx.Client, seq: int) -> dict:
    response = admin.get(f"/requests/{seq}")
    assert response.status_code == 200, response.text
    return response.json()


# -- the journal, a page at a time -----------------------------------------------------------


def test_requests_come_newest_first(admin, api):
    api.get(TOKENS)
    api.get(RUNS)
    api.get("/session")

    paths = [line["path"] for line in _page(admin)["data"]]

    assert paths == [CONTROL_PLANE + p for p in ("/session", RUNS, TOKENS)]


def test_next_page_goes_on_where_the_first_ended(admin, api):
    for limit in (1, 2, 3, 4, 5):
        api.get(RUNS, params={"limit": limit})

    first = _page(admin, limit=2)
    second = _page(admin, limit=2, before=first["next"])
    last = _page(admin, limit=2, before=second["next"])

    shown = [line["query"] for page in (first, second, last) for line in page["data"]]
    assert shown == [f"limit={n}" for n in (5, 4, 3, 2, 1)]
    assert last["next"] is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"operationId": "listJobRuns"}, ["listJobRuns"], id="operation"),
        pytest.param({"status": 400}, ["getOrCreatePersonalAccessToken"], id="status"),
        pytest.param({"violation": "true"}, ["getOrCreatePersonalAccessToken"], id="violation"),
        pytest.param({"q": "RUNS limit=7"}, ["listJobRuns"], id="words-of-the-line"),
        pytest.param({"q": "secret-hf-token"}, ["listSecretDeployments"], id="words-of-the-body"),
    ],
)
@pytest.mark.platform_mock(expect_violations=False)  # counted: `violation` finds them
def test_requests_are_filtered(admin, api, query, expected):
    api.get(RUNS, params={"limit": 7})
    api.get(TOKENS, params={"page_size": 3})
    api.post("/secrets/deployments", json={"secretIds": ["secret-hf-token"]})

    found = [line["operationId"] for line in _page(admin, **query)["data"]]

    assert found == expected


def test_requests_of_a_test_are_found_by_its_name(admin, api):
    api.get(RUNS)
    admin.put("/test", json={"test": "tests/test_x.py::test_y"})
    api.get("/session")
    admin.delete("/test")

    found = _page(admin, test="tests/test_x.py::test_y")["data"]

    assert [line["operationId"] for line in found] == ["getSession"]


def test_a_line_says_who_sent_it_and_the_rules_it_broke(admin, api):
    admin.put("/test", json={"test": "tests/test_x.py::test_y", "expectViolations": False})
    api.get(TOKENS, params={"page_size": 3})

    (line,) = _page(admin)["data"]

    assert line["caller"] == "user:alice@acme.example"
    assert line["test"] == "tests/test_x.py::test_y"
    assert (line["violation"], line["rules"]) == (True, ["query page_size"])


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        pytest.param("\x1b[31mred", "\\x1b[31mred", id="terminal-escape"),
        pytest.param("evil\u202etxt.exe", "evil\\u202etxt.exe", id="bidi-override"),
        pytest.param("a\nb", "a\\x0ab", id="line-feed"),
    ],
)
def test_a_lines_texts_are_escaped(admin, api, sent, shown):
    api.get(TOKENS, params={"x": sent})

    (line,) = _page(admin)["data"]

    assert line["query"] == f"x={shown}"


def test_a_page_looks_at_a_bounded_part_of_the_journal():
    journal = Journal()
    for seq in range(1, 101):
        journal.record(_entry(seq))
    looked: list[int] = []

    def matches(entry: Entry) -> bool:
        looked.append(entry.seq)
        return False

    found, next_page = journal.page(matches, budget=10 * _entry(0).size)

    assert (found, len(looked)) == ([], 10)
    assert next_page is not None
    assert journal.page(lambda e: True, before=next_page, limit=1)[0][0].seq == 90


def _entry(seq: int) -> Entry:
    return Entry(seq, "GET", "/api/svc/v1/session", {}, {}, {}, b"", "getSession", 200)


def test_an_unknown_query_parameter_of_the_page_is_400(admin):
    body = assert_error(admin.get("/requests", params={"page": 2}), 400, 40001)
    assert [d["field"] for d in body["details"]] == ["page"]


# -- a request, opened ------------------------------------------------------------------------


def test_an_opened_request_shows_the_answer(admin, api):
    api.get(RUNS, params={"limit": 1})
    (line,) = _page(admin)["data"]

    opened = _opened(admin, line["seq"])

    assert dict(opened["response"]["headers"])["content-type"] == "application/json"
    assert json.loads(opened["response"]["body"])["data"][0]["applicationId"] == "app-trainer"


def test_an_opened_request_hides_the_token_it_was_answered(admin, api):
    token = api.get(TOKENS).json()["token"]
    (line,) = _page(admin)["data"]

    opened = json.dumps(_opened(admin, line["seq"]))

    assert token not in opened
    assert HIDDEN in opened


def test_an_opened_request_hides_a_token_sent_in_its_body(admin, api, token):
    api.post("/secrets/deployments", json={"secretIds": [token]})
    (line,) = _page(admin)["data"]

    opened = json.dumps(_opened(admin, line["seq"]))

    assert token not in opened and token[-20:] not in opened


def test_an_opened_request_shows_its_authorization_hidden(admin, api, token):
    api.get("/session")
    (line,) = _page(admin)["data"]

    opened = _opened(admin, line["seq"])

    assert dict(opened["request"]["headers"])["authorization"] == "<hidden>"
    assert token.split(".")[2] not in json.dumps(opened)


@pytest.mark.parametrize(
    ("send", "rule", "hint"),
    [
        pytest.param(
            lambda api: api.get(TOKENS, params={"teamname": "ml"}),
            "query teamname",
            "did you mean 'teamName'?",
            id="a-parameter-misspelt",
        ),
        pytest.param(
            lambda api: api.get(RUNS, params={"status": "FAILD"}),
            "query status[]",
            "did you mean 'FAILED'?",
            id="a-value-misspelt",
        ),
        pytest.param(
            lambda api: api.get("/jobs/app-trainer/rusn"),
            "40401: No route for this path",
            "the nearest route: GET /api/svc/v1/jobs/{jobId}/runs (listJobRuns)",
            id="a-path-misspelt",
        ),
        pytest.param(
            lambda api: api.delete(RUNS),
            "40501: Method not allowed on this path",
            "this path takes: GET, HEAD",
            id="a-method-the-path-has-not",
        ),
        pytest.param(
            lambda api: api.put(
                "/artifact-versions/tags", json={"artifact_version_id": "x", "tag": ["a"]}
            ),
            "body tag",
            "did you mean 'tags'?",
            id="a-body-field-misspelt",
        ),
    ],
)
def test_an_opened_request_explains_each_rule_it_broke(admin, api, send, rule, hint):
    send(api)
    (line,) = _page(admin)["data"]

    broken = {b["rule"]: b["violations"] for b in _opened(admin, line["seq"])["broken"]}

    assert any(hint in violation["hint"] for violation in broken[rule])


def test_a_request_the_journal_does_not_hold_is_404(admin):
    assert_error(admin.get("/requests/999999"), 404, 40412)


@pytest.mark.parametrize(
    "number",
    ["abc", "1.5", "0", "1_0", "%201", "1%20", "%D9%A1", "%EF%BC%91"],
    ids=["word", "fraction", "zero", "underscore", "space-before", "space-after", "arabic", "wide"],
)
def test_a_request_number_that_is_no_journal_number_is_400_naming_the_id(admin, number):
    body = assert_error(admin.get(f"/requests/{number}"), 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("path", "id")]


# -- the world --------------------------------------------------------------------------------


def test_world_counts_each_kind(admin, api):
    api.get(TOKENS)

    world = admin.get("/world").json()

    assert world["counts"]["runs"] == 26
    assert world["counts"]["personalAccessTokens"] == 1
    assert (world["tenant"], world["reload"]) == ("acme", None)


def test_records_come_a_page_at_a_time(admin):
    first = admin.get("/records", params={"kind": "runs", "limit": 10}).json()
    last = admin.get("/records", params={"kind": "runs", "offset": 20, "limit": 10}).json()

    assert (first["total"], len(first["data"]), len(last["data"])) == (26, 10, 6)
    assert not {r["id"] for r in first["data"]} & {r["id"] for r in last["data"]}


def _runs_where(store, keep) -> int:
    return sum(1 for runs in store.world.job_runs.values() for run in runs if keep(run))


@pytest.mark.parametrize(
    ("kind", "q", "expected"),
    [
        pytest.param(
            "runs",
            "failed",
            lambda s: _runs_where(s, lambda r: r.status == "FAILED"),
            id="runs-by-status",
        ),
        pytest.param("runs", "trainer", lambda s: _runs_where(s, lambda r: True), id="runs-by-job"),
        pytest.param(
            "runs",
            "bob@acme.example",
            lambda s: _runs_where(s, lambda r: r.triggered_by.slug == "bob@acme.example"),
            id="runs-by-trigger",
        ),
        pytest.param("users", "ml-platform", lambda s: 2, id="users-by-team"),
        pytest.param("secretGroups", "vault", lambda s: 1, id="groups-by-integration"),
    ],
)
def test_records_are_searched(admin, store, kind, q, expected):
    found = admin.get("/records", params={"kind": kind, "q": q}).json()

    assert found["total"] == expected(store) == len(found["data"])
    assert found["total"] < sum(admin.get("/world").json()["counts"].values())


def test_a_run_is_found_by_the_start_of_its_name(admin, store):
    run = store.world.job_runs["app-trainer"][3]

    found = admin.get("/records", params={"kind": "runs", "q": run.name[:-1]}).json()

    assert run.id in [r["id"] for r in found["data"]]


def test_records_hide_secret_values(admin):
    shown = admin.get("/records", params={"kind": "secretGroups"}).text

    assert "sk-mock-1" not in shown and "hunter2" not in shown


def test_records_hide_token_values(admin, api):
    token = api.get(TOKENS).json()["token"]

    shown = admin.get("/records", params={"kind": "personalAccessTokens"}).text

    assert token not in shown and token[-20:] not in shown


def test_a_kind_the_world_has_not_is_400(admin):
    assert_error(admin.get("/records", params={"kind": "planets"}), 400, 40001)


# -- the event stream -------------------------------------------------------------------------


class Stream:
    """An event stream read on a thread, its events kept as they come."""

    def __init__(self, url: str, token: str):
        self.events: list[dict] = []
        self.status: int | None = None
        self._arrived = threading.Condition()
        self._client = httpx.Client(timeout=httpx.Timeout(5, read=None))
        self._response = self._client.send(
            self._client.build_request("GET", url, headers={"Authorization": f"Bearer {token}"}),
            stream=True,
        )
        self.status = self._response.status_code
        self.ended_cleanly = False  # the server ended the stream as a response ends
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self._response.iter_lines():
                if line.startswith("data: "):
                    with self._arrived:
                        self.events.append(json.loads(line[6:]))
                        self._arrived.notify_all()
        except httpx.HTTPError:  # cut short: the connection closed mid-response
            return
        self.ended_cleanly = True

    def join(self, timeout: float) -> bool:
        """Whether the stream has ended within `timeout` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def wait_for(self, kind: str, timeout: float = budget(5.0)) -> dict:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                found = [e for e in self.events if e["type"] == kind]
                if found:
                    return found[-1]
                left = deadline - time.monotonic()
                assert left > 0, f"no {kind} event; got {[e['type'] for e in self.events]}"
                self._arrived.wait(left)

    def close(self) -> None:
        self._response.close()
        self._client.close()


@pytest.fixture
def stream(server, mock) -> Iterator[Stream]:
    opened = Stream(server.url + "/__admin/events", mock.auth.admin_token())
    opened.wait_for("hello")
    yield opened
    opened.close()


def test_a_stream_says_hello_as_it_opens(stream):
    assert stream.status == 200
    assert stream.wait_for("hello")["subscribers"] >= 1


def test_a_journaled_request_is_an_event_at_once(stream, api):
    api.get(RUNS, params={"limit": 2})

    event = stream.wait_for("request", timeout=budget(1.0))

    assert (event["request"]["operationId"], event["request"]["query"]) == (
        "listJobRuns",
        "limit=2",
    )


@pytest.mark.parametrize(
    ("act", "kind"),
    [
        pytest.param(lambda admin: admin.post("/reset"), "reset", id="reset"),
        pytest.param(
            lambda admin: admin.post("/faults", json={"operationId": "getSession", "status": 503}),
            "faults",
            id="fault-added",
        ),
        pytest.param(lambda admin: admin.delete("/journal"), "journal", id="journal-cleared"),
        pytest.param(
            lambda admin: admin.post("/fixtures", json={"users": [{"email": "dana@acme.example"}]}),
            "world",
            id="fixtures-loaded",
        ),
    ],
)
def test_a_change_is_an_event(stream, admin, act, kind):
    assert act(admin).is_success

    assert stream.wait_for(kind)["type"] == kind


def test_a_stream_needs_the_admin_token(anonymous, token):
    response = anonymous.get("/__admin/events", headers={"Authorization": f"Bearer {token}"})

    assert_error(response, 403, 40301)


def test_a_reader_that_does_not_read_holds_nothing_but_its_own_stream(server, mock, api):
    admin_token = mock.auth.admin_token()
    with socket.create_connection((server.host, server.port)) as idle:
        idle.sendall(
            b"GET /__admin/events HTTP/1.1\r\nHost: %s:%d\r\n" % (server.host.encode(), server.port)
            + b"Authorization: Bearer "
            + admin_token.encode()
            + b"\r\n\r\n"
        )
        idle.settimeout(10)
        received = b""
        while b"event: hello" not in received:  # subscribed: what is published now is its
            chunk = idle.recv(65536)
            assert chunk, f"the stream ended before it began: {received[:300]!r}"
            received += chunk
        # About 48 MB of events, unread: far more than the sockets' buffers (a few MB on
        # loopback) and the reader's queue (1 MiB of events) take.
        for _ in range(3000):
            mock.live.publish("faults", {"padding": "x" * 16_000})
        # Answered (the client gives up after 5 s), while the stream waits on its reader.
        assert api.get("/session").status_code == 200
        while b"event: gap" not in received:
            chunk = idle.recv(1 << 20)
            assert chunk, "the stream ended without a gap"
            received = received[-100:] + chunk  # an event may straddle two reads
        gap = received[received.index(b"event: gap") :]
        while b"\n\n" not in gap:
            gap += idle.recv(1 << 20)
    assert b'data: {"type":"gap","missed":' in gap


def test_a_stream_ends_when_the_server_stops():
    mock = PlatformMock()
    server = BackgroundServer(mock).start()
    opened = Stream(server.url + "/__admin/events", mock.auth.admin_token())
    opened.wait_for("hello")

    server.stop()

    # Ended by the server as a response ends: not cut short once a stop's grace for
    # requests in flight (2 s) ran out.
    assert opened.join(5) and opened.ended_cleanly
    opened.close()


def test_the_kinds_of_records_are_those_the_contract_names():
    (kind,) = [
        p
        for p in contract.spec(contract.ADMIN_SPEC)["paths"]["/records"]["get"]["parameters"]
        if p["name"] == "kind"
    ]
    assert tuple(kind["schema"]["enum"]) == browse.KINDS


def test_world_counts_every_kind_the_records_list(admin):
    assert tuple(admin.get("/world").json()["counts"]) == browse.KINDS


def test_a_body_past_what_the_journal_keeps_is_shown_cut_saying_so(admin, api):
    sent = json.dumps({"secretIds": ["secret-hf-token"] * 8000}).encode()  # about 150 KB
    api.post("/secrets/deployments", content=sent, headers={"Content-Type": "application/json"})
    (line,) = _page(admin)["data"]

    shown = _opened(admin, line["seq"])["request"]["body"]

    assert shown.endswith(f"… (the first {64 * 1024} of {len(sent)} bytes)")


# -- acting from the view: curl, the docs, clearing the journal, latency ---------------------


def test_an_opened_request_has_a_curl_line_that_sends_it_again(server, admin, api, mock, token):
    sent = api.get(RUNS, params={"limit": 2}, headers={"X-Request-Id": "req-7 'quoted'"})
    (line,) = _page(admin)["data"]

    command = _opened(admin, line["seq"])["curl"]
    ran = subprocess.run(
        ["bash", "-c", command],
        env={
            "PATH": os.environ["PATH"],
            "PLATFORM_MOCK_URL": server.url,
            "PLATFORM_MOCK_TOKEN": token,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert token not in command and "Bearer $PLATFORM_MOCK_TOKEN" in command
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == sent.json()
    again = mock.journal.last
    assert (again.path, again.query, again.headers["x-request-id"]) == (
        CONTROL_PLANE + RUNS,
        {"limit": ["2"]},
        "req-7 'quoted'",
    )


def test_an_opened_request_links_its_operation_in_the_docs(admin, api, gateway):
    api.get(RUNS)
    gateway.get("/models")
    lines = _page(admin)["data"]

    links = [_opened(admin, line["seq"])["docs"] for line in lines]

    assert links == ["/gateway/docs/#/models/listModels", "/docs/#/jobs/listJobRuns"]


def test_clearing_the_journal_keeps_the_world_and_starts_its_report_over(admin, api, store):
    group = store.secrets.group_named("llm-keys").resource.id
    assert api.delete(f"/secret-groups/{group}").status_code == 200
    api.get(RUNS)
    counted = admin.get("/report").json()["operations"]["listJobRuns"]["calls"]

    assert admin.delete("/journal").status_code == 200
    api.get("/session")

    report = admin.get("/journal/report").json()
    assert report["summary"]["requests"] == 1
    assert report["operations"]["getSession"]["calls"] == 1
    assert report["operations"]["listJobRuns"]["calls"] == 0
    assert admin.get("/report").json()["operations"]["listJobRuns"]["calls"] == counted
    assert store.identity.find_resource("secret-group", "llm-keys") is None


def test_the_journal_report_has_each_operations_latency(admin, api, mock):
    for limit in (1, 2, 3):
        api.get(RUNS, params={"limit": limit})
    durations = sorted(entry.duration_ms for entry in mock.journal)

    latency = admin.get("/journal/report").json()["latency"]

    assert latency == {
        "listJobRuns": {
            "count": 3,
            "p50Ms": durations[1],
            "p90Ms": durations[2],
            "maxMs": durations[2],
        }
    }
