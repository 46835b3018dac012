"""Clients whose transport is the mock (`platform_mock.http_client()`, `async_http_client()`,
`client()`): every layer a request over TCP meets, with no socket, and one world with the
clients that do use TCP."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import openai
import pytest
from truefoundry_sdk import AsyncTrueFoundry, TrueFoundry

from mock_server.pytest_plugin import MockHandle
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, http_client

DEMO = "resp_0000000000000000000000000000demo"


def _runs_path(platform_mock: MockHandle) -> str:
    return f"/jobs/{platform_mock.store.deployments.application_named('trainer').id}/runs"


def test_in_process_answer_is_the_tcp_answer(platform_mock: MockHandle):
    path = _runs_path(platform_mock)
    params: dict[str, str | int] = {"limit": 5, "order": "asc"}
    with platform_mock.client() as inside:
        in_process = inside.get(path, params=params)
    with http_client(
        base_url=platform_mock.api_url, headers={"Authorization": f"Bearer {platform_mock.token}"}
    ) as outside:
        over_tcp = outside.get(path, params=params)
    assert (in_process.status_code, in_process.content) == (over_tcp.status_code, over_tcp.content)
    assert in_process.headers["content-type"] == over_tcp.headers["content-type"]


def test_in_process_request_is_journaled_as_the_tests(platform_mock: MockHandle, request):
    with platform_mock.client() as api:
        api.get("/personal-access-tokens/ci")
    (entry,) = platform_mock.journal.calls("getOrCreatePersonalAccessToken")
    assert (entry.status, entry.test) == (200, request.node.nodeid)


def test_in_process_request_that_breaks_the_contract_is_refused_and_counted(
    platform_mock: MockHandle,
):
    before = platform_mock.mock.report.violation_count
    with platform_mock.client() as api:
        response = api.get("/personal-access-tokens/ci", params={"page_size": 3})
    assert response.status_code == 400
    assert response.json()["details"][0]["field"] == "page_size"
    assert platform_mock.mock.report.violation_count == before + 1


def test_in_process_request_without_a_token_is_401(platform_mock: MockHandle):
    with platform_mock.http_client() as bare:
        response = bare.get(CONTROL_PLANE + "/personal-access-tokens/ci")
    assert (response.status_code, response.json()["code"]) == (401, 40101)


def test_a_dropped_connection_is_a_remote_protocol_error(platform_mock: MockHandle):
    platform_mock.fault("getOrCreatePersonalAccessToken", drop=True)
    with platform_mock.client() as api, pytest.raises(httpx.RemoteProtocolError):
        api.get("/personal-access-tokens/ci")


def test_a_delay_is_a_real_delay(platform_mock: MockHandle):
    platform_mock.fault("getOrCreatePersonalAccessToken", delay_ms=200)
    started = time.monotonic()
    with platform_mock.client() as api:
        assert api.get("/personal-access-tokens/ci").status_code == 200
    assert time.monotonic() - started >= 0.2


def test_an_injected_status_carries_its_rule(platform_mock: MockHandle):
    rule = platform_mock.fault("getOrCreatePersonalAccessToken", status=503)
    with platform_mock.client() as api:
        response = api.get("/personal-access-tokens/ci")
    assert (response.status_code, response.headers["x-platform-mock-fault"]) == (503, rule.id)


def test_in_process_and_tcp_clients_see_one_world(platform_mock: MockHandle):
    group = platform_mock.store.secrets.group_named("llm-keys").resource.id
    with platform_mock.client() as api:
        assert api.delete(f"/secret-groups/{group}").status_code == 200
    with http_client(
        base_url=platform_mock.api_url, headers={"Authorization": f"Bearer {platform_mock.token}"}
    ) as outside:
        assert outside.delete(f"/secret-groups/{group}").status_code == 404


def test_async_client_calls_the_mock_on_the_callers_loop(platform_mock: MockHandle):
    async def ask() -> int:
        async with platform_mock.async_http_client(
            headers={"Authorization": f"Bearer {platform_mock.token}"}
        ) as api:
            response = await api.get(CONTROL_PLANE + "/personal-access-tokens/ci")
            return response.status_code

    assert asyncio.run(ask()) == 200


def test_sync_client_works_inside_a_running_loop(platform_mock: MockHandle):
    async def ask() -> int:
        with platform_mock.client() as api:
            return api.get("/personal-access-tokens/ci").status_code

    assert asyncio.run(ask()) == 200


def test_in_process_and_tcp_requests_at_once_are_each_journaled_once(platform_mock: MockHandle):
    headers = {"Authorization": f"Bearer {platform_mock.token}"}
    failures: list[BaseException] = []

    def send(client: httpx.Client) -> None:
        try:
            with client:
                for _ in range(20):
                    assert client.get("/personal-access-tokens/ci").status_code == 200
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    clients = [platform_mock.client() for _ in range(3)]
    clients += [http_client(base_url=platform_mock.api_url, headers=headers) for _ in range(3)]
    threads = [threading.Thread(target=send, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=budget(60))
    assert failures == []
    assert len(platform_mock.journal.calls("getOrCreatePersonalAccessToken")) == 120
    assert len(platform_mock.store.world.tokens) == 1  # one token named ci, made once


def test_platform_sdk_pages_job_runs_in_process(platform_mock: MockHandle):
    platform = TrueFoundry(
        base_url=platform_mock.url,
        api_key=platform_mock.token,
        httpx_client=platform_mock.http_client(timeout=budget(60), follow_redirects=True),
    )
    trainer = platform_mock.store.deployments.application_named("trainer").id
    runs = list(platform.jobs.list_runs(trainer, limit=7))
    assert len(runs) == len(platform_mock.store.world.job_runs[trainer])


def test_async_platform_sdk_reads_job_runs_in_process(platform_mock: MockHandle):
    async def first_page() -> int:
        platform = AsyncTrueFoundry(
            base_url=platform_mock.url,
            api_key=platform_mock.token,
            httpx_client=platform_mock.async_http_client(timeout=budget(60), follow_redirects=True),
        )
        trainer = platform_mock.store.deployments.application_named("trainer").id
        page = await platform.jobs.list_runs(trainer, limit=5)
        return len(page.items)

    assert asyncio.run(first_page()) == 5


def test_openai_reads_the_gateway_in_process(platform_mock: MockHandle):
    gateway = openai.OpenAI(
        base_url=platform_mock.gateway_url,
        api_key=platform_mock.token,
        http_client=platform_mock.http_client(),  # type: ignore[arg-type]  # openai's types name its own httpx2
        max_retries=0,
    )
    assert gateway.responses.retrieve(DEMO).id == DEMO


def test_async_openai_reads_the_gateway_in_process(platform_mock: MockHandle):
    async def retrieve() -> str:
        gateway = openai.AsyncOpenAI(
            base_url=platform_mock.gateway_url,
            api_key=platform_mock.token,
            http_client=platform_mock.async_http_client(),  # type: ignore[arg-type]  # as above
            max_retries=0,
        )
        return (await gateway.responses.retrieve(DEMO)).id

    assert asyncio.run(retrieve()) == DEMO
