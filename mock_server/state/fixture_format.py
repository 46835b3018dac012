"""The fixture format as written: a document's sections in order, and their records' shapes.

Every writer of fixture documents writes through here: the state areas' dumps (`Store.dump`,
each area's `dump`) and the recording of a world seen through the proxy
(`mock_server.proxy.recording`). What a loader reads is declared by the fixture schema
(`mock_server/fixtures/schema.yaml`) and read by each area's `loaders`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NotRequired, TypedDict

# The sections of a fixture document in the order they are applied: a record may name only
# records of an earlier section (a grant names a secret group, an application a workspace).
# Each is read (`loaders`) and written (`dump`) by the area that owns it; `clock` is the
# store's own.
SECTIONS = (
    "tenant",
    "users",
    "teams",
    "virtualAccounts",
    "agents",
    "clusters",
    "workspaces",
    "resources",
    "secretGroups",
    "mlRepos",
    "grants",
    "roleBindings",
    "applications",
    "artifactVersions",
    "personalAccessTokens",
    "models",
    "modelResponses",
    "scriptedReplies",
    "clock",
)


def document(sections: Mapping[str, Any]) -> dict[str, Any]:
    """A fixture document of these sections, in the order they load, the empty ones left
    out; a section the format does not have is a bug of its writer."""
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"not sections of a fixture document: {sorted(unknown)}")
    return {name: sections[name] for name in SECTIONS if sections.get(name) not in ([], None)}


def with_id(record: dict[str, Any], record_id: Any) -> dict[str, Any]:
    """A record with its id last, when it has one (a recording may not know it)."""
    return {**record, "id": record_id} if record_id else record


class UserRecord(TypedDict):
    email: str
    displayName: NotRequired[str]
    id: NotRequired[str]


class NamedRecord(TypedDict):
    """A record named and identified only: a virtual account, an agent, a cluster."""

    name: str
    id: NotRequired[str]


class TeamRecord(NamedRecord):
    members: list[str]


class WorkspaceRecord(TypedDict):
    name: str
    cluster: str
    id: NotRequired[str]


class ResourceRecord(TypedDict):
    type: str
    name: str
    fqn: str
    id: NotRequired[str]


class GrantRecord(TypedDict):
    """A grant of `role` on a resource (`type:name`) to a subject (`type:name`)."""

    subject: str
    role: str
    resource: str


def user(email: str, display_name: str | None = None, user_id: str | None = None) -> UserRecord:
    record = UserRecord(email=email)
    if display_name:
        record["displayName"] = display_name
    if user_id:
        record["id"] = user_id
    return record


def named(name: str, record_id: str | None = None) -> NamedRecord:
    record = NamedRecord(name=name)
    if record_id:
        record["id"] = record_id
    return record


def team(name: str, record_id: str | None, members: Iterable[str]) -> TeamRecord:
    if record_id:  # the id before the members, as a team is read
        return TeamRecord(name=name, id=record_id, members=list(members))
    return TeamRecord(name=name, members=list(members))


def workspace(name: str, cluster: str, record_id: str | None = None) -> WorkspaceRecord:
    record = WorkspaceRecord(name=name, cluster=cluster)
    if record_id:
        record["id"] = record_id
    return record


def resource(type_: str, name: str, fqn: str, record_id: str | None = None) -> ResourceRecord:
    record = ResourceRecord(type=type_, name=name, fqn=fqn)
    if record_id:
        record["id"] = record_id
    return record


def grant(subject: str, role: str, on: str) -> GrantRecord:
    """A grant of `role` on a resource (`type:name`) to a subject (`type:name`)."""
    return GrantRecord(subject=subject, role=role, resource=on)
