"""A whole client session against the mock, each step depending on the ones before it."""

from __future__ import annotations

import httpx

from tests.conftest import CONTROL_PLANE


def test_a_client_session_sees_the_platform_behave(server, store, api):
    # 1. A new personal access token, then every later call authenticates with it.
    issued = api.get("/personal-access-tokens/sdk-tests", params={"teamName": "ml-platform"})
    assert issued.json()["created"] is True
    client = httpx.Client(
        base_url=server.url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {issued.json()['token']}"},
    )
    again = client.get("/personal-access-tokens/sdk-tests").json()
    assert (again["created"], again["token"]) == (False, issued.json()["token"])

    # 2. Stage two versions of a model and tag the first; moving the tag needs force.
    manifest = {"type": "model-version", "name": "ranker", "ml_repo": "demo-repo",
                "source": {"type": "platform"}}  # fmt: skip
    first = client.post("/artifact-versions/stage", json={"manifest": manifest}).json()
    second = client.post("/artifact-versions/stage", json={"manifest": manifest}).json()
    assert first["artifact_id"] == second["artifact_id"]
    tag = {"artifact_version_id": first["id"], "tags": ["stable"]}
    assert client.put("/artifact-versions/tags", json=tag).status_code == 200
    move = {"artifact_version_id": second["id"], "tags": ["stable"]}
    assert client.put("/artifact-versions/tags", json=move).status_code == 409
    assert client.put("/artifact-versions/tags", json={**move, "force": True}).status_code == 200
    assert store.artifacts.version(first["id"]).tags == []
    assert store.artifacts.version(second["id"]).tags == ["stable"]

    # 3. Page through the failed and finished runs of the job; the pages add up.
    trainer = store.deployments.application_named("trainer").id
    seen, offset = [], 0
    while True:
        page = client.get(
            f"/jobs/{trainer}/runs",
            params={"status": ["FAILED", "FINISHED"], "limit": 2, "offset": offset},
        ).json()
        if not page["data"]:
            break
        seen += page["data"]
        offset += 2
    assert len(seen) == page["pagination"]["total"] > 0
    assert {run["status"] for run in seen} <= {"FAILED", "FINISHED"}

    # 4. Delete a secret group; its deployments disappear from operation 2.
    group = store.secrets.group_named("llm-keys")
    secret_ids = list(group.secrets)
    before = client.post("/secrets/deployments", json={"secretIds": secret_ids}).json()
    assert before["pagination"]["total"] > 0
    assert client.delete(f"/secret-groups/{group.resource.id}").status_code == 200
    after = client.post("/secrets/deployments", json={"secretIds": secret_ids}).json()
    assert after == {"data": [], "pagination": {"total": 0, "offset": 0, "limit": 100}}
    assert client.delete(f"/secret-groups/{group.resource.id}").status_code == 404
    client.close()
