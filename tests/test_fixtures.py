"""Fixture documents: schema checks with file, line and field; loading through the state rules."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from mock_server import MockConfig, PlatformMock
from mock_server.core.resources import package_file
from mock_server.fixtures.loader import (
    MAX_SHOWN_PROBLEMS,
    FixtureError,
    _read,
    check,
    default_fixtures,
    dump,
    fixture_schema,
    load,
    parse,
)
from mock_server.handlers import render
from mock_server.state import Store, fixture_format
from mock_server.state.deployments import check_manifest
from mock_server.state.identity import ROLE_ACTIONS, role_actions
from mock_server.state.jobs import ENDED, RUN_STATUSES
from mock_server.state.sources import Sources
from tests.conftest import new_store

WORLD = """\
tenant: acme
users:
  - email: ada@acme.example
clusters:
  - name: c1
workspaces:
  - name: w1
    cluster: c1
mlRepos:
  - name: repo
grants:
  - {subject: "user:ada@acme.example", role: tenant-admin, resource: "tenant:acme"}
applications:
  - name: nightly
    type: job
    workspace: w1
    deployments:
      - {manifest: {image: {type: image, image_uri: "r.example/n:1"}, trigger: {type: manual}}}
      - {manifest: {image: {type: image, image_uri: "r.example/n:2"}, trigger: {type: manual}}}
"""


LEVELS = {level: ROLE_ACTIONS[level] for level in ("admin", "editor", "viewer")}


def store_of(*texts: str, seed: int = 0) -> Store:
    return new_store(seed, [parse(text, f"doc{i}.yaml") for i, text in enumerate(texts)])


def test_default_fixtures_are_valid():
    assert default_fixtures()[0].data["tenant"] == "acme"


def test_default_world_has_a_job_run_in_every_status():
    store = new_store(0, default_fixtures())
    trainer = store.deployments.application_named("trainer")
    assert {run.status for run in store.world.job_runs[trainer.id]} == set(RUN_STATUSES)


def test_default_world_has_a_faulty_secret_integration():
    store = new_store(0, default_fixtures())
    assert not store.secrets.group_named("legacy-vault").integration_healthy


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "users:\n  - email: a@b.c\n  - slug: x\n",
            "bad.yaml:3: users[1]: 'email' is a required property",
            id="missing-required",
        ),
        pytest.param(
            "clusters:\n  - name: ok\n  - name: 'no spaces'\n",
            "bad.yaml:3: clusters[1].name: 'no spaces' does not match",
            id="pattern",
        ),
        pytest.param(
            "colours: [red]\n",
            "bad.yaml:1: (document): Additional properties",
            id="unknown-section",
        ),
        pytest.param(
            "grants:\n  - {subject: 'robot:x', role: r, resource: 'tenant:acme'}\n",
            "bad.yaml:2: grants[0].subject: 'robot:x' does not match",
            id="bad-reference",
        ),
        pytest.param("users: [\n", "bad.yaml:2: not valid YAML", id="yaml-syntax"),
        pytest.param(
            "applications:\n  - name: nightly\n    type: job\n    workspace: ml-team\n"
            "    deployments: [{manifest: {image: {type: image, image_uri: r/n:1}, "
            "trigger: {type: manual}}}]\n    runs:\n      - status: FAIL\n",
            "bad.yaml:7: applications[0].runs[0].status: 'FAIL' is not one of",
            id="inside-one-of-a-run",
        ),
    ],
)
def test_schema_errors_name_file_line_and_field(text, expected):
    with pytest.raises(FixtureError) as raised:
        parse(text, "bad.yaml")
    assert expected in str(raised.value)


def test_every_schema_violation_is_reported():
    with pytest.raises(FixtureError) as raised:
        parse("users:\n  - slug: x\nclusters:\n  - {}\n", "bad.yaml")
    assert str(raised.value).count("is a required property") == 2


def test_a_document_must_be_a_mapping():
    with pytest.raises(FixtureError, match="must be a mapping"):
        check(["not", "a", "mapping"], "list.yaml")


def test_reference_to_unknown_record_names_its_line():
    text = (
        WORLD
        + "  - name: other\n    type: job\n    workspace: nowhere\n"
        + "    deployments: [{manifest: {image: {type: image, image_uri: 'r.example/n:1'}, "
        + "trigger: {type: manual}}}]\n"
    )
    with pytest.raises(FixtureError) as raised:
        store_of(text)
    assert "doc0.yaml:20: applications[1]: no workspace named 'nowhere'" in str(raised.value)


def test_artifact_versions_go_through_the_staging_rules():
    manifest = "{type: model-version, name: m, ml_repo: nope, source: {type: platform}}"
    text = WORLD + f"artifactVersions:\n  - manifest: {manifest}\n"
    with pytest.raises(FixtureError, match="No ML repo named 'nope'"):
        store_of(text)


def test_tags_in_fixtures_follow_the_uniqueness_rule():
    version = "{type: artifact-version, name: d, ml_repo: repo, source: {type: platform}}"
    text = WORLD + (
        "artifactVersions:\n"
        f"  - {{manifest: {version}, tags: [prod]}}\n"
        f"  - {{manifest: {version}, tags: [prod]}}\n"
    )
    with pytest.raises(FixtureError, match="already on another version"):
        store_of(text)


VERSION = "{type: artifact-version, name: d, ml_repo: repo, source: {type: platform}}"
UUID = "0b0c7c5e-4d8f-4a31-9a3e-2f0d3c1b9e77"


def test_an_artifact_version_keeps_the_uuid_a_fixture_gives_it():
    store = store_of(WORLD + f"artifactVersions:\n  - {{manifest: {VERSION}, id: {UUID}}}\n")
    assert store.artifacts.version(UUID) is not None


def test_an_artifact_version_id_that_is_not_a_uuid_is_refused():
    text = WORLD + f"artifactVersions:\n  - {{manifest: {VERSION}, id: av-1}}\n"
    with pytest.raises(FixtureError, match=r"artifactVersions\[0\]\.id: 'av-1' does not match"):
        store_of(text)


def test_an_artifact_version_given_as_failed_is_failed():
    store = store_of(WORLD + f"artifactVersions:\n  - {{manifest: {VERSION}, failed: true}}\n")
    (version,) = store.world.artifact_versions.values()
    assert version.failed


def test_a_failed_artifact_version_with_tags_is_refused():
    text = WORLD + f"artifactVersions:\n  - {{manifest: {VERSION}, failed: true, tags: [a]}}\n"
    with pytest.raises(FixtureError, match="failed takes no tags"):
        store_of(text)


def test_ended_run_without_duration_is_rejected():
    text = WORLD + "    runs:\n      - {status: FINISHED, createdAt: '2025-01-01T00:00:00Z'}\n"
    with pytest.raises(FixtureError, match="FINISHED run needs duration"):
        store_of(text)


def test_generated_runs_are_consistent():
    store = store_of(WORLD + "    runs:\n      - {generate: 500}\n")
    nightly = store.deployments.application_named("nightly")
    runs = store.world.job_runs[nightly.id]
    users = {s.id for s in store.world.subjects.values() if s.type == "user"}
    assert len(runs) == 500
    assert len({run.id for run in runs}) == 500
    assert all(run.triggered_by.id in users for run in runs)
    assert all(run.deployment_version in nightly.deployment_ids for run in runs)
    assert all(
        (run.end_time_ms is not None and run.end_time_ms > run.created_at_ms)
        == (run.status in ENDED)
        for run in runs
    )


GENERATED_APPS = "  - {generate: 30, workspace: ml-team}\n"


def _generated_apps(seed: int = 0) -> list:
    store = new_store(seed, [*default_fixtures(), parse("applications:\n" + GENERATED_APPS)])
    default = {"trainer", "chat-api", "legacy-etl", "reporting"}
    apps = [a for a in store.world.applications.values() if a.name not in default]
    return [(a, [store.world.deployments[d] for d in a.deployment_ids.values()]) for a in apps]


def test_generated_applications_are_services_and_jobs_with_complete_manifests():
    apps = _generated_apps()
    assert {a.type for a, _ in apps} == {"service", "job"}
    for application, deployments in apps:
        for deployment in deployments:
            check_manifest(deployment.manifest)  # raises when incomplete for its kind
            assert deployment.manifest["type"] == application.type


def test_generated_applications_use_some_of_the_worlds_secrets():
    used = [d for _, deployments in _generated_apps() for d in deployments if d.secret_fqns]
    assert used


def test_generated_applications_follow_the_seed():
    def names(seed: int) -> list[str]:
        return [a.name for a, _ in _generated_apps(seed)]

    assert names(1) == names(1) != names(2)


def test_generated_runs_spread_over_every_status():
    store = store_of(WORLD + "    runs:\n      - {generate: 500}\n")
    nightly = store.deployments.application_named("nightly")
    assert {run.status for run in store.world.job_runs[nightly.id]} == set(RUN_STATUSES)


def test_later_documents_add_to_earlier_ones():
    store = store_of(WORLD, "users:\n  - email: bea@acme.example\n")
    assert store.identity.find_subject("user", "bea@acme.example") is not None


def test_explicit_ids_are_kept():
    store = store_of(WORLD.replace("  - name: repo\n", "  - name: repo\n    id: repo-fixed\n"))
    assert store.world.ml_repos["repo"].resource.id == "repo-fixed"


def test_run_times_come_from_the_fixture():
    created = "2025-03-04T05:06:07Z"
    store = store_of(WORLD + f"    runs:\n      - {{status: RUNNING, createdAt: '{created}'}}\n")
    run = store.world.job_runs[store.deployments.application_named("nightly").id][0]
    assert run.created_at_ms == int(datetime.fromisoformat(created).timestamp() * 1000)


def test_config_loads_extra_fixture_files_after_the_defaults(tmp_path: Path):
    extra = tmp_path / "extra.yaml"
    extra.write_text("users:\n  - email: eve@acme.example\n")
    mock = PlatformMock(MockConfig(fixtures=[extra]))
    assert mock.store.identity.find_subject("user", "eve@acme.example") is not None
    assert mock.store.identity.find_subject("user", "alice@acme.example") is not None


def test_without_default_fixtures_the_world_is_only_the_given_files(tmp_path: Path):
    world = tmp_path / "world.yaml"
    world.write_text(WORLD)
    mock = PlatformMock(MockConfig(fixtures=[world], default_fixtures=False))
    assert mock.store.identity.find_subject("user", "alice@acme.example") is None


def reloaded(document: Mapping[str, object], seed: int = 5) -> Store:
    """A store built from nothing but a dumped document (through JSON, as over HTTP)."""
    return new_store(seed, [check(json.loads(json.dumps(document)), "dump.json")])


def test_dump_of_the_default_world_rebuilds_it():
    original = dump(new_store(0, default_fixtures()))
    assert dump(reloaded(original)) == original


def test_dump_is_a_valid_fixture_document():
    check(dump(new_store(0, default_fixtures())), "dump.json")


def test_dump_after_api_changes_rebuilds_them(api, store):
    manifest = {"type": "model-version", "name": "sentiment", "ml_repo": "demo-repo",
                "source": {"type": "platform"}}  # fmt: skip
    staged = api.post("/artifact-versions/stage", json={"manifest": manifest}).json()
    api.put(
        "/artifact-versions/tags",
        json={"artifact_version_id": staged["id"], "tags": ["production"], "force": True},
    )
    api.get("/personal-access-tokens/ci", params={"teamName": "ml-platform"})
    api.delete(f"/secret-groups/{store.secrets.group_named('llm-keys').resource.id}")
    original = dump(store)
    assert dump(reloaded(original)) == original


def test_reloaded_dump_answers_the_api_alike(api, store):
    api.get("/personal-access-tokens/ci")
    copy = reloaded(dump(store))
    alice = copy.identity.default_user()
    caller = copy.identity.caller(alice.type, alice.id)
    assert caller is not None
    again = copy.tokens.get_or_create(caller, "ci", None)
    assert render.token_record(again) == api.get("/personal-access-tokens/ci").json()["data"]


# -- ids: a given id is one no other entity of the world holds -----------------------------------


WORLD_WITH_IDS = WORLD.replace(
    "  - email: ada@acme.example\n", "  - email: ada@acme.example\n    id: u-1\n"
)
RUN = "{id: r-1, status: RUNNING, createdAt: '2025-01-01T00:00:00Z'}"


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        pytest.param(
            [WORLD_WITH_IDS + "agents:\n  - name: a\n    id: u-1\n"],
            "doc0.yaml:23: agents[0].id: id 'u-1' is already taken by user 'ada@acme.example'",
            id="same-document",
        ),
        pytest.param(
            [WORLD_WITH_IDS, "teams:\n  - name: t\n    id: u-1\n"],
            "doc1.yaml:3: teams[0].id: id 'u-1' is already taken by user 'ada@acme.example'",
            id="later-document",
        ),
        pytest.param(
            [WORLD + f"    runs:\n      - {RUN}\n      - {RUN}\n"],
            "doc0.yaml:22: applications[0].runs[1].id: id 'r-1' is already taken by job run",
            id="nested-records",
        ),
    ],
)
def test_taken_id_names_file_line_and_field(texts, expected):
    with pytest.raises(FixtureError) as raised:
        store_of(*texts)
    assert expected in str(raised.value)


def _load_into_default_world(path: Path) -> None:
    PlatformMock(MockConfig(fixtures=[path]))


def _reset_with_extra(path: Path) -> None:
    PlatformMock(MockConfig()).reset(extra=[load(path)])


@pytest.mark.parametrize(
    "load_file",
    [
        pytest.param(_load_into_default_world, id="fixtures-option"),
        pytest.param(_reset_with_extra, id="marker"),
    ],
)
def test_fixture_file_giving_a_default_id_is_refused(tmp_path: Path, load_file):
    alice = new_store(0, default_fixtures()).identity.default_user()
    extra = tmp_path / "extra.yaml"
    extra.write_text(f"users:\n  - email: x@y\n    id: {alice.id}\n")

    with pytest.raises(FixtureError) as raised:
        load_file(extra)

    assert f"{extra}:3: users[0].id: id {alice.id!r} is already taken by user " in str(raised.value)


def test_fresh_id_never_repeats_a_given_one():
    sources = Sources(0)
    sources.new_id("tenant")
    next_user_id = sources.new_id("user")  # what the seed gives the first user without an id
    text = f"tenant: acme\nusers:\n  - {{email: bea@acme.example, id: {next_user_id}}}\n"
    store = store_of(text + "  - email: ada@acme.example\n")

    bea = store.identity.subject_named("user", "bea@acme.example")
    ada = store.identity.subject_named("user", "ada@acme.example")
    assert bea.id == next_user_id
    assert ada.id != next_user_id


def test_reset_with_an_extra_document_that_cannot_enter_keeps_the_world():
    mock = PlatformMock()
    alice = mock.store.identity.caller("user", mock.store.identity.default_user().id)
    assert alice is not None
    mock.store.tokens.get_or_create(alice, "kept", None)
    before = dump(mock.store)
    alice_id = mock.store.identity.default_user().id
    clash = check({"users": [{"email": "x@acme.example", "id": alice_id}]}, "clash.yaml")

    with pytest.raises(FixtureError, match="already taken"):
        mock.reset(extra=[clash])  # same seed: the rebuilt alice has that id again

    assert dump(mock.store) == before  # the token made since the last reset is still there


@pytest.mark.parametrize(
    "clock",
    [
        pytest.param("9999-12-31T23:59:59Z", id="no-room-for-a-token-lifetime"),
        pytest.param("1969-12-31T23:59:59Z", id="before-the-unix-epoch"),
    ],
)
def test_clock_outside_the_range_is_refused_with_file_and_line(clock):
    with pytest.raises(
        FixtureError,
        match=r"clock.yaml:1: clock: .*: times must be from 1970 up to \(not including\) 9000",
    ):
        new_store(0, [parse(f"clock: '{clock}'\ntenant: acme\n", "clock.yaml")])


# -- fixtures exactly as strict as the API ----------------------------------------------------

RUN = "{status: FINISHED, createdAt: '2025-12-01T09:00:00Z', durationSeconds: 5"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            WORLD + f"    runs:\n      - {RUN}, totalRetries: {2**70}}}\n",
            "applications[0].runs[0].totalRetries: 1180591620717411303424 is past the largest",
            id="integer-past-2^53",
        ),
        pytest.param(
            WORLD + f"    runs:\n      - {RUN[:-1]}1.0e+300}}\n",
            "applications[0].runs[0].durationSeconds: 1e+300 is greater than the maximum",
            id="duration-no-run-can-last",
        ),
        pytest.param(
            WORLD + "    runs:\n      - {status: RUNNING, createdAt: 2025-12-01T09:00:00Z}\n",
            "applications[0].runs[0].createdAt: datetime.datetime(2025, 12, 1, 9, 0, tzinfo",
            id="unquoted-yaml-timestamp",
        ),
        pytest.param(
            WORLD.replace(
                "email: ada@acme.example", 'email: ada@acme.example\n    displayName: "A\\udfff"'
            ),
            "doc0.yaml:4: not valid YAML: while parsing a quoted scalar, found invalid "
            "Unicode character escape code",
            id="lone-surrogate-escape",
        ),
        pytest.param(
            WORLD + "modelResponses:\n  - {id: resp_x, temperature: .inf}\n",
            "modelResponses[0]",
            id="infinite-number",
        ),
    ],
)
def test_value_no_response_can_carry_is_refused_with_its_line(text, expected):
    with pytest.raises(FixtureError, match=re.escape(expected)):
        store_of(text)


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        pytest.param("{resources: abc}", "manifest.resources", id="resources-a-string"),
        pytest.param("{mounts: abc}", "manifest.mounts", id="mounts-a-string"),
        pytest.param("{image: x}", "manifest.image", id="image-a-string"),
        pytest.param("{replicas: 2}", "manifest.image", id="service-without-image"),
    ],
)
def test_deployment_manifest_the_api_could_not_return_is_refused(manifest, field):
    text = (
        WORLD
        + "  - {name: web, type: service, workspace: w1, "
        + f"deployments: [{{manifest: {manifest}}}]}}\n"
    )
    with pytest.raises(FixtureError, match=rf"doc0.yaml:\d+: applications\[1\]: .*{field}"):
        store_of(text)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param("version: abc", "manifest.version", id="version-not-an-integer"),
        pytest.param("step: -1", "manifest.step", id="negative-step"),
        pytest.param("run_id: 5", "manifest.run_id", id="run-id-not-text"),
    ],
)
def test_artifact_manifest_is_checked_as_a_staging_request(change, field):
    manifest = (
        f"{{type: artifact-version, name: a, ml_repo: repo, source: {{type: platform}}, {change}}}"
    )
    text = WORLD + f"artifactVersions:\n  - manifest: {manifest}\n"
    with pytest.raises(FixtureError, match=rf"artifactVersions\[0\]: .*{re.escape(field)}"):
        store_of(text)


def test_yaml_alias_is_refused_with_its_line():
    text = "tenant: acme\nusers:\n  - &ada {email: ada@acme.example}\n  - *ada\n"
    with pytest.raises(FixtureError, match=r"bad.yaml:4: not valid YAML: .*alias \*ada"):
        parse(text, "bad.yaml")


def test_self_referencing_alias_is_refused():
    with pytest.raises(FixtureError, match="alias"):
        parse("tenant: acme\nusers: &loop [*loop]\n", "loop.yaml")


def test_billion_laughs_is_refused_before_it_grows():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(FixtureError, match="alias"):
        parse("\n".join(lines) + "\n", "laughs.yaml")


def test_world_without_a_tenant_is_refused_with_file_line_and_field():
    with pytest.raises(FixtureError, match=r"^solo.yaml:1: tenant: is required in the first"):
        new_store(0, [parse("users:\n  - email: ada@acme.example\n", "solo.yaml")])


def test_yaml_error_names_the_file_not_a_unicode_string():
    with pytest.raises(FixtureError) as raised:
        parse("users:\n  - {email: a@b.c\n", "typo.yaml")
    assert "typo.yaml:3" in str(raised.value)
    assert "<unicode string>" not in str(raised.value)


def test_record_time_outside_the_clock_range_is_refused_with_its_line():
    text = WORLD.replace(
        "grants:",
        "personalAccessTokens:\n  - {owner: ada@acme.example, "
        "name: late, createdAt: '9999-12-30T00:00:00Z'}\ngrants:",
    )
    with pytest.raises(
        FixtureError, match=r"personalAccessTokens\[0\]: 9999-12-30T00:00:00Z: times"
    ):
        store_of(text)


def test_yaml_nested_past_any_recursion_limit_is_refused():
    with pytest.raises(FixtureError, match=r"^deep.yaml:1: .*nest"):
        parse("a: " + "[" * 5000 + "]" * 5000 + "\n", "deep.yaml")


def test_yaml_repeated_key_is_refused_with_its_line():
    text = "tenant: acme\nusers:\n  - email: a1@b.c\nusers:\n  - email: a2@b.c\n"
    with pytest.raises(
        FixtureError, match=r"dup.yaml:4: not valid YAML: the key 'users' appears twice"
    ):
        parse(text, "dup.yaml")


# -- the fast reader: plain documents read as PyYAML reads them ----------------------------------

PLAIN_DOCUMENTS = [
    pytest.param((package_file("fixtures") / "default.yaml").read_text(), id="default-world"),
    pytest.param(
        "a: [1, -2, 0x1f, 1.5, .5e3, true, no, ~, null, '3', \"4\", !!str 5, x y]\n",
        id="scalars-of-every-kind",
    ),
    pytest.param("a: |\n  two\n  lines\nb: >\n  folded\n  text\n", id="block-scalars"),
    pytest.param("runs:\n" + "  - {status: FAILED, durationSeconds: 9}\n" * 3, id="flow-records"),
    pytest.param('{"a": {"b": [1, {"c": null}]}, "d": "e"}', id="json-text"),
]


@pytest.mark.parametrize("text", PLAIN_DOCUMENTS)
def test_a_plain_document_reads_as_pyyaml_reads_it(text):
    assert _read(text, "plain.yaml") == (yaml.safe_load(text), [])


def test_an_error_found_after_a_fast_read_still_names_its_line():
    text = "tenant: acme\nusers:\n  - email: ada@acme.example\n  - email: 5\n"
    with pytest.raises(FixtureError, match=r"^late.yaml:4: users\[1\]\.email: 5 is not"):
        parse(text, "late.yaml")


# -- every problem at once -------------------------------------------------------------------

THREE_PROBLEMS_IN_ONE_RUN = (
    WORLD
    + """\
    runs:
      - status: FAIL
        createdAt: "2026-01-01T00:00:00Z"
        durationSeconds: -3
        exitCode: "x"
"""
)


def problems_of(text: str, *earlier: str) -> list[str]:
    with pytest.raises(FixtureError) as raised:
        store_of(*earlier, text)
    return str(raised.value).splitlines()


def test_every_problem_of_one_record_is_reported_with_its_line():
    assert problems_of(THREE_PROBLEMS_IN_ONE_RUN) == [
        "doc0.yaml:21: applications[0].runs[0].status: 'FAIL' is not one of the allowed "
        "values; did you mean 'FAILED'?",
        "doc0.yaml:23: applications[0].runs[0].durationSeconds: -3 is less than the minimum of 0",
        "doc0.yaml:24: applications[0].runs[0].exitCode: 'x' is not of type 'integer'",
    ]


def test_every_record_that_cannot_enter_is_reported():
    text = WORLD + (
        "personalAccessTokens:\n"
        "  - {name: a, owner: nobody@acme.example}\n"
        "  - {name: b, owner: nobody-else@acme.example}\n"
    )
    lines = problems_of(text)
    assert [line.split(": ", 2)[:2] for line in lines] == [
        ["doc0.yaml:21", "personalAccessTokens[0]"],
        ["doc0.yaml:22", "personalAccessTokens[1]"],
    ]


def test_problems_past_the_cap_are_counted_not_listed():
    text = "users:\n" + "".join(f"  - {{email: {n}}}\n" for n in range(MAX_SHOWN_PROBLEMS + 5))
    lines = problems_of(text)
    assert len(lines) == MAX_SHOWN_PROBLEMS + 1
    assert lines[-1] == "... and 5 more problem(s)"


def test_misspelt_role_is_refused_naming_the_role_meant():
    text = WORLD.replace("role: tenant-admin", "role: tenant-admn")
    assert problems_of(text) == [
        "doc0.yaml:12: grants[0].role: 'tenant-admn' is not one of the allowed values; "
        "did you mean 'tenant-admin'?"
    ]


def test_roles_of_the_schema_are_each_resource_types_admin_editor_and_viewer():
    grant = fixture_schema()["properties"]["grants"]["items"]["properties"]
    pattern = re.fullmatch(r"\^\((.*)\):\.\+\$", grant["resource"]["pattern"])
    assert pattern is not None
    types = pattern.group(1).split("|")
    assert grant["role"]["enum"] == [f"{t}-{level}" for t in types for level in LEVELS]


def test_every_role_of_the_schema_grants_what_its_level_names():
    roles = fixture_schema()["properties"]["grants"]["items"]["properties"]["role"]["enum"]
    assert {role: role_actions(role) for role in roles} == {
        role: LEVELS[role.rsplit("-", 1)[1]] for role in roles
    }


# -- the tenant ------------------------------------------------------------------------------


def test_later_document_may_restate_the_tenant():
    store = store_of(WORLD, "tenant: acme\nusers:\n  - email: bo@acme.example\n")
    assert store.identity.tenant.name == "acme"


def test_later_document_naming_another_tenant_is_refused_and_changes_nothing():
    store = store_of(WORLD)
    tenant = store.identity.tenant
    with pytest.raises(FixtureError, match=r"later.yaml:1: tenant: the world's tenant is 'acme'"):
        store.load(parse("tenant: other\nusers:\n  - email: bo@acme.example\n", "later.yaml"))
    assert store.identity.tenant == tenant
    assert store.identity.find_subject("user", "bo@acme.example") is None


def test_later_document_giving_the_tenant_another_id_is_refused():
    store = store_of(WORLD)
    with pytest.raises(FixtureError, match="may restate it, not change it"):
        store.load(parse("tenant: {name: acme, id: tenant-0000000000000001}\n", "later.yaml"))


def test_character_yaml_does_not_allow_is_refused_with_file_and_line():
    with pytest.raises(FixtureError) as raised:
        parse('users:\n  - email: "a\x00b"\n', "nul.yaml")
    assert str(raised.value) == "nul.yaml:2: not valid YAML: character #x0000 is not allowed"


def test_sections_after_one_with_refused_records_are_not_tried():
    text = WORLD.replace("mlRepos:\n  - name: repo\n", "mlRepos:\n  - name: repo\n  - name: repo\n")
    text += "personalAccessTokens:\n  - {name: a, owner: nobody@acme.example}\n"
    lines = problems_of(text)
    assert len(lines) == 1 and "mlRepos[1]" in lines[0], lines


def test_the_fixture_writer_orders_sections_as_they_load_and_leaves_out_empty_ones():
    written = fixture_format.document(
        {"grants": [], "workspaces": [{"name": "w", "cluster": "c"}], "tenant": {"name": "t"}}
    )
    assert list(written) == ["tenant", "workspaces"]


def test_the_fixture_writer_refuses_a_section_the_format_lacks():
    with pytest.raises(ValueError, match="userz"):
        fixture_format.document({"userz": [{"email": "a@example.com"}]})
