"""Jobs triggered and terminated as `tfy trigger job` and `tfy terminate job` do: the job
looked up (`getIdFromFqn`, `getApplication`), a run started (`triggerJob`) that operation 7
lists first, and asked to terminate (`terminateJob`), moving through the documented
statuses at each listing, through operation 7's filters."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import assert_error, token_of

TRAINER_FQN = "prod-cluster:ml-team:trainer"
ACTIVE = "deployment-trainer-2"
RUNS = "/jobs/app-trainer/runs"


def trigger(api: httpx.Client, **body) -> dict:
    answer = api.post("/jobs/trigger", json={"deploymentId": ACTIVE, **body})
    assert answer.status_code == 200, answer.text
    return answer.json()


def terminate(api: httpx.Client, name: str, deployment: str = ACTIVE) -> httpx.Response:
    return api.post("/jobs/terminate", params={"deploymentId": deployment, "jobRunName": name})


def newest(api: httpx.Client, **query) -> dict:
    answer = api.get(RUNS, params={"limit": 1, **query})
    assert answer.status_code == 200, answer.text
    (run,) = answer.json()["data"]
    return run


# -- looking the job up ------------------------------------------------------------------------


def test_an_application_fqn_names_its_ids(api, store):
    answer = api.get("/fqn/app", params={"fqn": TRAINER_FQN})
    workspace = store.identity.resource_named("workspace", "ml-team").id
    assert answer.json() == {"applicationId": "app-trainer", "workspaceId": workspace}


def test_a_deployment_fqn_names_its_applications_ids(api):
    answer = api.get("/fqn/app", params={"fqn": f"{TRAINER_FQN}:1"})
    assert answer.json()["applicationId"] == "app-trainer"


def test_an_fqn_of_no_application_is_404_40425(api):
    assert_error(api.get("/fqn/app", params={"fqn": "prod-cluster:ml-team:none"}), 404, 40425)


def test_an_application_is_read_with_its_active_deployment_and_workspace(api, store):
    data = api.get("/apps/app-trainer").json()["data"]
    assert (data["activeDeploymentId"], data["deployment"]["id"]) == (ACTIVE, ACTIVE)
    assert (data["activeVersion"], data["lastVersion"]) == (2, 2)
    cluster = store.identity.resource_named("cluster", "prod-cluster").id
    assert data["workspace"] == {
        "name": "ml-team",
        "fqn": "prod-cluster:ml-team",
        "clusterId": cluster,
    }


def test_reading_an_application_needs_read_on_its_workspace(api, mock):
    carol = httpx.Client(
        base_url=api.base_url,
        headers={"Authorization": f"Bearer {token_of(mock, 'carol@acme.example')}"},
    )
    assert_error(carol.get("/apps/app-trainer"), 403, 40301)
    assert_error(carol.get("/fqn/app", params={"fqn": TRAINER_FQN}), 403, 40301)


def test_an_unknown_application_is_404_40425(api):
    assert_error(api.get("/apps/nope"), 404, 40425)


# -- triggering --------------------------------------------------------------------------------


def test_a_triggered_run_is_created_by_the_caller_with_the_deployments_command(api):
    answer = trigger(api)
    run = answer["data"]
    assert (run["name"], answer["jobRunName"]) == (answer["jobRunName"], run["name"])
    assert (run["status"], run["deploymentVersion"], run["triggeredBy"]) == (
        "CREATED",
        "2",
        "alice@acme.example",
    )
    assert run["command"] == "python train.py --epochs 3"


def test_operation_7_lists_a_triggered_run_first(api):
    name = trigger(api)["jobRunName"]
    assert newest(api)["name"] == name


def test_a_triggered_run_moves_to_running_at_the_listings_and_stays(api):
    name = trigger(api)["jobRunName"]
    assert [newest(api)["status"] for _ in range(3)] == ["SCHEDULED", "RUNNING", "RUNNING"]
    assert newest(api, status="RUNNING")["name"] == name


def test_a_command_given_replaces_the_deployments(api):
    run = trigger(api, input={"command": ["python", "train.py", "--lr", "0.1 0.2"]})["data"]
    assert run["command"] == "python train.py --lr '0.1 0.2'"


def test_params_are_added_to_the_deployments_command(api):
    run = trigger(api, input={"params": {"epochs": "9"}})["data"]
    assert run["command"] == "python train.py --epochs 3 --epochs 9"


def test_an_alias_names_the_run_and_is_made_unique(api):
    first = trigger(api, metadata={"job_run_name_alias": "smoke"})["jobRunName"]
    second = trigger(api, metadata={"job_run_name_alias": "smoke"})["jobRunName"]
    assert (first, second) == ("smoke", "smoke-2")


def test_triggering_a_service_is_422_42201(api, store):
    chat = store.deployments.application_named("chat-api")
    deployment = chat.deployment_ids[chat.active_version]
    assert_error(api.post("/jobs/trigger", json={"deploymentId": deployment}), 422, 42201)


def test_triggering_an_unknown_deployment_is_404_40425(api):
    assert_error(api.post("/jobs/trigger", json={"deploymentId": "nope"}), 404, 40425)


def test_triggering_needs_write_on_the_workspace(api, mock, store):
    bob = httpx.Client(
        base_url=api.base_url,
        headers={"Authorization": f"Bearer {token_of(mock, 'bob@acme.example')}"},
    )
    before = len(store.world.job_runs["app-trainer"])
    assert_error(bob.post("/jobs/trigger", json={"deploymentId": ACTIVE}), 403, 40301)
    assert len(store.world.job_runs["app-trainer"]) == before


# -- terminating ------------------------------------------------------------------------------


def test_a_terminated_run_moves_through_the_documented_statuses(api):
    name = trigger(api)["jobRunName"]
    answer = terminate(api, name)
    assert answer.json() == {
        "message": f"Termination of run {name} requested",
        "jobRunStatus": "TERMINATION_REQUESTED",
    }
    assert [newest(api)["status"] for _ in range(3)] == ["TERMINATING", "TERMINATED", "TERMINATED"]


def test_a_terminated_run_has_an_end_and_the_exit_code_of_sigterm(api):
    terminate(api, trigger(api)["jobRunName"])
    newest(api)
    run = newest(api)
    assert (run["status"], run["exitCode"]) == ("TERMINATED", 143)
    assert run["duration"] == run["endTime"] - run["createdAt"] > 0


@pytest.mark.parametrize("status", ["TERMINATING", "TERMINATED"])
def test_each_status_of_a_terminating_run_is_found_by_operation_7s_filter(api, status):
    name = trigger(api)["jobRunName"]
    terminate(api, name)
    if status == "TERMINATED":
        newest(api)
    assert newest(api, status=status)["name"] == name


def test_a_fixtures_running_run_is_terminated_too(api, store):
    assert terminate(api, "trainer-nightly").json()["jobRunStatus"] == "TERMINATION_REQUESTED"
    statuses = {r.name: r.status for r in store.world.job_runs["app-trainer"]}
    assert statuses["trainer-nightly"] == "TERMINATION_REQUESTED"


def test_asking_again_while_it_terminates_changes_nothing(api):
    name = trigger(api)["jobRunName"]
    terminate(api, name)
    assert terminate(api, name).json()["jobRunStatus"] == "TERMINATION_REQUESTED"


def test_terminating_an_ended_run_is_409_40906(api, store):
    finished = next(r for r in store.world.job_runs["app-trainer"] if r.status == "FINISHED")
    assert_error(terminate(api, finished.name), 409, 40906)


def test_terminating_a_run_the_job_lacks_is_404_40426(api):
    assert_error(terminate(api, "no-such-run"), 404, 40426)


def test_a_run_of_the_fixtures_never_moves_by_itself(api, store):
    before = {r.id: r.status for r in store.world.job_runs["app-trainer"]}
    api.get(RUNS)
    api.get(RUNS)
    assert {r.id: r.status for r in store.world.job_runs["app-trainer"]} == before


def test_the_terminate_body_the_cli_also_sends_is_not_read(api):
    name = trigger(api)["jobRunName"]
    answer = api.post(
        "/jobs/terminate",
        params={"deploymentId": ACTIVE, "jobRunName": name},
        json={"deploymentId": ACTIVE, "jobRunName": name},
    )
    assert answer.json()["jobRunStatus"] == "TERMINATION_REQUESTED"
