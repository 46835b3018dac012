"""What `platform-mock drift` asks a target platform: read-only requests of the contract's
operations, sent through a proxy in the same process, so that its drift report (and its
recording) is the proxy's.

In order: the two questions a client asks before it has a token (`min-cli-version`, and
`tenant-id` for the target's host), the caller's session, the role bindings of the caller and
of each of its teams, every page of the runs of each job given (`--job`), the deployments
behind each secret given (`--secret`, one request each, so that a recording knows which id
is which secret), each model response given (`--response`, plain and streamed, and its
input items), the gateway's models and the first of them, and requests whose documented
error the contract names (no token; a role-binding query of neither mode; an unknown job;
an unknown model response; an unknown model; a `limit` of 0): for those, a
status or code other than the contract's is drift too. Nothing here changes the target; the
one operation that may (`getOrCreatePersonalAccessToken` creates the token it is asked for
when there is none) is called only with `--create-token NAME`. Then what the answers name:
each job's application (by id, then by its FQN), and the newest finalised artifact version and
model version (by id, their artifact and model, and their files). Last, every other operation
that only reads (`catalog`'s `read_only`) whose example request needs nothing of the mock's
own world, as that example.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

import httpx

from mock_server.contract import documents as contract
from mock_server.core.coordinates import CONTROL_PLANE_PREFIX
from mock_server.core.jsonvalue import JsonValue
from mock_server.handlers import catalog
from mock_server.proxy.forward import Proxy
from mock_server.reports.drift import ERROR_CODE, STATUS, Difference, ProxiedExchange

UNKNOWN_JOB = "drift-check-no-such-job"
UNKNOWN_RESPONSE = "resp_driftchecknosuchresponse"
UNKNOWN_MODEL = "drift-check-no-such-model"
PAGE = 100  # runs asked for per page


@dataclass
class Asked:
    """What to ask beyond what needs no id: the target's jobs, secrets and model responses,
    and a token name to get or create (None: never)."""

    jobs: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    create_token: str | None = None
    max_pages: int = 10


@dataclass(frozen=True)
class _Expected:
    status: int
    code: int
    condition: str  # what the request is, as the contract names the condition


class _Client:
    """Requests to the proxy, each judged against what the contract says of its condition."""

    def __init__(self, proxy: Proxy, http: httpx.AsyncClient, token: str):
        self.proxy, self.http, self.token = proxy, http, token

    async def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: JsonValue = None,
        token: bool = True,
        expected: _Expected | None = None,
    ) -> JsonValue:
        """The answer's JSON (None if it has none, or the target gave no answer)."""
        headers = {"Authorization": f"Bearer {self.token}"} if token else {}
        journal = self.proxy.journal
        # A request meant to meet an error breaks the contract on purpose, if at all.
        journal.begin_test("platform-mock drift", expecting=expected is not None)
        try:
            response = await self.http.request(
                method, path, params=params, json=json, headers=headers
            )
        finally:
            journal.end_test()
        exchange = journal.last
        if expected is not None and isinstance(exchange, ProxiedExchange):
            self._judge(exchange, expected)
        try:
            answer: JsonValue = response.json() if response.status_code < 300 else None
            return answer
        except ValueError:
            return None

    def _judge(self, exchange: ProxiedExchange, expected: _Expected) -> None:
        if exchange.failure is not None or exchange.status is None:
            return  # no answer: the report counts the failure, not drift
        found = []
        said = f"the contract answers {expected.condition} with {expected.status}"
        if exchange.status != expected.status:
            found.append(Difference(STATUS, "", str(exchange.status), said))
        elif exchange.code != expected.code:
            code = "none" if exchange.code is None else str(exchange.code)
            found.append(Difference(ERROR_CODE, "code", code, f"{said}, code {expected.code}"))
        known = {d.key for d in exchange.differences}
        found = [d for d in found if d.key not in known]
        if found:
            self.proxy.report.add_differences(exchange, found)


async def check(proxy: Proxy, token: str, asked: Asked) -> None:
    """Send the drift check's requests through `proxy` (see the module)."""
    transport = httpx.ASGITransport(app=proxy)
    # No timeout of its own: the proxy's, towards the target, is the one that counts.
    async with httpx.AsyncClient(
        transport=transport, base_url="http://proxy", timeout=None
    ) as http:
        try:
            await _requests(_Client(proxy, http, token), proxy, asked)
        finally:
            await proxy.aclose()


async def _requests(client: _Client, proxy: Proxy, asked: Asked) -> None:
    api, gateway = CONTROL_PLANE_PREFIX, proxy.router.gateway_prefix
    await client.send("GET", f"{api}/min-cli-version", token=False)
    host = urlsplit(proxy.target).netloc
    await client.send("GET", f"{api}/tenant-id", params={"hostName": host}, token=False)
    session = await client.send("GET", f"{api}/session")
    user = session.get("user") if isinstance(session, dict) else None
    subjects: list[tuple[JsonValue, JsonValue]] = []
    if isinstance(user, dict):
        subjects.append((user.get("subjectType"), user.get("id")))
        teams = user.get("teams")  # what the target answered: read with a check, as all of it
        if isinstance(teams, list):
            subjects += [("team", team.get("id")) for team in teams if isinstance(team, dict)]
    for subject_type, subject_id in subjects:
        if isinstance(subject_type, str) and isinstance(subject_id, str):
            query = {"subjectType": subject_type, "subjectId": subject_id}
            await client.send("GET", f"{api}/role-bindings/generate-manifest", params=query)
    for job in asked.jobs:
        for page in range(asked.max_pages):
            pages = {"limit": PAGE, "offset": page * PAGE}
            runs = await client.send("GET", f"{api}/jobs/{quote(job, safe='')}/runs", params=pages)
            if not isinstance(runs, dict) or not runs.get("data"):
                break
    for secret in asked.secrets:
        await client.send("POST", f"{api}/secrets/deployments", json={"secretIds": [secret]})
    for response in asked.responses:
        path = f"{gateway}/responses/{quote(response, safe='')}"
        await client.send("GET", path)
        await client.send("GET", path, params={"stream": "true"})
        await client.send("GET", f"{path}/input_items")
    models = await client.send("GET", f"{gateway}/models")
    listed = models.get("data") if isinstance(models, dict) else None
    if isinstance(listed, list) and listed and isinstance(listed[0], dict):
        await client.send("GET", f"{gateway}/models/{quote(str(listed[0].get('id')), safe='')}")
    if asked.create_token is not None:
        name = quote(asked.create_token, safe="")
        await client.send("GET", f"{api}/personal-access-tokens/{name}")
    await _named_by_answers(client, asked)
    # The documented errors a read-only request can meet.
    await client.send(
        "GET", f"{api}/session", token=False, expected=_Expected(401, 40101, "a missing token")
    )
    neither = _Expected(400, 40002, "a role-binding query of neither mode")
    await client.send("GET", f"{api}/role-bindings/generate-manifest", expected=neither)
    unknown_job = _Expected(404, 40406, "an unknown job")
    await client.send("GET", f"{api}/jobs/{UNKNOWN_JOB}/runs", expected=unknown_job)
    unknown_response = _Expected(404, 40407, "an unknown model response")
    await client.send("GET", f"{gateway}/responses/{UNKNOWN_RESPONSE}", expected=unknown_response)
    unknown_model = _Expected(404, 40420, "an unknown model")
    await client.send("GET", f"{gateway}/models/{UNKNOWN_MODEL}", expected=unknown_model)
    zero = _Expected(400, 40001, "a limit of 0")
    job = asked.jobs[0] if asked.jobs else UNKNOWN_JOB
    path = f"{api}/jobs/{quote(job, safe='')}/runs"
    await client.send("GET", path, params={"limit": 0}, expected=zero)
    await by_example(client, proxy)


async def _named_by_answers(client: _Client, asked: Asked) -> None:
    """What the target's own answers name: each job's application, by id and by FQN; the
    newest finalised artifact and model version, by id, with their artifact and files."""
    api = CONTROL_PLANE_PREFIX
    for job in asked.jobs:
        application = await client.send("GET", f"{api}/apps/{quote(job, safe='')}")
        data = application.get("data") if isinstance(application, dict) else None
        fqn = data.get("fqn") if isinstance(data, dict) else None
        if isinstance(fqn, str):
            await client.send("GET", f"{api}/fqn/app", params={"fqn": fqn})
    for versions, owners, owner in (
        ("artifact-versions", "artifacts", "artifact_id"),
        ("model-versions", "models", "model_id"),
    ):
        page = await client.send("GET", f"{api}/{versions}", params={"limit": 1})
        found = page.get("data") if isinstance(page, dict) else None
        if not isinstance(found, list) or not found or not isinstance(found[0], dict):
            continue
        version_id, owner_id = found[0].get("id"), found[0].get(owner)
        if isinstance(version_id, str):
            await client.send("GET", f"{api}/{versions}/{quote(version_id, safe='')}")
            await client.send("POST", f"{api}/artifact-versions/files", json={"id": version_id})
        if isinstance(owner_id, str):
            await client.send("GET", f"{api}/{owners}/{quote(owner_id, safe='')}")


async def by_example(client: _Client, proxy: Proxy) -> None:
    """Every operation that only reads and that nothing above asked: its catalog example,
    where that needs nothing of the mock's default world (no path parameter, no object
    named), so that a new such operation of the contract is checked as it is."""
    asked = {entry.operation_id for entry in proxy.journal}
    operations = contract.operations()
    for operation_id, entry in catalog.PLATFORM.items():
        example = entry.example
        if operation_id in asked or not entry.read_only or example is None:
            continue
        if example.needs_a_world():
            continue
        gateway = operations[operation_id].document == contract.GATEWAY_SPEC
        root = proxy.router.gateway_prefix if gateway else ""
        await client.send(
            example.method, root + example.path, params=dict(example.query), json=example.body
        )
