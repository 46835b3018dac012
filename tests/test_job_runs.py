"""Operation 7, GET /jobs/{jobId}/runs: order, filters, sorting, pagination, fields and errors.

The default fixtures give the `trainer` job one run in each of the nine statuses plus 16
generated runs; the scale tests add 10,000 more and walk every page.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from mock_server.contract import documents as contract
from tests.conftest import assert_error

# The run statuses of the source document, restated here and not read from the spec, so
# that a test can check the spec against the source; every other test uses the spec's.
SOURCE_STATUSES = (
    "CREATED",
    "SCHEDULED",
    "RUNNING",
    "FINISHED",
    "FAILED",
    "TERMINATION_REQUESTED",
    "TERMINATING",
    "TERMINATED",
    "UNKNOWN",
)


def _statuses() -> tuple[str, ...]:
    """The statuses of a run, as the contract lists them."""
    listed = contract.component(contract.CONTROL_PLANE_SPEC, "JobRunStatus")["enum"]
    assert isinstance(listed, list)
    return tuple(map(str, listed))


STATUSES = _statuses()
BOB = "bob@acme.example"  # a user's slug is the e-mail, the triggeredBy filter takes it

# The fields the platform's clients require on every run (decisions doc, section 7).
REQUIRED_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "name": str,
    "applicationName": str,
    "deploymentVersion": str,
    "createdAt": (int, float),
    "command": str,
    "totalRetries": (int, float),
    "status": str,
}


# What each sortBy key orders by, read from the run as the API returns it (spec description:
# deploymentVersion numerically, triggeredBy and status by their string values). None is a
# run without the key (no duration yet): such runs come after all others, in either order.
SORT_KEYS: dict[str, Callable[[dict], Any]] = {
    "startTime": lambda run: run["createdAt"],
    "duration": lambda run: run["duration"],
    "deploymentVersion": lambda run: int(run["deploymentVersion"]),
    "triggeredBy": lambda run: run["triggeredBy"],
    "status": lambda run: run["status"],
}

SORTINGS = [
    pytest.param(sort_by, order, id=f"{sort_by}-{order}")
    for sort_by in SORT_KEYS
    for order in ("asc", "desc")
]


def _is_ordered(runs: list[dict], sort_by: str, order: str) -> bool:
    """Keys in `order`, and the runs without a key (None) after all the others."""
    keys = [SORT_KEYS[sort_by](run) for run in runs]
    present = [key for key in keys if key is not None]
    if keys[: len(present)] != present:
        return False
    pairs = list(itertools.pairwise(present))
    if order == "asc":
        return all(a <= b for a, b in pairs)
    return all(a >= b for a, b in pairs)


@pytest.fixture
def trainer(store):
    return store.deployments.application_named("trainer")


@pytest.fixture
def runs_path(trainer) -> str:
    return f"/jobs/{trainer.id}/runs"


@pytest.fixture
def all_runs(api: httpx.Client, runs_path: str, store, trainer) -> list[dict]:
    """Every run of the trainer job, unfiltered, in the default order (one page holds them)."""
    response = api.get(runs_path)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["pagination"]["total"] == len(store.world.job_runs[trainer.id]) <= 100
    return body["data"]


def _ids(runs: list[dict]) -> list[str]:
    return [run["id"] for run in runs]


def _get_ok(api: httpx.Client, path: str, params: Any = None) -> dict:
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


# --- default order and pagination --------------------------------------------------------


def test_default_order_is_newest_first(all_runs, store, trainer):
    assert {run.id for run in store.world.job_runs[trainer.id]} == set(_ids(all_runs))
    created = [run["createdAt"] for run in all_runs]
    assert created == sorted(created, reverse=True)


def test_default_pagination_is_limit_100_offset_0(api, runs_path, store, trainer):
    body = _get_ok(api, runs_path)
    total = len(store.world.job_runs[trainer.id])
    assert body["pagination"] == {"total": total, "offset": 0, "limit": 100}
    assert len(body["data"]) == total


def test_page_is_the_slice_of_the_full_order(api, runs_path, all_runs):
    body = _get_ok(api, runs_path, {"limit": 10, "offset": 10})
    assert body["pagination"] == {"total": len(all_runs), "offset": 10, "limit": 10}
    assert _ids(body["data"]) == _ids(all_runs[10:20])


def test_page_past_the_end_is_empty_with_the_true_total(api, runs_path, all_runs):
    body = _get_ok(api, runs_path, {"limit": 10, "offset": len(all_runs) + 5})
    assert body["data"] == []
    assert body["pagination"] == {"total": len(all_runs), "offset": len(all_runs) + 5, "limit": 10}


def test_total_reflects_the_filters(api, runs_path, all_runs):
    failed = [run for run in all_runs if run["status"] == "FAILED"]
    body = _get_ok(api, runs_path, {"status": "FAILED", "limit": 1})
    assert len(failed) >= 1
    assert body["pagination"]["total"] == len(failed)
    assert _ids(body["data"]) == _ids(failed[:1])


# --- fields of a run ---------------------------------------------------------------------


def test_every_run_carries_the_required_fields(all_runs):
    for run in all_runs:
        for name, kind in REQUIRED_FIELDS.items():
            assert isinstance(run.get(name), kind), (name, run)
        assert run["status"] in STATUSES, run


def test_spec_run_statuses_are_those_of_the_source_document():
    assert STATUSES == SOURCE_STATUSES


def test_fixture_runs_cover_every_status(all_runs):
    assert {run["status"] for run in all_runs} == set(STATUSES)


def test_runs_name_their_job_and_its_deployment(all_runs, trainer):
    for run in all_runs:
        assert (run["applicationId"], run["applicationName"]) == (trainer.id, "trainer")
        assert run["deploymentId"] == trainer.deployment_ids[int(run["deploymentVersion"])], run


def test_duration_is_end_minus_creation_for_ended_runs_and_null_otherwise(all_runs):
    ended = [run for run in all_runs if run["endTime"] is not None]
    unended = [run for run in all_runs if run["endTime"] is None]
    assert ended and unended
    for run in ended:
        assert run["duration"] == run["endTime"] - run["createdAt"], run
    for run in unended:
        assert run["duration"] is None, run


def test_times_are_epoch_milliseconds(all_runs):
    # Fixture: FINISHED, createdAt 2025-12-01T09:00:00Z, durationSeconds 1800, version 1.
    created = datetime(2025, 12, 1, 9, 0, tzinfo=UTC)
    (finished,) = [
        run
        for run in all_runs
        if run["createdAt"] == int(created.timestamp() * 1000) and run["status"] == "FINISHED"
    ]
    assert finished["duration"] == 1800 * 1000
    assert finished["endTime"] == finished["createdAt"] + 1800 * 1000


# --- filters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statuses",
    [
        pytest.param(["FAILED"], id="one-status"),
        pytest.param(["FAILED", "RUNNING"], id="two-statuses"),
    ],
)
def test_status_filter_with_repeated_keys_keeps_only_those_statuses(
    api, runs_path, all_runs, statuses
):
    params = [("status", status) for status in statuses]
    body = _get_ok(api, runs_path, params)
    expected = [run for run in all_runs if run["status"] in statuses]
    assert {run["status"] for run in expected} == set(statuses)
    assert _ids(body["data"]) == _ids(expected)
    assert body["pagination"]["total"] == len(expected)


@pytest.mark.parametrize(
    "slugs",
    [
        pytest.param(["bob@acme.example"], id="one-slug"),
        pytest.param(["alice@acme.example", "carol@acme.example"], id="two-slugs"),
    ],
)
def test_triggered_by_filter_keeps_runs_of_those_slugs(api, runs_path, all_runs, slugs):
    body = _get_ok(api, runs_path, [("triggeredBy", slug) for slug in slugs])
    expected = [run for run in all_runs if run["triggeredBySubject"]["subjectSlug"] in slugs]
    assert 0 < len(expected) < len(all_runs)
    assert _ids(body["data"]) == _ids(expected)


def test_triggered_by_with_a_comma_is_one_slug_not_a_list(api, runs_path, all_runs):
    # The contract's arrays are repeated keys: `a,b` is one value, a slug no one has.
    assert any(run["triggeredBySubject"]["subjectSlug"] == BOB for run in all_runs)
    body = _get_ok(api, runs_path, [("triggeredBy", f"{BOB},carol@acme.example")])
    assert body["pagination"]["total"] == 0


@pytest.mark.parametrize(
    "versions",
    [
        pytest.param(["1"], id="version-1"),
        pytest.param(["2"], id="version-2"),
        pytest.param(["1", "2"], id="both-versions"),
    ],
)
def test_version_numbers_filter_keeps_runs_of_those_versions(api, runs_path, all_runs, versions):
    body = _get_ok(api, runs_path, [("versionNumbers", version) for version in versions])
    expected = [run for run in all_runs if run["deploymentVersion"] in versions]
    assert expected
    assert _ids(body["data"]) == _ids(expected)


def _assert_search_finds(api, runs_path, all_runs, prefix: str, target: dict) -> None:
    """`searchPrefix` answers the runs whose name or id starts with the prefix: the target
    among them, not every run."""
    body = _get_ok(api, runs_path, {"searchPrefix": prefix})
    expected = [
        run for run in all_runs if run["name"].startswith(prefix) or run["id"].startswith(prefix)
    ]
    assert target in expected and len(expected) < len(all_runs)
    assert _ids(body["data"]) == _ids(expected)


def test_search_prefix_matches_a_run_name_prefix(api, runs_path, all_runs):
    target = all_runs[3]
    _assert_search_finds(api, runs_path, all_runs, target["name"][:-2], target)


def test_search_prefix_matches_a_run_id_prefix(api, runs_path, all_runs):
    target = all_runs[5]
    _assert_search_finds(api, runs_path, all_runs, target["id"][: len(target["id"]) - 6], target)


def test_search_prefix_does_not_match_inside_a_name(api, runs_path, all_runs):
    inner = all_runs[0]["name"][1:]
    assert not any(run["name"].startswith(inner) or run["id"].startswith(inner) for run in all_runs)
    assert _get_ok(api, runs_path, {"searchPrefix": inner})["data"] == []


def test_filters_combine_with_and(api, runs_path, all_runs):
    statuses, slug, version = {"RUNNING", "TERMINATING", "UNKNOWN"}, BOB, "2"
    params = [("status", s) for s in sorted(statuses)]
    params += [("triggeredBy", slug), ("versionNumbers", version)]
    body = _get_ok(api, runs_path, params)
    expected = [
        run
        for run in all_runs
        if run["status"] in statuses
        and run["triggeredBy"] == slug
        and run["deploymentVersion"] == version
    ]
    # Each filter alone keeps more runs, so a union (OR) would show more than expected.
    assert expected
    assert len(expected) < min(
        sum(run["status"] in statuses for run in all_runs),
        sum(run["triggeredBy"] == slug for run in all_runs),
        sum(run["deploymentVersion"] == version for run in all_runs),
    )
    assert _ids(body["data"]) == _ids(expected)
    assert body["pagination"]["total"] == len(expected)


# --- sorting -----------------------------------------------------------------------------


@pytest.mark.parametrize(("sort_by", "order"), SORTINGS)
def test_sort_by_key_and_order_gives_an_ordered_list(api, runs_path, all_runs, sort_by, order):
    body = _get_ok(api, runs_path, {"sortBy": sort_by, "order": order})
    assert sorted(_ids(body["data"])) == sorted(_ids(all_runs))
    assert _is_ordered(body["data"], sort_by, order), [
        SORT_KEYS[sort_by](run) for run in body["data"]
    ]


@pytest.mark.parametrize("order", [pytest.param("asc", id="asc"), pytest.param("desc", id="desc")])
def test_runs_without_duration_sort_after_all_others(api, runs_path, order):
    durations = [
        run["duration"]
        for run in _get_ok(api, runs_path, {"sortBy": "duration", "order": order})["data"]
    ]
    nulls = durations.count(None)
    assert 0 < nulls < len(durations)
    assert durations[-nulls:] == [None] * nulls


@pytest.mark.parametrize(
    ("sort_by", "order"),
    [
        pytest.param(sort_by, order, id=f"{sort_by}-{order}")
        for sort_by in ("deploymentVersion", "triggeredBy", "status")
        for order in ("asc", "desc")
    ],
)
def test_ties_are_broken_by_id_ascending(api, runs_path, sort_by, order):
    runs = _get_ok(api, runs_path, {"sortBy": sort_by, "order": order})["data"]
    groups: dict[Any, list[str]] = {}
    for run in runs:
        groups.setdefault(SORT_KEYS[sort_by](run), []).append(run["id"])
    assert any(len(ids) > 1 for ids in groups.values())
    for key, ids in groups.items():
        assert ids == sorted(ids), (key, ids)


# --- access and errors -------------------------------------------------------------------


def test_unknown_job_is_404(api):
    body = assert_error(api.get("/jobs/app-does-not-exist/runs"), 404, 40406)
    assert "app-does-not-exist" in body["message"]


def test_service_application_is_422(api, store):
    chat_api = store.deployments.application_named("chat-api")
    assert chat_api.type == "service"
    assert_error(api.get(f"/jobs/{chat_api.id}/runs"), 422, 42201)


def test_caller_without_grant_on_the_workspace_is_403(as_user, runs_path):
    carol = as_user("carol@acme.example")
    assert_error(carol.get(runs_path), 403, 40301)


def test_team_workspace_viewer_may_list_runs(as_user, runs_path, all_runs):
    bob = as_user("bob@acme.example")
    body = _get_ok(bob, runs_path)
    assert _ids(body["data"]) == _ids(all_runs)


@pytest.mark.platform_mock(expect_violations=True)
def test_missing_token_is_401(anonymous, runs_path):
    assert_error(anonymous.get("/api/svc/v1" + runs_path), 401, 40101)


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_status_value_is_400(api, runs_path):
    body = assert_error(api.get(runs_path, params={"status": "DONE"}), 400, 40001)
    assert [d["field"].split("[")[0] for d in body["details"]] == ["status"]
    assert body["details"][0]["location"] == "query"


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("limit", "0", id="limit-0"),
        pytest.param("limit", "1001", id="limit-1001"),
        pytest.param("offset", "-1", id="offset-minus-1"),
        pytest.param("limit", "abc", id="limit-not-a-number"),
    ],
)
def test_out_of_contract_paging_is_400_naming_the_field(api, runs_path, field, value):
    body = assert_error(api.get(runs_path, params={field: value}), 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("query", field)]


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_query_parameter_is_400_naming_it(api, runs_path):
    body = assert_error(api.get(runs_path, params={"pageSize": "10"}), 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("query", "pageSize")]
    assert "pageSize" in body["message"]


@pytest.mark.platform_mock(expect_violations=True)
def test_limit_given_twice_is_400(api, runs_path):
    response = api.get(runs_path, params=[("limit", "5"), ("limit", "10")])
    body = assert_error(response, 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("query", "limit")]


# --- scale: 10,000 more runs, walked page by page ----------------------------------------

SCALE_RUNS = 10_000


@pytest.mark.parametrize(("sort_by", "order"), SORTINGS)
def test_pages_of_10000_runs_add_up_exactly(api, runs_path, store, trainer, sort_by, order):
    store.jobs.generate_runs(trainer, SCALE_RUNS)
    expected_ids = {run.id for run in store.world.job_runs[trainer.id]}
    assert len(expected_ids) == SCALE_RUNS + 26

    walked: list[dict] = []
    totals: set[int] = set()
    offset = 0
    for _ in range(len(expected_ids) // 1000 + 2):
        body = _get_ok(
            api, runs_path, {"limit": 1000, "offset": offset, "sortBy": sort_by, "order": order}
        )
        assert body["pagination"]["offset"] == offset
        totals.add(body["pagination"]["total"])
        if not body["data"]:
            break
        walked.extend(body["data"])
        offset += 1000
    else:
        pytest.fail("paging never reached an empty page")

    ids = _ids(walked)
    assert totals == {len(expected_ids)}
    assert len(ids) == len(set(ids)) == len(expected_ids)
    assert set(ids) == expected_ids
    assert _is_ordered(walked, sort_by, order)
