"""Fixture documents: read from YAML, checked against the fixture JSON Schema, applied to a store.

A fixture is applied through the same store methods the API uses (staging, tagging, token
creation go through the API's own rules), so no fixture can build a world the API could not.
Every error names the file, the line and the field.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from connexion.json_schema import Draft4ResponseValidator
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from mock_server import contract, errors
from mock_server.resources import package_file
from mock_server.state.deployments import IncompleteManifest
from mock_server.state.entities import Application, Caller, SecretGroup, Subject
from mock_server.state.sources import from_epoch_ms, iso, parse_iso
from mock_server.state.store import IdTaken
from mock_server.validation import (
    MAX_DEPTH,
    CompiledSchema,
    compiled,
    depth,
    field_path,
    is_unicode,
    summary,
    violations,
)

if TYPE_CHECKING:
    from mock_server.state.store import Store


class FixtureError(ValueError):
    """A fixture document that is not valid, with where and why."""


@dataclass(frozen=True)
class Fixture:
    """One fixture document and where it came from (for error messages)."""

    data: dict[str, Any]
    source: str = "<fixture>"
    node: yaml.Node | None = None

    def where(self, path: tuple[Any, ...]) -> str:
        line = _line_of(self.node, path) if self.node is not None else None
        field = field_path(path)
        return f"{self.source}{f':{line}' if line else ''}: {field or '(document)'}"


@cache
def fixture_schema() -> dict[str, Any]:
    return yaml.safe_load(package_file("fixture-schema.yaml").read_text())


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(
        fixture_schema(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


MAX_INTEGER = 2**53 - 1  # the largest integer every JSON client reads exactly


class _Loader(yaml.SafeLoader):
    """YAML without aliases: an alias can make a document refer to itself (a recursive
    structure no check survives) or multiply a few lines into millions of values."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        # PyYAML keeps the last of two equal keys silently; JSON bodies refuse them, so do we.
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = (key_node.tag, key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                raise yaml.MarkedYAMLError(
                    problem=f"the key {key_node.value!r} appears twice in one mapping",
                    problem_mark=key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                problem=f"the alias *{event.anchor} is not allowed: fixtures repeat values in full",
                problem_mark=event.start_mark,
            )
        return super().compose_node(parent, index)


def parse(text: str, source: str = "<fixture>") -> Fixture:
    """A fixture from YAML (or JSON) text, checked against the schema."""
    try:
        # One parse gives both the data and the node tree that knows each field's line.
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        # The parts of PyYAML's message that are about the text, not its "<unicode string>".
        parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
        reason = ", ".join(p for p in parts if p) or str(exc)
        raise FixtureError(f"{source}{line}: not valid YAML: {reason}") from None
    except RecursionError:
        raise FixtureError(f"{source}: not valid YAML: nested too deeply") from None
    return check(data, source, node)


def check(data: Any, source: str = "<fixture>", node: yaml.Node | None = None) -> Fixture:
    """A fixture from already parsed data, checked against the schema."""
    fixture = Fixture(data if isinstance(data, dict) else {}, source, node)
    if not isinstance(data, dict):
        raise FixtureError(f"{source}: a fixture document must be a mapping of sections")
    if depth(data) > MAX_DEPTH:
        raise FixtureError(f"{source}: nested more than {MAX_DEPTH} levels deep")
    # best_match reaches inside a oneOf for the branch that came closest: "'FAIL' is not one
    # of [...]" at .status, rather than "... is not valid under any of the given schemas".
    problems = sorted(
        (best_match([error]) for error in _validator().iter_errors(data)),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    if problems:
        raise FixtureError(
            "\n".join(f"{fixture.where(tuple(e.absolute_path))}: {e.message}" for e in problems)
        )
    values = list(_unsendable_values(data, ()))
    if values:
        raise FixtureError("\n".join(f"{fixture.where(path)}: {why}" for path, why in values))
    return fixture


def _unsendable_values(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple, str]]:
    """Values no response of the contract can carry, wherever they are: integers past
    2^53 - 1, numbers that are not finite, text that is not Unicode (a YAML escape can make
    a lone surrogate), and anything that is not JSON (a YAML timestamp or binary)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > MAX_INTEGER:
            yield path, f"{value} is past the largest integer, 2^53 - 1"
    elif isinstance(value, float):
        if not math.isfinite(value):
            yield path, f"{value} is not a finite number"
    elif isinstance(value, str):
        if not is_unicode(value):
            yield path, "is not Unicode text (a lone surrogate)"
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield path, f"the key {key!r} is not text"
            else:
                yield from _unsendable_values(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _unsendable_values(item, (*path, index))
    else:
        yield path, f"a {type(value).__name__} is not a JSON value (quote it)"


def load(path: str | Path) -> Fixture:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FixtureError(f"{path}: cannot read fixture file: {exc}") from None
    return parse(text, str(path))


def model_response_validator() -> CompiledSchema:
    """The gateway contract's ModelResponse schema, for complete responses in fixtures."""
    schema = contract.component(contract.GATEWAY_SPEC, "ModelResponse")
    return compiled(schema, Draft4ResponseValidator)


def default_fixtures() -> list[Fixture]:
    """The bundled default world."""
    return [load(package_file("fixtures") / "default.yaml")]


def _line_of(node: yaml.Node | None, path: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at `path`, or of its nearest ancestor that exists."""
    if node is None:
        return None
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if part < len(node.value) else None
        if child is None:
            break
        node = child
    return node.start_mark.line + 1


def apply_document(store: Store, fixture: Fixture) -> None:
    """Build the fixture's records in the store, section by section, in dependency order."""
    data = fixture.data
    if store.world.tenant is None and "tenant" not in data and set(data) - {"clock"}:
        raise FixtureError(
            f"{fixture.where(('tenant',))}: is required in the first document of a "
            "world (every record belongs to the tenant)"
        )
    for section, apply in _SECTIONS:
        single = section in ("tenant", "clock")
        records = [data.get(section)] if single else data.get(section, [])
        for index, record in enumerate(records):
            if record is None:
                continue
            try:
                apply(store, record)
            except (ValueError, KeyError, TypeError, ArithmeticError, errors.PlatformError) as exc:
                message = exc.message if isinstance(exc, errors.PlatformError) else str(exc)
                path = (section,) if single else (section, index)
                if isinstance(exc, IdTaken):
                    path += _id_field(record, exc.id)
                raise FixtureError(f"{fixture.where(path)}: {message}") from None


def _id_field(record: Any, taken: str) -> tuple[Any, ...]:
    """Where in a record a taken id is given (`id`, `artifactId`, ... at any depth, manifests
    aside): its last place, as an earlier one in the same record may be what took it."""
    found: tuple[Any, ...] = ()

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        nonlocal found
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if item == taken and isinstance(key, str) and (key == "id" or key.endswith("Id")):
                found = (*path, key)
            elif isinstance(item, dict | list) and key != "manifest":
                walk(item, (*path, key))

    if isinstance(record, dict):
        walk(record, ())
    return found


def _split_ref(ref: str) -> tuple[str, str]:
    type_, _, name = ref.partition(":")
    return type_, name


def _user(store: Store, email: str | None) -> Subject:
    identity = store.identity
    return identity.subject_named("user", email) if email else identity.default_user()


def _caller(store: Store, reference: str | None) -> Caller:
    subject = store.identity.subject_by_reference(reference)
    return subject.caller()


def _time(text: str | None) -> datetime | None:
    return None if text is None else _instant(text)


def _instant(text: str) -> datetime:
    """A time of the world (a record's, or its clock), in the range the clock may show."""
    instant = parse_iso(text)
    if not CLOCK_RANGE[0] <= instant < CLOCK_RANGE[1]:
        raise ValueError(f"{text}: times must be from 1970 up to (not including) 9000")
    return instant


def _tenant(store: Store, tenant: str | dict) -> None:
    if isinstance(tenant, str):
        store.identity.set_tenant(tenant)
    else:
        store.identity.set_tenant(tenant["name"], tenant_id=tenant.get("id"))


# The world's clock stays where time arithmetic has room (a token made at the last instant
# of year 9999 would expire past what a datetime can hold) and after the Unix epoch (job-run
# times are milliseconds since it).
CLOCK_RANGE = (datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC))


def _clock(store: Store, moment: str) -> None:
    store.sources.clock.set(_instant(moment))


def _users(store: Store, r: dict) -> None:
    store.identity.add_subject(
        "user",
        r["email"],
        display_name=r.get("displayName"),
        subject_id=r.get("id"),
    )


def _teams(store: Store, r: dict) -> None:
    store.identity.add_subject(
        "team", r["name"], subject_id=r.get("id"), members=r.get("members", [])
    )


def _virtual_accounts(store: Store, r: dict) -> None:
    store.identity.add_subject("virtualaccount", r["name"], subject_id=r.get("id"))


def _agents(store: Store, r: dict) -> None:
    store.identity.add_subject("agent", r["name"], subject_id=r.get("id"))


def _clusters(store: Store, r: dict) -> None:
    store.identity.add_resource("cluster", r["name"], fqn=r["name"], resource_id=r.get("id"))


def _workspaces(store: Store, r: dict) -> None:
    cluster = store.identity.resource_named("cluster", r["cluster"])
    store.identity.add_resource(
        "workspace", r["name"], fqn=f"{cluster.fqn}:{r['name']}", resource_id=r.get("id")
    )


def _resources(store: Store, r: dict) -> None:
    store.identity.add_resource(r["type"], r["name"], fqn=r.get("fqn"), resource_id=r.get("id"))


def _secret_groups(store: Store, r: dict) -> None:
    integration = r["integration"]
    group = store.secrets.add_group(
        r["name"],
        integration_fqn=integration["fqn"],
        integration_healthy=integration.get("healthy", True),
        group_id=r.get("id"),
    )
    for secret in r.get("secrets", []):
        store.secrets.add_secret(
            group, secret["key"], secret.get("values", []), secret_id=secret.get("id")
        )


def _ml_repos(store: Store, r: dict) -> None:
    store.artifacts.add_ml_repo(r["name"], storage_root=r.get("storageRoot"), repo_id=r.get("id"))


def _grants(store: Store, r: dict) -> None:
    identity = store.identity
    subject = identity.subject_named(*_split_ref(r["subject"]))
    resource = identity.resource_named(*_split_ref(r["resource"]))
    identity.add_grant(subject, r["role"], resource)


def _applications(store: Store, r: dict) -> None:
    if "generate" in r:
        store.deployments.generate_applications(
            r["generate"],
            workspace_name=r["workspace"],
            created_by=_user(store, r.get("createdBy")),
        )
        return
    application = store.deployments.add_application(
        r["name"],
        type_=r["type"],
        workspace_name=r["workspace"],
        created_by=_user(store, r.get("createdBy")),
        application_id=r.get("id"),
        application_set_id=r.get("applicationSetId"),
    )
    for index, deployment in enumerate(r["deployments"]):
        try:
            store.deployments.add_deployment(
                application,
                deployment["manifest"],
                deployment_id=deployment.get("id"),
                status_id=deployment.get("statusId"),
                created_at=_time(deployment.get("createdAt")),
            )
        except IncompleteManifest as exc:
            raise ValueError(exc.under(f"deployments[{index}].manifest")) from None
    if "activeVersion" in r:
        if r["activeVersion"] not in application.deployment_ids:
            raise ValueError(f"activeVersion {r['activeVersion']} is not one of the deployments")
        application.active_version = r["activeVersion"]
    for run in r.get("runs", []):
        if "generate" in run:
            store.jobs.generate_runs(application, run["generate"])
            continue
        store.jobs.add_run(
            application,
            status=run["status"],
            created_at=_instant(run["createdAt"]),
            seconds=run.get("durationSeconds"),
            triggered_by=_user(store, run.get("triggeredBy")),
            deployment_version=run.get("version"),
            name=run.get("name"),
            command=run.get("command"),
            total_retries=run.get("totalRetries", 0),
            exit_code=run.get("exitCode"),
            error=run.get("error"),
            run_id=run.get("id"),
        )


def _artifact_versions(store: Store, r: dict) -> None:
    # Through the front door: the manifest is checked as the API checks a staging request.
    schema = contract.component(contract.CONTROL_PLANE_SPEC, "ArtifactVersionManifest")
    problems = violations(compiled(schema), r["manifest"], "manifest", ("manifest",))
    if problems:
        raise ValueError("; ".join(f"{p['field']}: {p['message']}" for p in problems))
    caller = _caller(store, r.get("as"))
    staged = store.artifacts.stage(
        caller,
        r["manifest"],
        version_id=r.get("id"),
        artifact_id=r.get("artifactId"),
        created_at=_time(r.get("createdAt")),
    )
    if r.get("tags"):
        store.artifacts.apply_tags(caller, staged["id"], r["tags"], force=False)


def _tokens(store: Store, r: dict) -> None:
    caller = _caller(store, r["owner"])
    store.tokens.get_or_create(
        caller,
        r["name"],
        r.get("teamName"),
        token_id=r.get("id"),
        jwt_id=r.get("jwtId"),
        created_at=_time(r.get("createdAt")),
    )
    token = store.world.tokens[(caller.subject_id, r["name"])]
    token.record["lastAccessedAt"] = r.get("lastAccessedAt")
    token.revoked = r.get("revoked", False)


def _model_responses(store: Store, r: dict) -> None:
    if "response" in r:
        problems = violations(model_response_validator(), r["response"], "response")
        if problems:
            raise ValueError(summary(problems))
        store.gateway.add_stored(r["response"])
        return
    if "generate" in r:
        for _ in range(r["generate"]):
            store.gateway.add_response()
        return
    store.gateway.add_response(
        response_id=r["id"],
        model=r.get("model", "gpt-4o-mini"),
        provider=r.get("provider", "openai"),
        status=r.get("status", "completed"),
        text=r.get("text"),
        instructions=r.get("instructions"),
        user=r.get("user"),
        metadata=r.get("metadata"),
        max_output_tokens=r.get("maxOutputTokens"),
        temperature=r.get("temperature", 1.0),
        previous_response_id=r.get("previousResponseId"),
    )


_SECTIONS = (
    ("tenant", _tenant),
    ("users", _users),
    ("teams", _teams),
    ("virtualAccounts", _virtual_accounts),
    ("agents", _agents),
    ("clusters", _clusters),
    ("workspaces", _workspaces),
    ("resources", _resources),
    ("secretGroups", _secret_groups),
    ("mlRepos", _ml_repos),
    ("grants", _grants),
    ("applications", _applications),
    ("artifactVersions", _artifact_versions),
    ("personalAccessTokens", _tokens),
    ("modelResponses", _model_responses),
    ("clock", _clock),
)


# Resource types that have their own fixture section (or come with another record).
_OWN_SECTION = frozenset({"tenant", "cluster", "workspace", "secret-group", "mlf-project", "agent"})


def dump(store: Store) -> dict[str, Any]:
    """The whole state as a fixture document: loaded into a mock without default fixtures,
    it rebuilds this state, ids and timestamps included."""
    with store.lock:
        world = store.world
        tenant = world.tenant

        def subjects(type_: str) -> list[Subject]:
            return [s for s in world.subjects.values() if s.type == type_]

        def resources(type_: str) -> list:
            return [r for r in world.resources.values() if r.type == type_]

        def named(subject: Subject) -> dict[str, str]:
            return {"name": subject.name, "id": subject.id}

        def reference(subject: Subject) -> str:
            return f"{subject.type}:{subject.name}"

        document: dict[str, Any] = {
            "tenant": {"name": tenant.name, "id": tenant.id} if tenant else None,
            "users": [
                {"email": u.name, "displayName": u.display_name, "id": u.id}
                for u in subjects("user")
            ],
            "teams": [
                {**named(t), "members": [world.subjects[("user", m)].name for m in t.members]}
                for t in subjects("team")
            ],
            "virtualAccounts": [named(s) for s in subjects("virtualaccount")],
            "agents": [named(s) for s in subjects("agent")],
            "clusters": [{"name": r.name, "id": r.id} for r in resources("cluster")],
            "workspaces": [
                {"name": r.name, "id": r.id, "cluster": r.fqn.split(":")[0]}
                for r in resources("workspace")
            ],
            "resources": [
                {"type": r.type, "name": r.name, "fqn": r.fqn, "id": r.id}
                for r in world.resources.values()
                if r.type not in _OWN_SECTION
            ],
            "secretGroups": [_dump_secret_group(g) for g in world.secret_groups.values()],
            "mlRepos": [
                {"name": name, "id": repo.resource.id, "storageRoot": repo.storage_root}
                for name, repo in world.ml_repos.items()
            ],
            "grants": [
                {
                    "subject": reference(world.subjects[(g.subject_type, g.subject_id)]),
                    "role": g.role,
                    "resource": f"{g.resource_type}:"
                    + world.resources[(g.resource_type, g.resource_id)].name,
                }
                for g in world.grants
            ],
            "applications": [_dump_application(store, a) for a in world.applications.values()],
            "artifactVersions": [
                {
                    "as": reference(v.created_by),
                    "id": v.id,
                    "artifactId": v.artifact_id,
                    "createdAt": iso(v.created_at),
                    "manifest": v.manifest,
                    "tags": v.tags,
                }
                for v in world.artifact_versions.values()
            ],
            "personalAccessTokens": [
                {
                    "owner": reference(world.subjects[(t.owner_type, t.owner_id)]),
                    "name": t.name,
                    **(
                        {"teamName": t.record["manifest"]["ownedBy"]["team"]}
                        if "ownedBy" in t.record["manifest"]
                        else {}
                    ),
                    "id": t.record["id"],
                    "jwtId": t.jwt_id,
                    "createdAt": t.record["createdAt"],
                    **(
                        {"lastAccessedAt": t.record["lastAccessedAt"]}
                        if t.record["lastAccessedAt"]
                        else {}
                    ),
                    **({"revoked": True} if t.revoked else {}),
                }
                for t in world.tokens.values()
            ],
            "modelResponses": [{"response": r} for r in world.model_responses.values()],
            "clock": iso(store.sources.clock.now()),
        }
        return copy.deepcopy(
            {key: value for key, value in document.items() if value not in ([], None)}
        )


def _dump_secret_group(group: SecretGroup) -> dict[str, Any]:
    return {
        "name": group.resource.name,
        "id": group.resource.id,
        "integration": {"fqn": group.integration_fqn, "healthy": group.integration_healthy},
        "secrets": [
            {"key": s.key, "id": s.id, "values": [v.value for v in s.versions]}
            for s in group.secrets.values()
        ],
    }


def _dump_application(store: Store, application: Application) -> dict[str, Any]:
    world = store.world
    workspace = world.resources[("workspace", application.workspace_id)]
    deployments = [world.deployments[d] for _, d in sorted(application.deployment_ids.items())]
    runs = []
    for run in world.job_runs[application.id]:
        record: dict[str, Any] = {
            "id": run.id,
            "name": run.name,
            "status": run.status,
            "createdAt": iso(from_epoch_ms(run.created_at_ms)),
            "triggeredBy": run.triggered_by.name,
            "version": run.deployment_version,
            "command": run.command,
            "totalRetries": run.total_retries,
        }
        if run.duration_ms is not None:
            record["durationSeconds"] = run.duration_ms / 1000
        if run.exit_code is not None:
            record["exitCode"] = run.exit_code
        if run.error is not None:
            record["error"] = run.error
        runs.append(record)
    return {
        "name": application.name,
        "id": application.id,
        "type": application.type,
        "workspace": workspace.name,
        "applicationSetId": application.application_set_id,
        "createdBy": application.created_by.name,
        "deployments": [
            {
                "manifest": d.manifest,
                "id": d.id,
                "statusId": d.status_id,
                "createdAt": iso(d.created_at),
            }
            for d in deployments
        ],
        "activeVersion": application.active_version,
        **({"runs": runs} if runs else {}),
    }
