"""The world's records for a person to browse (the live view): counted by kind, and listed a
page at a time, searched, read-only.

A page costs what it shows, not what the world holds: job runs (100,000 in a big world) are
counted from their lists' lengths, paged by slicing each job's run index in its newest-first
order, and searched through that index (a run's name or id by prefix, its status, the slug
of who triggered it, its job's name exactly). The other kinds hold what a person or a test
made (tens, or thousands at most) and are searched by a walk, for a word anywhere in the
record's names and ids. Each record is shown as the fixture document would write it, with
its id, and every credential in it hidden by the one masking rule (`mock_server.core.masking`:
a secret's values, a token's, and any credential-named field of a manifest or a stored
response) before it is listed or searched, so that a search cannot find what a page hides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

import orjson

from mock_server.core import masking
from mock_server.core.jsonvalue import JsonObject
from mock_server.state.entities import Application, JobRun
from mock_server.state.gateway import as_response
from mock_server.state.identity import reference
from mock_server.state.jobs import run_record
from mock_server.state.run_index import RunIndex
from mock_server.state.sources import iso
from mock_server.state.store import Store

RUNS = "runs"


@dataclass(frozen=True)
class Record:
    """One record as the view lists it: its id, a title, and the record itself."""

    id: str
    title: str
    record: JsonObject


def _record(record_id: str, title: str, record: Mapping[str, object]) -> Record:
    """A record as the view lists it (any record of the world, read as JSON): every
    credential in it hidden."""
    shown = masking.masked_text
    return Record(shown(record_id), shown(title), masking.masked(record))


@dataclass(frozen=True)
class Found:
    """A page of the records of a kind that a search found, and how many it found in all."""

    records: list[Record]
    total: int


def counts(store: Store) -> dict[str, int]:
    """How many records of each kind the world holds, in the order of `KINDS`."""
    with store.lock:
        world = store.world
        by_type: dict[str, int] = {}
        for type_, _ in world.subjects:
            by_type[type_] = by_type.get(type_, 0) + 1
        return {
            "users": by_type.get("user", 0),
            "teams": by_type.get("team", 0),
            "virtualAccounts": by_type.get("virtualaccount", 0),
            "agents": by_type.get("agent", 0),
            "grants": len(world.grants),
            "roleBindings": len(world.role_bindings),
            "applications": len(world.applications),
            RUNS: sum(len(runs) for runs in world.job_runs.values()),
            "secretGroups": len(world.secret_groups),
            "artifactVersions": len(world.artifact_versions),
            "personalAccessTokens": len(world.tokens),
            "models": len(world.models),
            "modelResponses": len(world.model_responses),
            "scriptedReplies": len(world.scripts),
        }


def records(store: Store, kind: str, query: str = "", offset: int = 0, limit: int = 50) -> Found:
    """The records of a kind that `query` finds (all when empty), `limit` from `offset`;
    KeyError for a kind the world has not."""
    if kind == RUNS:
        with store.lock:
            return _runs(store, query.strip(), offset, limit)
    lister = _LISTERS[kind]
    with store.lock:
        words = query.lower().split()
        if not words:  # counted from the container, not walked
            total = counts(store)[kind]
            return Found(list(islice(lister(store), offset, offset + limit)), total)
        found = [r for r in lister(store) if all(w in _searched(r) for w in words)]
        return Found(found[offset : offset + limit], len(found))


def _searched(record: Record) -> str:
    """What a search looks in: the record's title and everything it shows."""
    return f"{record.title} {orjson.dumps(record.record).decode()}".lower()


def _subjects(type_: str) -> Callable[[Store], Iterator[Record]]:
    def listed(store: Store) -> Iterator[Record]:
        world = store.world
        for subject in world.subjects.values():
            if subject.type != type_:
                continue
            shown: JsonObject = {
                "id": subject.id,
                "name": subject.name,
                "displayName": subject.display_name,
            }
            if type_ == "team":
                shown["members"] = [world.subjects[("user", m)].name for m in subject.members]
            if type_ == "user":
                teams = store.identity.teams_of(subject.id)
                shown["teams"] = [team.name for team in teams]
            yield _record(subject.id, subject.name, shown)

    return listed


def _grants(store: Store) -> Iterator[Record]:
    world = store.world
    for index, grant in enumerate(world.grants):
        subject = reference(world.subjects[(grant.subject_type, grant.subject_id)])
        resource = world.resources[(grant.resource_type, grant.resource_id)]
        target = f"{grant.resource_type}:{resource.name}"
        yield _record(
            f"grant-{index + 1}",
            f"{subject} {grant.role} {target}",
            {"subject": subject, "role": grant.role, "resource": target},
        )


def _role_bindings(store: Store) -> Iterator[Record]:
    """The role bindings applied through the API, as they were applied."""
    for binding in store.world.role_bindings.values():
        yield Record(
            binding.id,
            binding.name,
            {
                "id": binding.id,
                "name": binding.name,
                "subjects": [reference(s) for s in binding.subjects],
                "permissions": [
                    {"resource": f"{r.type}:{r.name}", "role": role}
                    for r, role in binding.permissions
                ],
                "createdBy": reference(binding.created_by),
                "createdAt": iso(binding.created_at),
                "updatedAt": iso(binding.updated_at),
            },
        )


def _applications(store: Store) -> Iterator[Record]:
    world = store.world
    for app in world.applications.values():
        workspace = world.resources[("workspace", app.workspace_id)]
        yield _record(
            app.id,
            f"{app.name} ({app.type})",
            {
                "id": app.id,
                "name": app.name,
                "type": app.type,
                "fqn": app.fqn,
                "workspace": workspace.name,
                "activeVersion": app.active_version,
                "deployments": [
                    {"version": version, "id": deployment_id}
                    for version, deployment_id in sorted(app.deployment_ids.items())
                ],
                "runs": len(world.job_runs.get(app.id, ())),
                "createdBy": app.created_by.name,
            },
        )


def _run(run: JobRun) -> Record:
    """A run as its fixture records it, with its job, and who triggered it by slug."""
    shown = {"id": run.id, "name": run.name, "job": run.application.name, **run_record(run)}
    shown["triggeredBy"] = run.triggered_by.slug
    return _record(run.id, f"{run.name} {run.status}", shown)


def _index(store: Store, app_id: str) -> RunIndex:
    return store.jobs.run_index(app_id)


def _runs(store: Store, query: str, offset: int, limit: int) -> Found:
    """Runs, each job's newest first, found through each job's run index."""
    world = store.world
    selected: list[tuple[Application, RunIndex, set[str] | None]] = []
    for app_id, runs in world.job_runs.items():
        if not runs:
            continue
        app = world.applications[app_id]
        index = _index(store, app_id)
        if not query or query == app.name:
            selected.append((app, index, None))  # every run of the job
            continue
        found = index.with_prefix(query)
        found |= index.by_status.get(query.upper(), set())
        found |= index.by_slug.get(query, set())
        if found:
            selected.append((app, index, found))
    total = sum(len(index.runs) if ids is None else len(ids) for _, index, ids in selected)
    page: list[Record] = []
    skip = offset
    for _, index, ids in selected:
        size = len(index.runs) if ids is None else len(ids)
        if skip >= size:
            skip -= size
            continue
        ordered = index.order("startTime", "desc")
        wanted = limit - len(page)
        if ids is None:
            chosen: Iterable[JobRun] = ordered[skip : skip + wanted]
        else:
            chosen = islice((run for run in ordered if run.id in ids), skip, skip + wanted)
        page.extend(_run(run) for run in chosen)
        skip = 0
        if len(page) == limit:
            break
    return Found(page, total)


def _secret_groups(store: Store) -> Iterator[Record]:
    for group in store.world.secret_groups.values():
        yield _record(
            group.resource.id,
            group.resource.name,
            {
                "id": group.resource.id,
                "name": group.resource.name,
                "fqn": group.resource.fqn,
                "integration": {
                    "fqn": group.integration_fqn,
                    "healthy": group.integration_healthy,
                },
                "secrets": [
                    {
                        "key": secret.key,
                        "id": secret.id,
                        "fqn": secret.fqn,
                        "values": [v.value for v in secret.versions],
                    }
                    for secret in group.secrets.values()
                ],
            },
        )


def _artifact_versions(store: Store) -> Iterator[Record]:
    world = store.world
    for version in world.artifact_versions.values():
        artifact = world.artifacts[version.artifact_id]
        yield _record(
            version.id,
            f"{artifact.name} v{version.version} {version.status}",
            {
                "id": version.id,
                "fqn": version.fqn,
                "artifact": artifact.name,
                "type": artifact.type,
                "version": version.version,
                "status": version.status,
                "tags": list(version.tags),
                "files": [
                    {"path": path, "size": stored.size, "md5": stored.md5}
                    for path, stored in version.files.items()
                ],
                "createdAt": iso(version.created_at),
                "createdBy": reference(version.created_by),
                "storageRoot": version.storage_root,
                "manifest": version.manifest,
            },
        )


def _tokens(store: Store) -> Iterator[Record]:
    for token in store.world.tokens.values():
        owner = reference(token.owner)
        yield _record(
            token.id,
            f"{token.name} of {owner}",
            {
                "id": token.id,
                "name": token.name,
                "owner": owner,
                "teamName": token.team_name,
                "createdAt": iso(token.created_at),
                "expiresAt": iso(token.expires_at),
                "lastAccessedAt": iso(token.last_accessed_at) if token.last_accessed_at else None,
                "revoked": token.revoked,
                "token": token.token,
            },
        )


def _model_responses(store: Store) -> Iterator[Record]:
    inputs = store.world.response_inputs
    for response in store.world.model_responses.values():
        response_id = as_response(response)["id"]
        shown = {**response, "input": inputs[response_id]} if response_id in inputs else response
        yield _record(
            response_id,
            f"{response_id} {response.get('model', '')}",
            shown,
        )


def _models(store: Store) -> Iterator[Record]:
    for model in store.gateway.models():
        yield _record(model.id, f"{model.id} {model.kind}", model.record())


def _scripts(store: Store) -> Iterator[Record]:
    for script in store.gateway.scripts():
        about = script.input if script.input is not None else script.pattern or "any input"
        yield _record(script.id, f"{script.model or 'any model'}: {about}", script.shown())


# How the records of each kind but job runs are walked (runs go through their index).
_LISTERS: dict[str, Callable[[Store], Iterator[Record]]] = {
    "users": _subjects("user"),
    "teams": _subjects("team"),
    "virtualAccounts": _subjects("virtualaccount"),
    "agents": _subjects("agent"),
    "grants": _grants,
    "roleBindings": _role_bindings,
    "applications": _applications,
    "secretGroups": _secret_groups,
    "artifactVersions": _artifact_versions,
    "personalAccessTokens": _tokens,
    "models": _models,
    "modelResponses": _model_responses,
    "scriptedReplies": _scripts,
}
# Every kind the view lists, in the order it shows them (and `counts` counts them).
KINDS = (
    "users",
    "teams",
    "virtualAccounts",
    "agents",
    "grants",
    "roleBindings",
    "applications",
    RUNS,
    "secretGroups",
    "artifactVersions",
    "personalAccessTokens",
    "models",
    "modelResponses",
    "scriptedReplies",
)
