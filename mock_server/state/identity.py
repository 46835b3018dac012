"""Subjects, resources, grants and access checks, and the role-binding manifests derived from them.

Access model of the mock: a caller holds its own grants and those of every team it belongs to.
A role ending in `-admin` allows read, write and delete on its resource; `-editor` read and
write; `-viewer` read. `tenant-admin` on the tenant allows everything everywhere.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from mock_server.core import errors
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, locked
from mock_server.state.entities import (
    SUBJECT_TYPES,
    AppliedRoleBinding,
    Caller,
    Grant,
    Resource,
    RoleBinding,
    Subject,
)
from mock_server.state.sources import iso, world_time

RESOURCE_TYPES = (
    "cluster",
    "workspace",
    "secret-group",
    "tenant",
    "mlf-project",
    "repository",
    "provider-integration",
    "provider-account",
    "tracing-project",
    "agent",
    "agent-app",
    "mcp-server",
)
ROLE_ACTIONS = {
    "admin": frozenset({"read", "write", "delete"}),
    "editor": frozenset({"read", "write"}),
    "viewer": frozenset({"read"}),
}
TENANT_ADMIN = "tenant-admin"


def role_actions(role: str) -> frozenset[str]:
    return ROLE_ACTIONS.get(role.rsplit("-", 1)[-1], frozenset())


def manifest_name(*parts: str) -> str:
    """A role-binding name from its parts that always matches the contract's pattern.

    Lower-cased, every other character turned into `-`, cut to 66 characters. Whenever that
    changed anything, a short hash of the original text is appended, so two different originals
    (`Viewer` and `viewer`, two long names) never share a name.
    """
    full = "-".join(parts)
    name = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", full.lower())).strip("-")
    if not name or not name[0].isalpha():
        name = f"rb-{name}".rstrip("-")
    if name != full or len(name) > 66:
        digest = hashlib.sha256(full.encode()).hexdigest()[:8]
        name = f"{name[: 66 - 9].rstrip('-')}-{digest}"
    return name


@dataclass(frozen=True)
class Session:
    """Who a caller is: its subject, the roles it holds (itself or through its teams), its
    teams, and the tenant."""

    subject: Subject
    roles: list[str]
    teams: list[Subject]
    tenant: Resource


class RoleBindingSubject(TypedDict):
    """A principal a role binding names (the contract's `RoleBindingSubject`)."""

    type: str
    name: str


class RoleBindingPermission(TypedDict):
    """A role a role binding grants on a resource (the contract's `RoleBindingPermission`)."""

    resourceType: str
    resourceFqn: str
    role: str


class RoleBindingManifest(TypedDict):
    """A role-binding manifest (the contract's `RoleBindingManifest`): what is applied, and
    what the generating operation returns."""

    type: Literal["role-binding"]
    name: str
    subjects: list[RoleBindingSubject]
    permissions: list[RoleBindingPermission]


def binding_manifest(binding: RoleBinding | AppliedRoleBinding) -> RoleBindingManifest:
    """A role binding as its manifest reads: each subject by type and name, each permission
    by its resource's type and FQN."""
    return {
        "type": "role-binding",
        "name": binding.name,
        "subjects": [{"type": s.type, "name": s.name} for s in binding.subjects],
        "permissions": [
            {"resourceType": r.type, "resourceFqn": r.fqn, "role": role}
            for r, role in binding.permissions
        ],
    }


class TenantNotFound(errors.PlatformError):
    status, code = 404, 40411
    condition = "no tenant serves the host name (a world without fixtures)"
    default_message = "No tenant serves this host name: the world has no tenant yet"


class InvalidManifest(errors.PlatformError):
    status, code = 400, 40013
    condition = (
        "a manifest breaks a rule of its kind: a role the platform does not have, a secret "
        "key given twice, a version number other than the staged version's"
    )
    default_message = "The manifest breaks a rule of its kind"


# The roles a grant may hold: `<resource type>-admin`, `-editor` and `-viewer` of each type.
ROLES = frozenset(f"{t}-{level}" for t in RESOURCE_TYPES for level in ROLE_ACTIONS)


class ManifestTargetNotFound(errors.PlatformError):
    status, code = 404, 40423
    condition = "a subject or resource a role-binding manifest names not found"
    default_message = "The manifest names a subject or resource the platform does not have"


class RoleBindingNotFound(errors.PlatformError):
    status, code = 404, 40424
    condition = "role binding not found (a delete names none that was applied)"
    default_message = "No role binding of this name was applied"


class Identity(Area):
    """Subjects, resources and grants of the tenant."""

    # -- building the world (fixtures) ---------------------------------------------------
    @locked
    def set_tenant(self, name: str, *, tenant_id: str | None = None) -> Resource:
        tenant = Resource(
            "tenant", self.new_id(f"tenant {name!r}", tenant_id, "tenant"), name, name
        )
        self.world.tenant = tenant
        self.world.resources[("tenant", tenant.id)] = tenant
        self.world.resource_names[("tenant", name)] = tenant
        return tenant

    @property
    def tenant(self) -> Resource:
        if self.world.tenant is None:
            raise errors.MockFailure("The fixtures define no tenant")
        return self.world.tenant

    @locked
    def add_subject(
        self,
        type_: str,
        name: str,
        *,
        display_name: str | None = None,
        subject_id: str | None = None,
        members: list[str] | None = None,
    ) -> Subject:
        if type_ not in SUBJECT_TYPES:
            raise ValueError(f"unknown subject type {type_!r}")
        if self.find_subject(type_, name) is not None:
            raise ValueError(f"{type_} {name!r} already exists")
        # A subject's slug is its name: a user's is the e-mail, as the platform's clients
        # read `subjectSlug` and send it back in the job-runs `triggeredBy` filter.
        member_ids = [self.subject_named("user", m).id for m in members or []]
        subject = Subject(
            type=type_,
            id=self.new_id(f"{type_} {name!r}", subject_id, type_),
            name=name,
            slug=name,
            display_name=display_name or name,
            members=member_ids,
        )
        self.world.subjects[(type_, subject.id)] = subject
        self.world.subject_names[(type_, name)] = subject
        for member_id in member_ids if type_ == "team" else ():
            self.world.teams_by_member.setdefault(member_id, []).append(subject)
        if type_ == "agent":
            # Agents are also resources that grants can name: the same entity, the same id.
            self._put_resource("agent", name, None, subject.id)
        return subject

    def find_subject(self, type_: str, name: str) -> Subject | None:
        # By index: a scan made loading a world of many users quadratic (20,000: 19 s).
        return self.world.subject_names.get((type_, name))

    def subject_named(self, type_: str, name: str) -> Subject:
        subject = self.find_subject(type_, name)
        if subject is None:
            raise ValueError(f"no {type_} named {name!r}")
        return subject

    def default_user(self) -> Subject:
        """The user that development tokens name: the first user of the fixtures."""
        for subject in self.world.subjects.values():
            if subject.type == "user":
                return subject
        raise errors.MockFailure("The fixtures define no user")

    def subject_by_reference(self, reference: str | None) -> Subject:
        """A subject by `type:name` (`team:ml-platform`), a user by bare e-mail, or the
        default user for None."""
        type_, _, name = (reference or "").partition(":")
        if name and type_ in SUBJECT_TYPES:
            return self.subject_named(type_, name)
        return self.subject_named("user", reference) if reference else self.default_user()

    def subject(self, type_: str, subject_id: str) -> Subject | None:
        return self.world.subjects.get((type_, subject_id))

    @locked
    def add_resource(
        self, type_: str, name: str, *, fqn: str | None = None, resource_id: str | None = None
    ) -> Resource:
        if type_ not in RESOURCE_TYPES:
            raise ValueError(f"unknown resource type {type_!r}")
        if self.find_resource(type_, name) is not None:
            raise ValueError(f"{type_} {name!r} already exists")
        return self._put_resource(
            type_, name, fqn, self.new_id(f"{type_} {name!r}", resource_id, type_)
        )

    def _put_resource(self, type_: str, name: str, fqn: str | None, resource_id: str) -> Resource:
        resource = Resource(type_, resource_id, name, fqn or f"{self.tenant.name}:{name}")
        self.world.resources[(type_, resource.id)] = resource
        self.world.resource_names.setdefault((type_, name), resource)
        return resource

    def find_resource(self, type_: str, name: str) -> Resource | None:
        return self.world.resource_names.get((type_, name))

    def resource_named(self, type_: str, name: str) -> Resource:
        resource = self.find_resource(type_, name)
        if resource is None:
            raise ValueError(f"no {type_} named {name!r}")
        return resource

    @locked
    def add_grant(
        self, subject: Subject, role: str, resource: Resource, binding: str | None = None
    ) -> Grant:
        grant = Grant(subject.type, subject.id, role, resource.type, resource.id, binding)
        world = self.world
        held = world.grants_by_holder.setdefault((subject.type, subject.id), [])
        if grant not in held:
            world.grants.append(grant)
            held.append(grant)
            world.grants_by_resource.setdefault((resource.type, resource.id), []).append(grant)
        return grant

    def _remove_grants(self, gone: set[Grant]) -> None:
        world = self.world
        world.grants = [g for g in world.grants if g not in gone]
        for grant in gone:
            world.grants_by_holder[(grant.subject_type, grant.subject_id)].remove(grant)
            on = world.grants_by_resource.get((grant.resource_type, grant.resource_id))
            if on is not None and grant in on:
                on.remove(grant)

    def remove_resource(self, resource: Resource) -> None:
        """Forget a resource and every grant on it (the caller holds the lock). A role
        binding keeps its other permissions, and goes when none is left."""
        world = self.world
        key = (resource.type, resource.id)
        world.resources.pop(key, None)
        if world.resource_names.get((resource.type, resource.name)) is resource:
            del world.resource_names[(resource.type, resource.name)]
        self.release_ids(resource.id)
        on_it = world.grants_by_resource.pop(key, [])
        if on_it:
            self._remove_grants(set(on_it))
        for name, binding in list(world.role_bindings.items()):
            kept = [(r, role) for r, role in binding.permissions if r is not resource]
            if len(kept) != len(binding.permissions):
                binding.permissions = kept
                if not kept:
                    del world.role_bindings[name]
                    self.release_ids(binding.id)

    def grants_of(self, subject_type: str, subject_id: str) -> list[Grant]:
        """The grants a subject holds itself (not through its teams), in the order given."""
        return self.world.grants_by_holder.get((subject_type, subject_id), [])

    # -- callers and access --------------------------------------------------------------
    @locked
    def caller(self, subject_type: str, subject_id: str) -> Caller | None:
        """The caller a token names, or None when no such subject exists."""
        subject = self.subject(subject_type, subject_id)
        return None if subject is None else subject.caller()

    def caller_subject(self, caller: Caller) -> Subject:
        subject = self.subject(caller.subject_type, caller.subject_id)
        if subject is None:
            raise errors.UnknownTokenSubject()
        return subject

    def teams_of(self, user_id: str) -> list[Subject]:
        return list(self.world.teams_by_member.get(user_id, ()))

    def _holders(self, caller: Caller) -> set[tuple[str, str]]:
        holders = {(caller.subject_type, caller.subject_id)}
        if caller.subject_type == "user":
            holders |= {("team", team.id) for team in self.teams_of(caller.subject_id)}
        return holders

    def allowed(self, caller: Caller, action: str, *resources: Resource) -> bool:
        """Whether the caller may do `action` on the first resource (or one it belongs to)."""
        targets = {(r.type, r.id) for r in resources}
        tenant = ("tenant", self.tenant.id)
        for holder in self._holders(caller):
            for grant in self.grants_of(*holder):
                on = (grant.resource_type, grant.resource_id)
                if (on == tenant and grant.role == TENANT_ADMIN) or (
                    on in targets and action in role_actions(grant.role)
                ):
                    return True
        return False

    def require(self, caller: Caller, action: str, *resources: Resource) -> None:
        if not self.allowed(caller, action, *resources):
            raise errors.PermissionDenied(
                f"Caller {caller.slug} may not {action} {resources[0].type} {resources[0].name}"
            )

    # -- the caller's session, and the tenant a host name belongs to ---------------------
    @locked
    def session(self, caller: Caller) -> Session:
        subject = self.caller_subject(caller)
        holders = self._holders(caller)
        roles = sorted(
            {g.role for g in self.world.grants if (g.subject_type, g.subject_id) in holders}
        )
        teams = self.teams_of(subject.id) if subject.type == "user" else []
        return Session(subject, roles, teams, self.tenant)

    def tenant_of_host(self, host_name: str) -> Resource:
        """The tenant serving a host name: the world's one tenant, whatever the name."""
        if self.world.tenant is None:
            raise TenantNotFound(
                f"No tenant serves {host_name!r}: the world has none (load fixtures that name one)"
            )
        return self.world.tenant

    # -- operation 1: role-binding manifests ---------------------------------------------
    @locked
    def role_binding_manifests(
        self,
        *,
        resource_type: str | None,
        resource_id: str | None,
        subject_type: str | None,
        subject_id: str | None,
        include_only_tenant_roles: bool,
    ) -> list[RoleBinding]:
        """One manifest per role, from the grants held on a resource or by a subject."""
        by_resource = resource_type is not None or resource_id is not None
        by_subject = subject_type is not None or subject_id is not None
        if by_resource == by_subject:
            raise errors.InvalidRoleBindingQuery(
                "Give exactly one mode: resourceType with resourceId, "
                "or subjectType with subjectId, not " + ("both" if by_resource else "neither")
            )
        if by_resource:
            if resource_type is None or resource_id is None:
                raise errors.InvalidRoleBindingQuery(
                    "resourceType and resourceId must be given together"
                )
            return self._manifests_for_resource(resource_type, resource_id)
        if subject_type is None or subject_id is None:
            raise errors.InvalidRoleBindingQuery("subjectType and subjectId must be given together")
        return self._manifests_for_subject(subject_type, subject_id, include_only_tenant_roles)

    def _manifests_for_resource(self, resource_type: str, resource_id: str) -> list[RoleBinding]:
        resource = self.world.resources.get((resource_type, resource_id))
        if resource is None:
            raise errors.RoleBindingTargetNotFound(f"No {resource_type} with id {resource_id!r}")
        subjects_by_role: dict[str, list[Subject]] = defaultdict(list)
        for grant in self.world.grants_by_resource.get((resource.type, resource.id), []):
            subject = self.subject(grant.subject_type, grant.subject_id)
            if subject is not None and grant.binding is None:
                subjects_by_role[grant.role].append(subject)
        derived = [
            RoleBinding(
                manifest_name(resource.type, resource.name, role), subjects, [(resource, role)]
            )
            for role, subjects in sorted(subjects_by_role.items())
        ]
        return self._with_applied(derived, lambda b: any(r is resource for r, _ in b.permissions))

    def _manifests_for_subject(
        self, subject_type: str, subject_id: str, only_tenant: bool
    ) -> list[RoleBinding]:
        subject = self.subject(subject_type, subject_id)
        if subject is None:
            raise errors.RoleBindingTargetNotFound(f"No {subject_type} with id {subject_id!r}")
        only_tenant = only_tenant and subject.type in ("user", "team")
        resources_by_role: dict[str, list[Resource]] = defaultdict(list)
        for grant in self.grants_of(subject.type, subject.id):
            if grant.binding is not None or (only_tenant and grant.resource_type != "tenant"):
                continue
            resource = self.world.resources.get((grant.resource_type, grant.resource_id))
            if resource is not None:
                resources_by_role[grant.role].append(resource)
        derived = [
            RoleBinding(
                manifest_name(subject.type, subject.slug, role),
                [subject],
                [(r, role) for r in sorted(resources, key=lambda r: (r.type, r.fqn))],
            )
            for role, resources in sorted(resources_by_role.items())
        ]
        return self._with_applied(
            derived,
            lambda b: (
                any(s is subject for s in b.subjects)
                and (not only_tenant or any(r.type == "tenant" for r, _ in b.permissions))
            ),
        )

    def _with_applied(
        self, derived: list[RoleBinding], wanted: Callable[[AppliedRoleBinding], bool]
    ) -> list[RoleBinding]:
        """The manifests derived from the grants, then the role bindings applied through the
        API that `wanted` picks, whole, by name: an applied binding takes the place of a
        derived manifest of its name (applying a manifest this operation generated, changed
        or not, makes it the one it returns)."""
        applied = [
            RoleBinding(b.name, list(b.subjects), list(b.permissions))
            for _, b in sorted(self.world.role_bindings.items())
            if wanted(b)
        ]
        names = {b.name for b in applied}
        return [d for d in derived if d.name not in names] + applied

    # -- role bindings applied and deleted (`PUT /apply`, `POST /delete`) -----------------
    def resource_by_fqn(self, type_: str, fqn: str) -> Resource | None:
        for resource in self.world.resources.values():
            if resource.type == type_ and resource.fqn == fqn:
                return resource
        return None

    def apply_role_binding(
        self,
        caller: Caller,
        manifest: dict[str, Any],
        *,
        binding_id: str | None = None,
        created_at: datetime | None = None,
    ) -> tuple[AppliedRoleBinding, AppliedRoleBinding | None]:
        """`apply_binding` of a role binding as a fixture records it (`roleBindings[]`),
        whose fields the fixture's schema has checked."""
        return self.apply_binding(
            caller,
            {
                "type": "role-binding",
                "name": manifest["name"],
                "subjects": manifest["subjects"],
                "permissions": manifest["permissions"],
            },
            binding_id=binding_id,
            created_at=created_at,
        )

    @locked
    def apply_binding(
        self,
        caller: Caller,
        manifest: RoleBindingManifest,
        *,
        binding_id: str | None = None,
        created_at: datetime | None = None,
    ) -> tuple[AppliedRoleBinding, AppliedRoleBinding | None]:
        """Create or replace the role binding of the manifest's name: each subject holds each
        role on its resource, and the generating operation (1) returns the manifest as it was
        applied. The caller needs an admin role on every resource it grants on (the tenant
        admin has one everywhere). Returns the binding and the one it replaced, if any."""
        subjects: list[Subject] = []
        for named in manifest["subjects"]:
            found = self.find_subject(named["type"], named["name"])
            if found is None:
                raise ManifestTargetNotFound(f"No {named['type']} named {named['name']!r}")
            subjects.append(found)
        unknown = sorted({p["role"] for p in manifest["permissions"]} - ROLES)
        if unknown:
            raise InvalidManifest(
                f"Role(s) the platform does not have: {', '.join(unknown)} (a role is "
                "`<resource type>-admin`, `-editor` or `-viewer`)"
            )
        permissions: list[tuple[Resource, str]] = []
        for permission in manifest["permissions"]:
            resource = self.resource_by_fqn(permission["resourceType"], permission["resourceFqn"])
            if resource is None:
                raise ManifestTargetNotFound(
                    f"No {permission['resourceType']} with fqn {permission['resourceFqn']!r}"
                )
            permissions.append((resource, permission["role"]))
        for resource, _ in permissions:
            self.require(caller, "delete", resource)
        name = manifest["name"]
        world = self.world
        before = world.role_bindings.get(name)
        self.store.tick()
        now = self.sources.clock.now()
        if before is not None:
            self._remove_grants({g for g in world.grants if g.binding == name})
        binding = AppliedRoleBinding(
            id=before.id if before else self.new_id(f"role binding {name!r}", binding_id, "rb"),
            name=name,
            subjects=subjects,
            permissions=permissions,
            created_by=before.created_by if before else self.caller_subject(caller),
            created_at=before.created_at if before else (created_at or now),
            updated_at=now if before or created_at is None else created_at,
        )
        world.role_bindings[name] = binding
        for subject in subjects:
            for resource, role in permissions:
                self.add_grant(subject, role, resource, binding=name)
        return binding, before

    @locked
    def delete_role_binding(self, caller: Caller, name: str) -> None:
        """Delete an applied role binding and the grants it made (admin of its resources)."""
        binding = self.world.role_bindings.get(name)
        if binding is None:
            raise RoleBindingNotFound(f"No role binding named {name!r} was applied")
        for resource, _ in binding.permissions:
            self.require(caller, "delete", resource)
        self.store.tick()
        self._remove_grants({g for g in self.world.grants if g.binding == name})
        del self.world.role_bindings[name]
        self.release_ids(binding.id)

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "tenant": self.load_tenant,
            "users": self.load_user,
            "teams": self.load_team,
            "virtualAccounts": self.load_virtual_account,
            "agents": self.load_agent,
            "clusters": self.load_cluster,
            "workspaces": self.load_workspace,
            "resources": self.load_resource,
            "grants": self.load_grant,
            "roleBindings": self.load_role_binding,
        }

    # -- fixtures: this area's sections, read and written side by side ------------------
    def load_tenant(self, tenant: str | written.TenantRecord) -> None:
        name, tenant_id = (
            (tenant, None) if isinstance(tenant, str) else (tenant["name"], tenant.get("id"))
        )
        current = self.world.tenant
        if current is None:
            self.set_tenant(name, tenant_id=tenant_id)
        elif current.name != name or tenant_id not in (None, current.id):
            # A later document may restate the world's tenant, not replace it: every record
            # already loaded belongs to it.
            raise ValueError(
                f"the world's tenant is {current.name!r} (id {current.id}); a later document "
                "may restate it, not change it"
            )

    def load_user(self, r: written.UserRecord) -> None:
        self.add_subject(
            "user", r["email"], display_name=r.get("displayName"), subject_id=r.get("id")
        )

    def load_team(self, r: written.TeamRecord) -> None:
        self.add_subject("team", r["name"], subject_id=r.get("id"), members=r.get("members", []))

    def load_virtual_account(self, r: written.NamedRecord) -> None:
        self.add_subject("virtualaccount", r["name"], subject_id=r.get("id"))

    def load_agent(self, r: written.NamedRecord) -> None:
        self.add_subject("agent", r["name"], subject_id=r.get("id"))

    def load_cluster(self, r: written.NamedRecord) -> None:
        self.add_resource("cluster", r["name"], fqn=r["name"], resource_id=r.get("id"))

    def load_workspace(self, r: written.WorkspaceRecord) -> None:
        cluster = self.resource_named("cluster", r["cluster"])
        self.add_resource(
            "workspace", r["name"], fqn=f"{cluster.fqn}:{r['name']}", resource_id=r.get("id")
        )

    def load_resource(self, r: written.ResourceRecord) -> None:
        self.add_resource(r["type"], r["name"], fqn=r.get("fqn"), resource_id=r.get("id"))

    def load_grant(self, r: written.GrantRecord) -> None:
        subject = self.subject_named(*_split_reference(r["subject"]))
        resource = self.resource_named(*_split_reference(r["resource"]))
        self.add_grant(subject, r["role"], resource)

    def load_role_binding(self, r: written.RoleBindingRecord) -> None:
        """An applied role binding, applied again as its creator (`as`)."""
        caller = self.subject_by_reference(r.get("as")).caller()
        binding, _ = self.apply_role_binding(
            caller,
            {  # the manifest as the API applies it
                "type": "role-binding",
                "name": r["name"],
                "subjects": r["subjects"],
                "permissions": r["permissions"],
            },
            binding_id=r.get("id"),
            created_at=world_time(r["createdAt"]) if r.get("createdAt") else None,
        )
        if r.get("updatedAt"):
            binding.updated_at = world_time(r["updatedAt"])

    def user_or_default(self, email: str | None) -> Subject:
        """A fixture's user by e-mail; the default user when none is named."""
        return self.subject_named("user", email) if email else self.default_user()

    def dump(self) -> written.FixtureDocument:
        """This area's fixture sections (`tenant` to `resources`, and `grants`)."""
        world = self.world
        tenant = world.tenant

        def subjects(type_: str) -> list[Subject]:
            return [s for s in world.subjects.values() if s.type == type_]

        def resources(type_: str) -> list[Resource]:
            return [r for r in world.resources.values() if r.type == type_]

        own = (
            written.FixtureDocument(tenant=written.tenant(tenant.name, tenant.id)) if tenant else {}
        )
        return {
            **own,
            "users": [written.user(u.name, u.display_name, u.id) for u in subjects("user")],
            "teams": [
                written.team(t.name, t.id, [world.subjects[("user", m)].name for m in t.members])
                for t in subjects("team")
            ],
            "virtualAccounts": [written.named(s.name, s.id) for s in subjects("virtualaccount")],
            "agents": [written.named(s.name, s.id) for s in subjects("agent")],
            "clusters": [written.named(r.name, r.id) for r in resources("cluster")],
            "workspaces": [
                written.workspace(r.name, r.fqn.split(":")[0], r.id) for r in resources("workspace")
            ],
            "resources": [
                written.resource(r.type, r.name, r.fqn, r.id)
                for r in world.resources.values()
                if r.type not in _OWN_SECTION
            ],
            "grants": [
                written.grant(
                    reference(world.subjects[(g.subject_type, g.subject_id)]),
                    g.role,
                    f"{g.resource_type}:" + world.resources[(g.resource_type, g.resource_id)].name,
                )
                for g in world.grants
                if g.binding is None
            ],
            "roleBindings": [
                written.role_binding(
                    b.name,
                    binding_id=b.id,
                    created_by=reference(b.created_by),
                    created_at=iso(b.created_at),
                    updated_at=iso(b.updated_at),
                    subjects=[written.bound_subject(s.type, s.name) for s in b.subjects],
                    permissions=[
                        written.permission(r.type, r.fqn, role) for r, role in b.permissions
                    ],
                )
                for b in world.role_bindings.values()
            ],
        }


# Resource types that have their own fixture section (or come with another record).
_OWN_SECTION = frozenset({"tenant", "cluster", "workspace", "secret-group", "mlf-project", "agent"})


def reference(subject: Subject) -> str:
    """How a fixture names a subject: `type:name`."""
    return f"{subject.type}:{subject.name}"


def _split_reference(ref: str) -> tuple[str, str]:
    type_, _, name = ref.partition(":")
    return type_, name
