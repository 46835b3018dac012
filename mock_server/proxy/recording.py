"""Recording a world: what a target platform's answers show of its entities, written as a
fixture document the mock loads (`platform-mock serve --fixtures FILE`).

The proxy hands the recorder each answered request of the contract (`observe`): its
parameters, its JSON body, the status, the answer's JSON, and who the caller is (the claims
of its token). Each operation shows part of the world, kept by id:

- `getSession`, `getTenantId`: the tenant (name and id), the caller, its teams (the caller
  a member of each), and the roles it holds;
- `generateRoleBindingManifests`: grants, with their subjects and resources (by fqn: a
  workspace's names its cluster), and the id of the subject or resource asked about;
- `listJobRuns`: the job (id, name), the id of each deployment version its runs name, the
  runs in full, and the users who triggered them;
- `listSecretDeployments`: applications with their workspace, cluster, active version and
  the deployments of it in full (manifest, ids, time, creator); the secrets the manifests
  name (group and key), and a secret's id when a request asked for that one secret alone;
- `getModelResponse`, `createModelResponse`: the stored response, whole;
  `listModelResponseInputItems` its input items, `deleteModelResponse` its end;
- `listModels`, `retrieveModel`: the gateway's models; `createEmbedding`: that its model embeds,
  and its dimension;
- `getOrCreatePersonalAccessToken`: the token's record (never its value);
- `stageArtifactVersion`, `applyArtifactVersionTags`, `markArtifactVersionStageFailure`,
  `deleteSecretGroup`: the versions staged (manifest, ids, ML repo and its storage root),
  their tags and failures, and the groups gone;
- `createOrUpdateArtifactVersion`, `createOrUpdateModelVersion`, the listings and reads of
  versions, artifacts and models: the versions finalised (without their files, which no
  answer shows);
- `applyManifest`, `deleteManifest`: role bindings applied (whole) or gone, secret groups with
  their integration and their secrets' ids and keys, versions finalised;
- `getIdFromFqn`, `getApplication`, `triggerJob`, `terminateJob`: applications with their
  workspace and active deployment, and the runs triggered or terminating.

Ids are kept, so the recorded requests find the same records in the mock. What no answer
shows but a fixture needs is filled in, and the document's header comment names each
placeholder: a secret integration (`recorded:unknown`), a secret's value (`<hidden>`), a
workspace and cluster for a job seen only through its runs, the manifests of deployment
versions no answer showed (a copy of a version seen, or a minimal one for its kind). A
successful request shows access, too: where no recorded grant gives the caller the access an
answer proves (reading a job's runs, writing an ML repo), the least grant that does is added
and named in the header. Credentials never enter the document: token values are not read,
secret values are placeholders, every request body and answer is masked as it is observed
(`mock_server.core.masking`, with the caller's own credential, which the recorder is given
only to hide), and the document as a whole once more before it is written.

The file is inert text, as every output of the mock: a string holding what the one escaping
rule escapes (`mock_server.core.escape`: a line or paragraph separator, a control, a format
character, a workflow command of GitHub or Azure) is written double-quoted, with YAML's own
escapes for those characters, and each note of the header is escaped as a line of text; a
note can never become a line of YAML. And what is written is what was meant: the text is
read back and compared with the document before it replaces the file, and is refused
(`RecordingRefused`) if they differ.

The recorder is thread-safe and holds what it was shown, once per id: it grows with the world
seen, not with the traffic.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import yaml

from mock_server.core import escape
from mock_server.core.jsonvalue import JsonObject
from mock_server.core.masking import HIDDEN, SECRET_REFERENCE, masked, masked_text
from mock_server.state import fixture_format
from mock_server.state.entities import SUBJECT_TYPES
from mock_server.state.fixture_format import BoundSubjectRecord, FixtureDocument, RunRecord
from mock_server.state.identity import RESOURCE_TYPES
from mock_server.state.jobs import ENDED, NEXT_STATUS

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # fixture-schema.yaml's `name`
UNKNOWN_INTEGRATION = "recorded:unknown"
PLACEHOLDER_CLUSTER = "recorded-cluster"
PLACEHOLDER_WORKSPACE = "recorded-workspace"
PLACEHOLDER_USER = "recorded-caller@recorded.invalid"
KINDS_OF_APPLICATION = frozenset({"job", "service"})
# The roles a fixture may grant (fixture-schema.yaml): a kind of resource and a level.
ROLES = frozenset(
    f"{kind}-{level}" for kind in RESOURCE_TYPES for level in ("admin", "editor", "viewer")
)
# Resources of a kind a fixture's `resources` section holds (the others have sections of their own).
OTHER_RESOURCES = frozenset(
    {
        "repository",
        "provider-integration",
        "provider-account",
        "tracing-project",
        "agent-app",
        "mcp-server",
    }
)
LEVELS = {"read": ("viewer", "editor", "admin"), "write": ("editor", "admin"), "delete": ("admin",)}
ARTIFACT_FOLDERS = ("artifacts", "models", "agent-skills")
MOVING = frozenset(NEXT_STATUS)  # statuses a run triggered or terminating moves on from


@dataclass(frozen=True)
class TokenClaims:
    """Who sent a request, from its token's claims: a subject's type, id and name (a user's
    e-mail), and the tenant the token names."""

    subject_type: str
    subject_id: str
    name: str
    tenant: str | None = None

    @property
    def reference(self) -> str:
        return f"{self.subject_type}:{self.name}"


# What the answers showed of each entity, until the document is written: the records whose
# fields arrive one answer at a time are kept as the fields seen, and written whole by the
# fixture format's writers (`mock_server.state.fixture_format`) with the document.


class _Subject(TypedDict, total=False):
    id: str
    displayName: str


class _Workspace(TypedDict):
    cluster: str
    id: NotRequired[str]


class _Resource(TypedDict):
    fqn: str
    id: NotRequired[str]


class _SecretGroup(TypedDict):
    secrets: dict[str, str | None]  # key -> id, when an answer showed it
    id: NotRequired[str]
    integration: NotRequired[str | None]


class _Repo(TypedDict, total=False):
    id: str
    storageRoot: str


class _Model(TypedDict, total=False):
    type: str
    dimensions: int
    ownedBy: str
    created: int


class _Permission(TypedDict):
    resource: str  # `type:name`, as a grant names it
    resourceType: str
    resourceFqn: str
    role: str


@dataclass
class _Binding:
    name: str
    subjects: list[BoundSubjectRecord]
    permissions: list[_Permission]
    id: str | None = None
    created_by: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class _Version:
    id: str
    manifest: JsonObject
    artifact_id: str | None = None
    created_by: str | None = None
    tags: list[str] = field(default_factory=list)
    staged: bool = False  # until an answer shows it finalised
    failed: bool = False
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class _Application:
    id: str
    name: str | None = None
    type: str | None = None
    workspace: str | None = None
    application_set_id: str | None = None
    created_by: str | None = None
    active_version: int | None = None
    deployments: dict[int, fixture_format.DeploymentRecord] = field(default_factory=dict)
    deployment_ids: dict[int, str] = field(default_factory=dict)  # of versions seen by runs
    runs: dict[str, RunRecord] = field(default_factory=dict)


@dataclass
class _World:
    tenant: str | None = None
    tenant_id: str | None = None
    # Subjects by (type, name): their id and display name when known.
    subjects: dict[tuple[str, str], _Subject] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)  # team -> user e-mails
    clusters: dict[str, str | None] = field(default_factory=dict)
    workspaces: dict[str, _Workspace] = field(default_factory=dict)
    resources: dict[tuple[str, str], _Resource] = field(default_factory=dict)
    groups: dict[str, _SecretGroup] = field(default_factory=dict)  # secret groups by name
    repos: dict[str, _Repo] = field(default_factory=dict)  # ML repos by name
    grants: dict[tuple[str, str, str], None] = field(default_factory=dict)  # an ordered set
    bound: set[str] = field(default_factory=set)  # subjects whose role bindings were read
    session_roles: dict[str, list[str]] = field(default_factory=dict)  # subject -> roles
    access: dict[tuple[str, str, str], None] = field(default_factory=dict)  # what answers proved
    applications: dict[str, _Application] = field(default_factory=dict)
    versions: dict[str, _Version] = field(default_factory=dict)  # artifact versions by id
    role_bindings: dict[str, _Binding] = field(default_factory=dict)  # applied, by name
    tokens: dict[tuple[str, str], fixture_format.TokenRecord] = field(default_factory=dict)
    responses: dict[str, JsonObject] = field(default_factory=dict)
    inputs: dict[str, dict[str, JsonObject]] = field(default_factory=dict)  # by response
    models: dict[str, _Model] = field(default_factory=dict)  # the gateway's, by id
    first_user: str | None = None


class Recorder:
    """What a target's answers showed of its world; `document()` is the fixture document."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._world = _World()

    def observe(
        self,
        operation_id: str,
        *,
        path_params: dict[str, str],
        query: dict[str, list[str]],
        body: Any,
        status: int,
        answer: Any,
        caller: TokenClaims | None,
        credentials: tuple[str, ...] = (),
    ) -> None:
        """Learn from one answered request of the contract (only a 2xx shows anything);
        `credentials` are the caller's own, hidden wherever the body or answer holds them."""
        if not 200 <= status < 300:
            return
        learn = LEARNERS.get(operation_id)
        if learn is None:
            return
        body, answer = masked(body, "", credentials), masked(answer, "", credentials)
        single = {key: values[0] for key, values in query.items() if len(values) == 1}
        with self._lock:
            world = self._world
            if caller is not None:
                _caller_seen(world, caller)
            # An answer of another shape than the contract's (drift, which the report shows)
            # teaches nothing more than what was learnt before the surprise.
            with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError, IndexError):
                learn(world, path_params, single, body, answer, caller)

    def document(self) -> tuple[FixtureDocument, list[str]]:
        """The fixture document of the world recorded, and the placeholders and inferred
        grants it holds (one line each, for its header)."""
        with self._lock:
            return _Writer(copy.deepcopy(self._world)).document()

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the fixture document to a YAML file (whole, or not at all); RecordingRefused
        if the text would not read back as the document."""
        unmasked, notes = self.document()
        document: FixtureDocument = masked(unmasked)
        text = written(document, notes)
        try:
            read = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise RecordingRefused(
                f"the recording would not read back as YAML{where}: nothing was written"
            ) from None
        if read != document:
            raise RecordingRefused(
                "the recording would not read back as the world recorded "
                f"(sections {', '.join(_differing(read, document))}): nothing was written"
            )
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=target.parent, delete=False, suffix=".part"
        ) as out:
            out.write(text)
        os.replace(out.name, target)
        return target


LINE_WIDTH = 1 << 30  # no string is folded over lines: each stays as one escaped line


class RecordingRefused(Exception):
    """A recording that would not read back as what was recorded: not written."""


class _Dumper(yaml.SafeDumper):
    """YAML whose strings are plain, or quoted as YAML must; double-quoted wherever the one
    escaping rule would escape something of them, so that YAML's escapes can stand for it."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if escape.text(value) != value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def written(document: FixtureDocument, notes: list[str]) -> str:
    """The text of a recording: its header, each note escaped and masked as a line of text,
    then the document. Every line is escaped as a text (`escape.lines`): a character the
    rule escapes can only be in a double-quoted string (`_Dumper`), where its visible escape
    (`\\u2028`, `\\x5b`) is YAML's escape of the same character."""
    header = [
        "# A world recorded by platform-mock from a platform's answers; load it with",
        "# `platform-mock serve --no-default-fixtures --fixtures FILE`.",
    ]
    if notes:
        header.append("# Filled in where no answer showed it:")
        header += [f"#   - {escape.text(masked_text(note))}" for note in notes]
    body = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=LINE_WIDTH
    )
    return escape.lines("\n".join(header) + "\n" + body)


def _differing(read: object, document: FixtureDocument) -> list[str]:
    if not isinstance(read, dict):
        return ["(the whole document)"]
    sections: dict[str, object] = {**document}
    return [key for key in dict.fromkeys([*sections, *read]) if read.get(key) != sections.get(key)]


# -- learning, per operation ---------------------------------------------------------------


def _caller_seen(world: _World, caller: TokenClaims) -> None:
    _subject(world, caller.subject_type, caller.name, caller.subject_id)
    if caller.subject_type == "user" and world.first_user is None:
        world.first_user = caller.name
    if caller.tenant and world.tenant is None:
        world.tenant = caller.tenant


def _subject(
    world: _World, type_: str, name: Any, subject_id: Any = None, display: Any = None
) -> str | None:
    """Record a subject; its reference `type:name`, or None if a fixture cannot name it."""
    if type_ not in SUBJECT_TYPES or not isinstance(name, str):
        return None
    if type_ == "user" and not re.fullmatch(r"[^@\s]+@[^@\s]+", name):
        return None
    if type_ != "user" and not NAME.fullmatch(name):
        return None
    known = world.subjects.setdefault((type_, name), _Subject())
    if isinstance(subject_id, str) and subject_id:
        known["id"] = subject_id
    if isinstance(display, str) and display:
        known["displayName"] = display
    return f"{type_}:{name}"


def _subject_reference(world: _World, reference: Any) -> str | None:
    """A subject reference of the contract (`createdBySubject`, `triggeredBySubject`)."""
    if not isinstance(reference, dict):
        return None
    return _subject(
        world,
        str(reference.get("subjectType")),
        reference.get("subjectSlug"),
        reference.get("subjectId"),
        reference.get("subjectDisplayName"),
    )


def _tenant(world: _World, name: Any, tenant_id: Any = None) -> None:
    if isinstance(name, str) and NAME.fullmatch(name):
        world.tenant = world.tenant or name
        if isinstance(tenant_id, str) and tenant_id and name == world.tenant:
            world.tenant_id = tenant_id


def _learn_session(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    user = answer["user"]
    _tenant(world, user.get("tenantName"))
    for account in user.get("accounts") or ():
        _tenant(world, account.get("name"), account.get("id"))
    subject_type = user.get("subjectType") or "user"
    name = user.get("email") if subject_type == "user" else user.get("subjectSlug")
    reference = _subject(world, subject_type, name or user.get("subjectSlug"), user.get("id"))
    if reference is None:
        return
    if subject_type == "user" and world.first_user is None:
        world.first_user = name
    world.session_roles[reference] = [r for r in user.get("roles") or () if isinstance(r, str)]
    for team in user.get("teams") or ():
        if _subject(world, "team", team.get("name"), team.get("id")) and subject_type == "user":
            members = world.members.setdefault(team["name"], [])
            if name not in members:
                members.append(name)


def _learn_tenant(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    _tenant(world, answer["tenantName"])


def _resource(world: _World, type_: str, fqn: Any, resource_id: Any = None) -> str | None:
    """Record a resource named by its fqn; its reference `type:name`, or None if a fixture
    cannot name it."""
    if not isinstance(fqn, str) or not fqn:
        return None
    rid = resource_id if isinstance(resource_id, str) and resource_id else None
    parts = fqn.split(":")
    name = parts[-1]
    if not NAME.fullmatch(name):
        return None
    if type_ == "tenant":
        _tenant(world, fqn, rid)
        return f"tenant:{fqn}" if world.tenant == fqn else None
    if type_ == "cluster":
        world.clusters[name] = rid or world.clusters.get(name)
    elif type_ == "workspace":
        if len(parts) != 2 or not NAME.fullmatch(parts[0]):
            return None
        world.clusters.setdefault(parts[0], None)
        workspace = world.workspaces.setdefault(name, _Workspace(cluster=parts[0]))
        if rid:
            workspace["id"] = rid
    elif type_ == "secret-group":
        group = world.groups.setdefault(name, _SecretGroup(secrets={}))
        if rid:
            group["id"] = rid
    elif type_ == "mlf-project":
        repo = world.repos.setdefault(name, _Repo())
        if rid:
            repo["id"] = rid
    elif type_ == "agent":
        return _subject(world, "agent", name, rid) and f"agent:{name}"
    elif type_ in OTHER_RESOURCES:
        resource = world.resources.setdefault((type_, name), _Resource(fqn=fqn))
        if rid:
            resource["id"] = rid
    else:
        return None
    return f"{type_}:{name}"


def _learn_role_bindings(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    asked_subject = (query.get("subjectType"), query.get("subjectId"))
    asked_resource = (query.get("resourceType"), query.get("resourceId"))
    only_tenant = query.get("includeOnlyTenantRoles") == "true"
    for manifest in answer["data"]:
        for subject in manifest.get("subjects") or ():
            same = subject.get("type") == asked_subject[0]
            subject_id = asked_subject[1] if same else None
            reference = _subject(world, subject.get("type"), subject.get("name"), subject_id)
            if reference is None:
                continue
            if same and not only_tenant:
                world.bound.add(reference)
            for permission in manifest.get("permissions") or ():
                kind = permission.get("resourceType")
                resource_id = asked_resource[1] if kind == asked_resource[0] else None
                resource = _resource(world, kind, permission.get("resourceFqn"), resource_id)
                role = permission.get("role")
                if resource is not None and role in ROLES:
                    world.grants[(reference, role, resource)] = None
    if asked_subject[0] and not answer["data"] and not only_tenant:
        # Asked about a subject of no role: its bindings are known to be none.
        for (type_, name), known in world.subjects.items():
            if type_ == asked_subject[0] and known.get("id") == asked_subject[1]:
                world.bound.add(f"{type_}:{name}")


def _application(world: _World, application_id: str) -> _Application:
    return world.applications.setdefault(application_id, _Application(application_id))


def _iso(epoch_ms: Any) -> str:
    moment = datetime.fromtimestamp(int(epoch_ms) / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _learn_job_runs(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    job = _application(world, params["jobId"])
    job.type = "job"
    for run in answer["data"]:
        _run_seen(world, job, run)
    if caller is not None and answer["data"]:
        world.access[(caller.reference, "read", f"job:{job.id}")] = None


def _run_seen(world: _World, job: _Application, run: Any) -> None:
    job.name = job.name or run.get("applicationName")
    _tenant(world, run.get("tenantName"))
    version = int(run["deploymentVersion"])
    if run.get("deploymentId"):
        job.deployment_ids[version] = run["deploymentId"]
    seconds = None
    if run["status"] in ENDED:
        duration = run.get("duration")
        seconds = duration / 1000 if isinstance(duration, int | float) else 0
    triggered = run.get("triggeredBySubject") or {}
    by_user = _subject_reference(world, triggered) and triggered.get("subjectType") == "user"
    job.runs[run["id"]] = fixture_format.run(
        run["id"],
        run["name"],
        run["status"],
        _iso(run["createdAt"]),
        version=version,
        triggered_by=triggered["subjectSlug"] if by_user else None,
        command=run.get("command"),
        total_retries=run.get("totalRetries"),
        duration_seconds=seconds,
        exit_code=run.get("exitCode"),
        error=run.get("error"),
    )


def _secret_fqns(manifest: Any) -> set[str]:
    """The fqns of the secrets a manifest names (mounts, env, build secrets)."""
    found = set()

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, item in value.items():
                walk(item, k)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str):
            if value.startswith(SECRET_REFERENCE):
                found.add(value[len(SECRET_REFERENCE) :])
            elif key == "secret_fqn":
                found.add(value)

    walk(manifest)
    return found


def _secret(world: _World, fqn: str, secret_id: str | None = None) -> str | None:
    """Record a secret by its fqn (`tenant:group:key`); the group's name."""
    parts = fqn.split(":")
    if (
        len(parts) < 2
        or not NAME.fullmatch(parts[-2])
        or not re.fullmatch(r"[A-Za-z_]\w*", parts[-1])
    ):
        return None
    group = world.groups.setdefault(parts[-2], _SecretGroup(secrets={}))
    secrets = group["secrets"]
    if secret_id or parts[-1] not in secrets:
        secrets[parts[-1]] = secret_id or secrets.get(parts[-1])
    return parts[-2]


def _learn_secret_deployments(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    referenced = [_deployment_seen(world, deployment) for deployment in answer["data"]]
    asked = body.get("secretIds") if isinstance(body, dict) else None
    if isinstance(asked, list) and len(asked) == 1 and referenced:
        # One secret asked for: the one every deployment found names is that secret.
        common = set.intersection(*referenced)
        if len(common) == 1:
            group = _secret(world, common.pop(), str(asked[0]))
            if group and caller is not None:
                world.access[(caller.reference, "read", f"secret-group:{group}")] = None


def _deployment_seen(world: _World, deployment: Any) -> set[str]:
    """A deployment an answer shows in full, with its application; the secrets it names."""
    application = deployment["application"]
    app = _application(world, application["id"])
    app.name, app.type = application["name"], application["type"]
    fqn = str(application.get("fqn", "")).split(":")
    if len(fqn) >= 3 and NAME.fullmatch(fqn[-3]) and NAME.fullmatch(fqn[-2]):
        world.clusters.setdefault(fqn[-3], None)
        known = world.workspaces.setdefault(fqn[-2], _Workspace(cluster=fqn[-3]))
        if application.get("workspaceId"):
            known["id"] = application["workspaceId"]
        app.workspace = fqn[-2]
    app.application_set_id = application.get("applicationSetId") or app.application_set_id
    app.active_version = application.get("activeVersion") or app.active_version
    creator = _subject_reference(world, deployment.get("createdBySubject"))
    if creator and creator.startswith("user:"):
        app.created_by = creator.removeprefix("user:")
    manifest = deployment["manifest"]
    app.deployments[int(deployment["version"])] = fixture_format.deployment(
        manifest, deployment["id"], deployment.get("currentStatusId"), deployment.get("createdAt")
    )
    fqns = _secret_fqns(manifest)
    for secret_fqn in fqns:
        _secret(world, secret_fqn)
    return fqns


def _learn_model_response(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    if (
        isinstance(answer, dict)
        and answer.get("object") == "response"
        and answer.get("store", True)
    ):
        world.responses[answer["id"]] = answer


def _learn_deleted_response(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    world.responses.pop(params["id"], None)
    world.inputs.pop(params["id"], None)


def _learn_input_items(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    items = list(answer["data"])
    if query.get("order", "desc") == "desc":  # the last first: kept in the input's order
        items.reverse()
    known = world.inputs.setdefault(params["id"], {})
    for item in items:
        known[item["id"]] = item


def _model_seen(world: _World, model: Any) -> None:
    known = world.models.setdefault(model["id"], _Model())
    known["ownedBy"], known["created"] = model["owned_by"], model["created"]


def _learn_models(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    for model in answer["data"]:
        _model_seen(world, model)


def _learn_model(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    _model_seen(world, answer)


def _learn_embedding_model(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    """An embedding answered shows that its model embeds, and (unless the request asked for
    fewer) the model's dimension."""
    known = world.models.setdefault(answer["model"], _Model())
    known["type"] = "embedding"
    vector = answer["data"][0]["embedding"]
    if not body.get("dimensions"):
        size = len(vector) if isinstance(vector, list) else len(base64.b64decode(vector)) // 4
        known["dimensions"] = size


def _learn_token(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    record = answer["data"]  # never answer["token"]: its value stays out of the world
    owner = _subject_reference(world, record.get("createdBySubject"))
    if owner is None:
        return
    name = record["manifest"]["name"]
    team = (record["manifest"].get("ownedBy") or {}).get("team") or query.get("teamName")
    world.tokens[(owner, name)] = fixture_format.token(
        owner,
        name,
        team_name=team,
        token_id=record["id"],
        jwt_id=record["jwtId"],
        created_at=record["createdAt"],
        last_accessed_at=record.get("lastAccessedAt"),
    )


def _learn_stage(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    manifest = body["manifest"]
    root = str(answer.get("storage_root", "")).rstrip("/").split("/")
    if len(root) > 3 and root[-3] in ARTIFACT_FOLDERS and root[-1].isdigit():
        manifest.setdefault("version", int(root[-1]))
        repo = world.repos.setdefault(manifest["ml_repo"], _Repo())
        repo.setdefault("storageRoot", "/".join(root[:-3]))
    world.repos.setdefault(manifest["ml_repo"], _Repo())
    world.versions[answer["id"]] = _Version(
        answer["id"],
        manifest,
        artifact_id=answer["artifact_id"],
        created_by=caller.reference if caller else None,
        staged=True,
    )
    if caller is not None:
        world.access[(caller.reference, "write", f"mlf-project:{manifest['ml_repo']}")] = None


def _learn_tags(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    version = world.versions.get(body["artifact_version_id"])
    if version is None:
        return
    tags = [tag for tag in body["tags"] if isinstance(tag, str)]
    for other in world.versions.values():  # a tag names one version of an artifact
        if other is not version and other.artifact_id == version.artifact_id:
            other.tags = [tag for tag in other.tags if tag not in tags]
    version.tags += [tag for tag in tags if tag not in version.tags]


def _learn_stage_failure(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    version = world.versions.get(body["id"])
    if version is not None:
        version.failed, version.tags, version.staged = True, [], False


def _learn_deleted_group(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    for name, group in list(world.groups.items()):
        if group.get("id") == params["id"]:
            _group_gone(world, name)


def _group_gone(world: _World, name: str) -> None:
    world.groups.pop(name, None)
    world.grants = {g: None for g in world.grants if g[2] != f"secret-group:{name}"}
    for binding_name, binding in list(world.role_bindings.items()):
        gone = [p for p in binding.permissions if p["resource"] == f"secret-group:{name}"]
        if gone:
            del world.role_bindings[binding_name]


def _version_seen(world: _World, record: Any) -> None:
    """A finalised version an answer shows (without its files, which none shows)."""
    manifest = copy.deepcopy(record["manifest"])  # masked with the document, when written
    number = int(str(record["fqn"]).rsplit(":", 1)[1])
    manifest["version"] = number
    repo = world.repos.setdefault(manifest["ml_repo"], _Repo())
    if record.get("ml_repo_id"):
        repo["id"] = record["ml_repo_id"]
    root = str((manifest.get("source") or {}).get("uri", "")).rstrip("/").split("/")
    if len(root) > 3 and root[-3] in ARTIFACT_FOLDERS and root[-1] == str(number):
        repo.setdefault("storageRoot", "/".join(root[:-3]))
    owner = record.get("artifact_id") or record.get("model_id") or record.get("agent_skill_id")
    known = world.versions.setdefault(record["id"], _Version(record["id"], manifest))
    known.staged = False
    known.created_by = (
        _subject_reference(world, record.get("created_by_subject")) or known.created_by
    )
    known.artifact_id, known.manifest = owner, manifest
    known.tags = [t for t in record.get("tags", known.tags) if isinstance(t, str)]
    known.created_at = record.get("created_at") or known.created_at
    known.updated_at = record.get("updated_at") or known.updated_at


def _learn_version(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    _version_seen(world, answer["data"])
    if caller is not None and isinstance(body, dict):
        repo = body["manifest"]["ml_repo"]
        world.access[(caller.reference, "write", f"mlf-project:{repo}")] = None


def _learn_versions(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    for record in answer["data"]:
        _version_seen(world, record)


def _learn_artifact(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    latest = answer["data"].get("latest_version")
    if latest:
        _version_seen(world, latest)


def _learn_applied(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    if body.get("dryRun"):
        return
    kind, data = body["manifest"]["type"], answer["data"]
    if kind == "role-binding":
        subjects = [
            _subject(world, str(s.get("type")), s.get("name")) for s in data["manifest"]["subjects"]
        ]
        permissions = [
            {
                "resource": _resource(world, p.get("resourceType"), p.get("resourceFqn")),
                "resourceType": p.get("resourceType"),
                "resourceFqn": p.get("resourceFqn"),
                "role": p.get("role"),
            }
            for p in data["manifest"]["permissions"]
        ]
        if None in subjects or any(
            p["resource"] is None or p["role"] not in ROLES for p in permissions
        ):
            return  # a binding a fixture cannot hold
        if caller is not None:  # binding roles proves an admin role on each resource
            for permission in permissions:
                world.access[(caller.reference, "delete", str(permission["resource"]))] = None
        world.role_bindings[data["name"]] = _Binding(
            data["name"],
            [fixture_format.bound_subject(*str(s).split(":", 1)) for s in subjects],
            [
                _Permission(
                    resource=str(p["resource"]),
                    resourceType=p["resourceType"],
                    resourceFqn=p["resourceFqn"],
                    role=p["role"],
                )
                for p in permissions
            ],
            id=data.get("id"),
            created_by=_subject_reference(world, data.get("createdBySubject")),
            created_at=data.get("createdAt"),
            updated_at=data.get("updatedAt"),
        )
    elif kind == "secret-group":
        name = body["manifest"]["name"]
        if _resource(world, "secret-group", data.get("fqn") or name, data.get("id")) is None:
            return
        group = world.groups[name]
        group["integration"] = body["manifest"].get("integration_fqn")
        if caller is not None and world.tenant is not None and answer["action"] == "CREATE":
            world.access[(caller.reference, "write", f"tenant:{world.tenant}")] = None
        group["secrets"] = {}
        for secret in data.get("associatedSecrets") or ():
            _secret(world, str(secret.get("fqn")), secret.get("id"))
    else:
        _version_seen(world, data)


def _learn_deleted(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    manifest = body["manifest"]
    if manifest["type"] == "role-binding":
        world.role_bindings.pop(manifest["name"], None)
    else:
        _group_gone(world, manifest["name"])


def _application_fqn_seen(world: _World, app: _Application, fqn: Any) -> None:
    parts = str(fqn).split(":")
    if len(parts) >= 3 and NAME.fullmatch(parts[-3]) and NAME.fullmatch(parts[-2]):
        world.clusters.setdefault(parts[-3], None)
        world.workspaces.setdefault(parts[-2], _Workspace(cluster=parts[-3]))
        app.workspace = parts[-2]
        app.name = app.name or parts[-1]


def _learn_fqn(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    app = _application(world, answer["applicationId"])
    _application_fqn_seen(world, app, query.get("fqn", ""))
    if app.workspace is not None:
        world.workspaces[app.workspace]["id"] = answer["workspaceId"]


def _learn_application(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    data = answer["data"]
    app = _application(world, data["id"])
    app.name, app.type = data.get("name") or app.name, data.get("type") or app.type
    _application_fqn_seen(world, app, data.get("fqn", ""))
    workspace = data.get("workspace") or {}
    if app.workspace is not None and data.get("workspaceId"):
        world.workspaces[app.workspace]["id"] = data["workspaceId"]
    known = world.workspaces.get(app.workspace or "")
    cluster = known["cluster"] if known else None
    if cluster and workspace.get("clusterId"):
        world.clusters[cluster] = workspace["clusterId"]
    if data.get("deployment"):
        _deployment_seen(world, data["deployment"])


def _learn_triggered(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    run = answer["data"]
    job = _application(world, run["applicationId"])
    job.type = "job"
    _run_seen(world, job, run)
    if caller is not None:
        world.access[(caller.reference, "write", f"job:{job.id}")] = None
    if run["status"] in MOVING:
        job.runs[run["id"]]["moving"] = True


def _learn_terminated(
    world: _World,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
    answer: Any,
    caller: TokenClaims | None,
) -> None:
    for job in world.applications.values():
        known = [*job.deployment_ids.values(), *(d.get("id") for d in job.deployments.values())]
        if query.get("deploymentId") not in known:
            continue
        for run in job.runs.values():
            if run.get("name") == query.get("jobRunName"):
                run["status"] = answer["jobRunStatus"]
                if run["status"] in MOVING:
                    run["moving"] = True


# What each operation's answer teaches a recorded world: every operation whose catalog entry
# says it is `recorded`, or a test fails (tests/test_recording.py).
LEARNERS = {
    "getSession": _learn_session,
    "getTenantId": _learn_tenant,
    "generateRoleBindingManifests": _learn_role_bindings,
    "listJobRuns": _learn_job_runs,
    "listSecretDeployments": _learn_secret_deployments,
    "getModelResponse": _learn_model_response,
    "createModelResponse": _learn_model_response,
    "deleteModelResponse": _learn_deleted_response,
    "listModelResponseInputItems": _learn_input_items,
    "listModels": _learn_models,
    "retrieveModel": _learn_model,
    "createEmbedding": _learn_embedding_model,
    "getOrCreatePersonalAccessToken": _learn_token,
    "stageArtifactVersion": _learn_stage,
    "applyArtifactVersionTags": _learn_tags,
    "markArtifactVersionStageFailure": _learn_stage_failure,
    "deleteSecretGroup": _learn_deleted_group,
    "createOrUpdateArtifactVersion": _learn_version,
    "createOrUpdateModelVersion": _learn_version,
    "listArtifactVersions": _learn_versions,
    "listModelVersions": _learn_versions,
    "getArtifactVersion": _learn_version,
    "getModelVersion": _learn_version,
    "getArtifact": _learn_artifact,
    "getModel": _learn_artifact,
    "applyManifest": _learn_applied,
    "deleteManifest": _learn_deleted,
    "getIdFromFqn": _learn_fqn,
    "getApplication": _learn_application,
    "triggerJob": _learn_triggered,
    "terminateJob": _learn_terminated,
}


# -- writing the document --------------------------------------------------------------------


class _Writer:
    """The fixture document of a recorded world, in the order its sections load."""

    def __init__(self, world: _World):
        self.world = world
        self.notes: list[str] = []

    def document(self) -> tuple[FixtureDocument, list[str]]:
        world = self.world
        applications = list(self._applications())  # may add a placeholder workspace
        self._inferred_grants()
        if world.tenant is None:
            self.notes.append("tenant: no answer named it, `recorded`")
        sections: FixtureDocument = {
            "tenant": fixture_format.tenant(world.tenant or "recorded", world.tenant_id),
            "users": self._users(),
            "teams": [
                fixture_format.team(name, self._id("team", name), self._members(name))
                for (type_, name) in world.subjects
                if type_ == "team"
            ],
            "virtualAccounts": [
                fixture_format.named(name, self._id("virtualaccount", name))
                for (type_, name) in world.subjects
                if type_ == "virtualaccount"
            ],
            "agents": [
                fixture_format.named(name, self._id("agent", name))
                for (type_, name) in world.subjects
                if type_ == "agent"
            ],
            "clusters": [fixture_format.named(n, i) for n, i in world.clusters.items()],
            "workspaces": [
                fixture_format.workspace(name, known["cluster"], known.get("id"))
                for name, known in world.workspaces.items()
            ],
            "resources": [
                fixture_format.resource(kind, name, known["fqn"], known.get("id"))
                for (kind, name), known in world.resources.items()
            ],
            "secretGroups": list(self._groups()),
            "mlRepos": [
                fixture_format.ml_repo(name, known.get("id"), known.get("storageRoot"))
                for name, known in world.repos.items()
            ],
            "grants": [
                fixture_format.grant(subject, role, resource)
                for subject, role, resource in world.grants
                if (subject, role, resource) not in self._bound_grants()
            ],
            "roleBindings": [
                fixture_format.role_binding(
                    binding.name,
                    binding_id=binding.id,
                    created_by=binding.created_by,
                    created_at=binding.created_at,
                    updated_at=binding.updated_at,
                    subjects=binding.subjects,
                    permissions=[
                        fixture_format.permission(p["resourceType"], p["resourceFqn"], p["role"])
                        for p in binding.permissions
                    ],
                )
                for binding in world.role_bindings.values()
            ],
            "applications": applications,
            "artifactVersions": list(self._versions()),
            "personalAccessTokens": list(world.tokens.values()),
            "models": [
                fixture_format.model(
                    model_id,
                    known.get("type", "chat"),
                    owned_by=known.get("ownedBy"),
                    dimensions=known.get("dimensions"),
                    created=known.get("created"),
                )
                for model_id, known in world.models.items()
            ],
            "modelResponses": [
                fixture_format.model_response(r, list(world.inputs.get(i, {}).values()))
                for i, r in world.responses.items()
            ],
        }
        return fixture_format.document(sections), self.notes

    def _bound_grants(self) -> set[tuple[str, str, str]]:
        """What the role bindings applied grant: made by them when the world loads."""
        return {
            (f"{s['type']}:{s['name']}", p["role"], p["resource"])
            for binding in self.world.role_bindings.values()
            for s in binding.subjects
            for p in binding.permissions
        }

    def _id(self, type_: str, name: str) -> str | None:
        return self.world.subjects[(type_, name)].get("id")

    def _users(self) -> list[fixture_format.UserRecord]:
        world = self.world
        emails = [name for (type_, name) in world.subjects if type_ == "user"]
        if world.first_user in emails:  # development tokens name the first user: the caller
            emails.remove(world.first_user)
            emails.insert(0, world.first_user)
        if not emails:
            emails = [PLACEHOLDER_USER]
            world.subjects[("user", PLACEHOLDER_USER)] = _Subject()
            self.notes.append(f"users: no answer named one, {PLACEHOLDER_USER}")
        return [
            fixture_format.user(email, known.get("displayName"), known.get("id"))
            for email in emails
            for known in [world.subjects[("user", email)]]
        ]

    def _members(self, team: str) -> list[str]:
        users = {name for (type_, name) in self.world.subjects if type_ == "user"}
        return [email for email in self.world.members.get(team, []) if email in users]

    def _groups(self) -> Iterator[fixture_format.SecretGroupRecord]:
        for name, group in self.world.groups.items():
            secrets = [
                fixture_format.secret(key, [HIDDEN], secret_id)
                for key, secret_id in group["secrets"].items()
            ]
            yield fixture_format.secret_group(
                name,
                group_id=group.get("id"),
                integration_fqn=group.get("integration") or UNKNOWN_INTEGRATION,
                healthy=True,
                secrets=secrets or None,
            )
        if self.world.groups:
            self.notes.append(
                f"secretGroups: each integration no answer named is `{UNKNOWN_INTEGRATION}`, "
                f"each healthy, and each secret's value `{HIDDEN}`"
            )

    def _applications(self) -> Iterator[fixture_format.ApplicationRecord]:
        world = self.world
        for app in world.applications.values():
            if app.type not in KINDS_OF_APPLICATION or not NAME.fullmatch(app.name or ""):
                self.notes.append(
                    f"application {app.id}: left out (a {app.type} named {app.name!r}, which "
                    "a fixture cannot hold)"
                )
                continue
            if app.workspace is None:
                app.workspace = PLACEHOLDER_WORKSPACE
                world.clusters.setdefault(PLACEHOLDER_CLUSTER, None)
                world.workspaces.setdefault(PLACEHOLDER_WORKSPACE, {"cluster": PLACEHOLDER_CLUSTER})
                self.notes.append(
                    f"application {app.name}: no answer showed its workspace, "
                    f"`{PLACEHOLDER_WORKSPACE}` (cluster `{PLACEHOLDER_CLUSTER}`)"
                )
            last = max([*app.deployments, *app.deployment_ids, app.active_version or 1])
            known_creator = app.created_by and ("user", app.created_by) in world.subjects
            record = fixture_format.application(
                app.name or "",
                app.type or "",
                app.workspace,
                application_id=app.id,
                application_set_id=app.application_set_id,
                created_by=app.created_by if known_creator else None,
                deployments=[self._deployment(app, v) for v in range(1, last + 1)],
                active_version=app.active_version or last,
                runs=[self._run(run) for run in app.runs.values()],
            )
            for subject, action, on in list(world.access):
                if on == f"job:{app.id}":
                    del world.access[(subject, action, on)]
                    world.access[(subject, action, f"workspace:{app.workspace}")] = None
            yield record

    def _deployment(self, app: _Application, version: int) -> fixture_format.DeploymentRecord:
        if version in app.deployments:
            return app.deployments[version]
        seen = [app.deployments[v]["manifest"] for v in sorted(app.deployments)]
        if seen:
            manifest = copy.deepcopy(seen[-1])
            said = "a copy of a version seen"
        else:
            manifest = _minimal_manifest(app, version)
            said = "a minimal one for its kind"
        self.notes.append(f"application {app.name}: the manifest of version {version} is {said}")
        return fixture_format.deployment(manifest, app.deployment_ids.get(version))

    def _run(self, run: RunRecord) -> RunRecord:
        triggered = run.get("triggeredBy")
        if triggered is not None and ("user", triggered) not in self.world.subjects:
            run = run.copy()
            del run["triggeredBy"]
        return run

    def _versions(self) -> Iterator[fixture_format.ArtifactVersionRecord]:
        world = self.world
        for version in world.versions.values():
            stager = version.created_by
            if stager and tuple(stager.split(":", 1)) not in world.subjects:
                stager = None
            yield fixture_format.artifact_version(
                version.id,
                version.manifest,
                created_by=stager,
                artifact_id=version.artifact_id,
                created_at=version.created_at,
                tags=version.tags or None,
                staged=version.staged,
                failed=version.failed,
                updated_at=version.updated_at,
            )

    def _inferred_grants(self) -> None:
        """Grants the answers proved but no recorded grant gives: the least role that does,
        and for subjects whose own role bindings were never read, the tenant roles their
        session showed."""
        world = self.world
        for subject, roles in world.session_roles.items():
            if subject in world.bound or world.tenant is None:
                continue
            for role in roles:
                if role.startswith("tenant-") and role in ROLES:
                    grant = (subject, role, f"tenant:{world.tenant}")
                    if grant not in world.grants and not self._held_by_team(subject, role):
                        world.grants[grant] = None
                        self.notes.append(
                            f"grant {role} on the tenant to {subject}: from its session"
                        )
        for subject, action, on in world.access:
            kind = on.split(":", 1)[0]
            if kind not in RESOURCE_TYPES or self._allows(subject, action, on):
                continue
            role = f"{kind}-{LEVELS[action][0]}"
            world.grants[(subject, role, on)] = None
            self.notes.append(
                f"grant {role} on {on} to {subject}: an answer showed it may {action} it"
            )

    def _holders(self, subject: str) -> set[str]:
        holders = {subject}
        if subject.startswith("user:"):
            email = subject.removeprefix("user:")
            holders |= {
                f"team:{team}" for team, members in self.world.members.items() if email in members
            }
        return holders

    def _held_by_team(self, subject: str, role: str) -> bool:
        return any(
            g[0] in self._holders(subject) - {subject} and g[1] == role for g in self.world.grants
        )

    def _allows(self, subject: str, action: str, on: str) -> bool:
        holders = self._holders(subject)
        tenant = f"tenant:{self.world.tenant}"
        for holder, role, resource in self.world.grants:
            if holder not in holders:
                continue
            if (resource == tenant and role == "tenant-admin") or (
                resource == on and role.rsplit("-", 1)[-1] in LEVELS[action]
            ):
                return True
        return False


def _minimal_manifest(app: _Application, version: int) -> JsonObject:
    image: JsonObject = {"type": "image", "image_uri": f"recorded.invalid/{app.name}:{version}"}
    if app.type == "job":
        return {"image": image, "trigger": {"type": "manual"}}
    return {
        "image": image,
        "ports": [{"port": 8000, "protocol": "TCP", "expose": False}],
        "replicas": 1,
    }
