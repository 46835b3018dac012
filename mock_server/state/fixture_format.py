"""The fixture format as written: a document's sections in order, and their records' shapes.

Every writer of fixture documents writes through here: the state areas' dumps (`Store.dump`,
each area's `dump`) and the recording of a world seen through the proxy
(`mock_server.proxy.recording`). What a loader reads is declared by the fixture schema
(`mock_server/fixtures/schema.yaml`) and read by each area's `loaders`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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


def user(email: str, display_name: str | None = None, user_id: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"email": email}
    if display_name:
        record["displayName"] = display_name
    return with_id(record, user_id)


def named(name: str, record_id: str | None = None) -> dict[str, Any]:
    """A record named and identified only: a virtual account, an agent, a cluster."""
    return with_id({"name": name}, record_id)


def team(name: str, record_id: str | None, members: Iterable[str]) -> dict[str, Any]:
    return {**named(name, record_id), "members": list(members)}


def workspace(name: str, cluster: str, record_id: str | None = None) -> dict[str, Any]:
    return with_id({"name": name, "cluster": cluster}, record_id)


def resource(type_: str, name: str, fqn: str, record_id: str | None = None) -> dict[str, Any]:
    return with_id({"type": type_, "name": name, "fqn": fqn}, record_id)


def grant(subject: str, role: str, on: str) -> dict[str, Any]:
    """A grant of `role` on a resource (`type:name`) to a subject (`type:name`)."""
    return {"subject": subject, "role": role, "resource": on}
