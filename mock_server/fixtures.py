"""Fixture documents: read from YAML, checked against the fixture JSON Schema, applied to a store.

A fixture is applied through the same store methods the API uses (staging, tagging, token
creation go through the API's own rules), so no fixture can build a world the API could not.
Every error names the file, the line and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from jsonschema import Draft202012Validator

from mock_server import errors
from mock_server.resources import package_file

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
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        return f"{self.source}{f':{line}' if line else ''}: {field or '(document)'}"


@cache
def fixture_schema() -> dict[str, Any]:
    return yaml.safe_load(package_file("fixture-schema.yaml").read_text())


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(
        fixture_schema(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def parse(text: str, source: str = "<fixture>") -> Fixture:
    """A fixture from YAML (or JSON) text, checked against the schema."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise FixtureError(f"{source}{line}: not valid YAML: {exc}") from None
    return check(data, source, node)


def check(data: Any, source: str = "<fixture>", node: yaml.Node | None = None) -> Fixture:
    """A fixture from already parsed data, checked against the schema."""
    fixture = Fixture(data if isinstance(data, dict) else {}, source, node)
    if not isinstance(data, dict):
        raise FixtureError(f"{source}: a fixture document must be a mapping of sections")
    problems = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.path])
    if problems:
        raise FixtureError(
            "\n".join(f"{fixture.where(tuple(e.absolute_path))}: {e.message}" for e in problems)
        )
    return fixture


def load(path: str | Path) -> Fixture:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FixtureError(f"{path}: cannot read fixture file: {exc}") from None
    return parse(text, str(path))


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
    for section, apply in _SECTIONS:
        for index, record in enumerate(
            data.get(section, []) if section != "tenant" else [data.get("tenant")]
        ):
            if record is None:
                continue
            try:
                apply(store, record)
            except (ValueError, KeyError, errors.PlatformError) as exc:
                message = exc.message if isinstance(exc, errors.PlatformError) else str(exc)
                path = (section,) if section == "tenant" else (section, index)
                raise FixtureError(f"{fixture.where(path)}: {message}") from None


def _split_ref(ref: str) -> tuple[str, str]:
    type_, _, name = ref.partition(":")
    return type_, name


def _user(store: Store, email: str | None) -> Any:
    identity = store.identity
    return identity.subject_named("user", email) if email else identity.default_user()


def _caller(store: Store, email: str | None) -> Any:
    subject = _user(store, email)
    return store.identity.caller(subject.type, subject.id)


def _tenant(store: Store, name: str) -> None:
    store.identity.set_tenant(name)


def _users(store: Store, r: dict) -> None:
    store.identity.add_subject(
        "user",
        r["email"],
        slug=r.get("slug"),
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
    application = store.deployments.add_application(
        r["name"],
        type_=r["type"],
        workspace_name=r["workspace"],
        created_by=_user(store, r.get("createdBy")),
        application_id=r.get("id"),
    )
    for manifest in r["deployments"]:
        store.deployments.add_deployment(application, manifest)
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
            created_at=datetime.fromisoformat(run["createdAt"]),
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
    caller = _caller(store, r.get("as"))
    staged = store.artifacts.stage(caller, r["manifest"])
    if r.get("tags"):
        store.artifacts.apply_tags(caller, staged["id"], r["tags"], force=False)


def _tokens(store: Store, r: dict) -> None:
    store.tokens.get_or_create(_caller(store, r["owner"]), r["name"], r.get("teamName"))


def _model_responses(store: Store, r: dict) -> None:
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
)
