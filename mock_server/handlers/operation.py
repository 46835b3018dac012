"""What a handler declares of its operation beyond the contract: its catalog entry.

Each handler carries its entry (`@operation(...)`): the operation it serves, a valid example
request in the default world (`fixtures/default.yaml`), the error condition of each error
status of its own (those every operation of its kind documents are the catalog's to
derive), and the platform client's model of its success body. `mock_server.handlers.catalog`
gathers the entries of every handler module.

An example names objects of the world by reference, `<kind:name>` (see `KINDS`), and is
filled with their ids for a given store: ids depend on the world's seed. The rules every
example keeps beyond its operation's contract are stated by `Example.problems`, which
`tests/test_catalog.py` runs on each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar
from urllib.parse import quote

from mock_server.core.errors import PlatformError
from mock_server.state import Store

DEFAULT_CALLER = "alice@acme.example"  # the tenant admin of the default world


def _artifact_version(store: Store, name: str) -> str:
    artifact_name, _, version = name.rpartition("/")
    artifact = next(a for a in store.world.artifacts.values() if a.name == artifact_name)
    return artifact.versions[int(version)]


def _storage_root(store: Store, name: str) -> str:
    return store.world.artifact_versions[_artifact_version(store, name)].storage_root


def _deployment(store: Store, name: str) -> str:
    application_name, _, version = name.rpartition("/")
    return store.deployments.application_named(application_name).deployment_ids[int(version)]


def _job_run(store: Store, name: str) -> str:
    application_name, _, run_name = name.partition("/")
    application = store.deployments.application_named(application_name)
    return next(r.name for r in store.world.job_runs[application.id] if r.name == run_name)


def _secret(store: Store, name: str) -> str:
    group, _, key = name.partition("/")
    secret = next(s for s in store.secrets.group_named(group).secrets.values() if s.key == key)
    return secret.id


# How a reference `<kind:name>` is read in a store: the id of the object of that kind and name.
KINDS: dict[str, Callable[[Store, str], str]] = {
    "user": lambda store, email: store.identity.subject_named("user", email).id,
    "team": lambda store, name: store.identity.subject_named("team", name).id,
    "secret-group": lambda store, name: store.secrets.group_named(name).resource.id,
    "secret": _secret,  # group/KEY
    "application": lambda store, name: store.deployments.application_named(name).id,
    "application-fqn": lambda store, name: store.deployments.application_named(name).fqn,
    "artifact-version": _artifact_version,  # artifact/version number
    "storage-root": _storage_root,  # artifact/version number: the version's storage root
    "artifact": lambda store, name: next(
        a.id for a in store.world.artifacts.values() if a.name == name
    ),
    "deployment": _deployment,  # application/version number
    "job-run": _job_run,  # application/run name: the run's name (what a client names it by)
}
REFERENCE = re.compile(r"<([a-z-]+):([^<>]+)>")


def fill_text(text: str, store: Store) -> str:
    """The text with every reference `<kind:name>` replaced by the id it names in the store."""
    return REFERENCE.sub(lambda found: KINDS[found[1]](store, found[2]), text)


def fill(value: Any, store: Store) -> Any:
    """A JSON value with the references in its strings filled (keys are kept as they are)."""
    if isinstance(value, str):
        return fill_text(value, store)
    if isinstance(value, list):
        return [fill(item, store) for item in value]
    if isinstance(value, dict):
        return {key: fill(item, store) for key, item in value.items()}
    return value


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


# What a query parameter of a request holds: one value, or the values of a list.
Primitive: TypeAlias = str | int | float | bool | None
QueryValue: TypeAlias = Primitive | list[Primitive]


@dataclass(frozen=True)
class Request:
    """An example filled for one store: what a client sends."""

    method: str
    path: str  # percent-encoded, under the root of its document's server
    query: dict[str, QueryValue]
    body: Any  # the JSON body, or None
    caller: str  # the e-mail of the user whose development token sends it


# The parameters of a paginated operation. Its example sets neither: the suites that page
# every paginated operation (`tests/test_bad_inputs.py`, `tests/test_limits.py`) add their own
# `limit` and `offset` to the example's request, where one the example set would be sent twice.
PAGING = frozenset({"limit", "offset"})


@dataclass(frozen=True)
class Example:
    """A valid request of an operation in the default world, answered 200."""

    method: str
    path: str  # the spec's path template
    params: Mapping[str, str] = field(default_factory=dict)  # path parameters
    query: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    caller: str = DEFAULT_CALLER  # the e-mail of the user whose development token sends it

    def needs_a_world(self) -> bool:
        """Whether the example names anything of the default world: a path parameter, or an
        object by reference. One that does not is a valid request of any platform's."""
        return bool(self.params) or any(
            REFERENCE.search(text) for text in _strings([dict(self.query), self.body])
        )

    def problems(self, parameters: Iterable[str]) -> list[str]:
        """Each rule of examples this one breaks, as an operation with these parameters (of
        its URL) has it; [] when it keeps them all."""
        found = []
        paging = sorted(PAGING & set(self.query))
        if set(parameters) >= PAGING and paging:
            found.append(
                f"sets {' and '.join(paging)}: the example of a paginated operation sets "
                "neither limit nor offset (the suites that page every paginated operation "
                "add their own, which would then be sent twice)"
            )
        return found

    def request(self, store: Store) -> Request:
        """The request filled with the ids of the objects it names in this store."""
        filled = {
            name: quote(fill_text(value, store), safe="") for name, value in self.params.items()
        }
        return Request(
            self.method,
            self.path.format_map(filled),
            fill(dict(self.query), store),
            fill(self.body, store),
            self.caller,
        )


@dataclass(frozen=True)
class OperationEntry:
    """What the mock knows of one operation beyond its contract."""

    handler: Callable[..., Any]
    # None only for the admin API, which no generic suite of the platform API sends.
    example: Example | None = None
    # Each error status -> the condition the operation answers with (and a fault injects):
    # as declared, its own; in the catalog, with the generic ones derived from its contract.
    # Empty for the admin API, which faults never touch.
    errors: dict[int, type[PlatformError]] = field(default_factory=dict)
    # The platform client's model of the success body, as `module:Name` (e.g.
    # `truefoundry_sdk.types:ListJobRunResponse`): the oracle the test suite reads every such
    # body with. Empty where the suite has an oracle of its own (tests/test_sdk_oracle.py).
    client_model: str = ""
    # The top-level field of the body the model reads, where the client models only that.
    client_field: str = ""
    # Fields of the body (dotted paths) beyond the client model, each one another client
    # of the platform reads (the platform's CLI reads an application's `workspace`).
    client_extras: frozenset[str] = frozenset()
    # Whether the operation changes nothing on the platform: as declared where its method
    # says otherwise (a GET that creates, a POST that only reads); in the catalog, for every
    # operation of the platform, derived from the method elsewhere (GET reads only). The
    # drift check sends only such operations to a real platform.
    read_only: bool | None = None
    # Whether its answer shows something of the world's entities, which a recording of a
    # platform (`mock_server.proxy.recording`) learns from: declared False where it shows nothing.
    recorded: bool = True


# The attribute of a handler holding its (operationId, OperationEntry).
ENTRY = "platform_mock_operation"
H = TypeVar("H", bound=Callable[..., Any])


def operation(
    operation_id: str,
    example: Example | None = None,
    errors: Mapping[int, type[PlatformError]] | None = None,
    *,
    client_model: str = "",
    client_field: str = "",
    client_extras: frozenset[str] = frozenset(),
    read_only: bool | None = None,
    recorded: bool = True,
) -> Callable[[H], H]:
    """Declare the function below the handler of `operation_id`, with its entry's facts:
    `errors` holds the conditions of its own error statuses (the generic ones, such as 400
    for a request that breaks the contract, are derived from its contract); `read_only`
    only where the operation's method would say otherwise; `recorded=False` where its
    answer shows nothing of the world a recording could learn."""

    def declared(handler: H) -> H:
        entry = OperationEntry(
            handler,
            example,
            dict(errors or {}),
            client_model,
            client_field,
            client_extras,
            read_only,
            recorded,
        )
        setattr(handler, ENTRY, (operation_id, entry))
        return handler

    return declared


def declared(module: object) -> dict[str, OperationEntry]:
    """The entries the handlers of a module declare, by operationId."""
    found: dict[str, OperationEntry] = {}
    for value in vars(module).values():
        pair = getattr(value, ENTRY, None)
        if pair is not None:
            operation_id, entry = pair
            assert operation_id not in found, f"{operation_id} is declared twice"
            found[operation_id] = entry
    return found
