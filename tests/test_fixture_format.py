"""The fixture format has one writer per kind of record (`mock_server.state.fixture_format`):
a world's dump and a recording of it write the same record for the same entity, every
record of a document keeps its kind's order of keys, and no other module writes a record.

One world for the module: the default world, read and changed through a recording proxy
(the flows of `tests/test_world_of_the_flows.py`, and the gateway's records), then dumped.
"""

from __future__ import annotations

import ast
import json
import typing
from dataclasses import dataclass

import httpx
import pytest

from mock_server.core import jsonvalue
from mock_server.core.resources import PACKAGE_DIR
from mock_server.http.mock import PlatformMock
from mock_server.http.server import BackgroundServer
from mock_server.proxy.forward import BackgroundProxy, Proxy
from mock_server.proxy.recording import Recorder
from mock_server.state import fixture_format
from mock_server.state.fixture_format import FixtureDocument
from tests.conftest import CONTROL_PLANE
from tests.test_world_of_the_flows import _flows


@dataclass(frozen=True)
class Written:
    dumped: FixtureDocument
    recorded: FixtureDocument


@pytest.fixture(scope="module")
def written() -> Written:
    target = PlatformMock()
    store = target.store
    secrets = [s.id for s in store.secrets.group_named("llm-keys").secrets.values()]
    with BackgroundServer(target) as served:
        recorder = Recorder()
        token = target.auth.dev_token()
        headers = {"Authorization": f"Bearer {token}"}
        with (
            BackgroundProxy(Proxy(served.url, recorder=recorder)) as proxy,
            httpx.Client(base_url=proxy.url + CONTROL_PLANE, headers=headers) as api,
            httpx.Client(base_url=proxy.url + "/gateway", headers=headers) as gateway,
        ):
            api.get("/session")
            api.get("/jobs/app-trainer/runs", params={"limit": 100})
            for secret in secrets:
                api.post("/secrets/deployments", json={"secretIds": [secret]})
            api.get("/personal-access-tokens/ci")
            gateway.get("/models")
            gateway.post("/embeddings", json={"model": "text-embedding-3-small", "input": "x"})
            created = gateway.post("/responses", json={"model": "gpt-4o-mini", "input": "Hi."})
            gateway.get(f"/responses/{created.json()['id']}/input_items")
            _flows(api)
            api.get("/model-versions")
    recorded, _ = recorder.document()
    # Through JSON, as both reach a reader: the records compared as written, keys in order.
    return Written(json.loads(json.dumps(store.dump())), json.loads(json.dumps(recorded)))


def _runs(document: FixtureDocument) -> dict[str, fixture_format.RunRecord]:
    return {
        run.get("id", ""): run
        for application in document.get("applications", [])
        for run in application.get("runs", [])
    }


def _deployments(document: FixtureDocument) -> dict[str, fixture_format.DeploymentRecord]:
    return {
        deployment.get("id", ""): deployment
        for application in document.get("applications", [])
        for deployment in application["deployments"]
        if deployment.get("statusId")  # seen whole (a recording's others are placeholders)
    }


def _by(key: str, records: list[typing.Any]) -> dict[str, object]:
    return {record[key]: record for record in records}


# For each kind, the records of a document by the entity they are of; those a recording
# knows whole (secret values, files and a group's or binding's times no answer shows).
SAME_ENTITY: dict[str, typing.Callable[[FixtureDocument], typing.Mapping[str, object]]] = {
    "runs": _runs,
    "deployments": _deployments,
    "personalAccessTokens": lambda d: _by("id", d.get("personalAccessTokens", [])),
    "models": lambda d: _by("id", d.get("models", [])),
    "modelResponses": lambda d: {str(r["response"]["id"]): r for r in d.get("modelResponses", [])},
}


@pytest.mark.parametrize("kind", SAME_ENTITY, ids=str)
def test_a_recording_writes_the_record_a_dump_writes_of_the_same_entity(
    written: Written, kind: str
):
    recorded, dumped = SAME_ENTITY[kind](written.recorded), SAME_ENTITY[kind](written.dumped)
    assert recorded, f"the recording has no {kind}"
    # Compared as JSON text: the same keys, values and order of keys.
    shown = {key: json.dumps(record) for key, record in recorded.items()}
    assert shown == {key: json.dumps(dumped[key]) for key in recorded}


def _declared(kind: type) -> dict[str, tuple[object, bool]]:
    """A record's keys in the order it declares them, each with its type and whether it is
    required (read from the declarations: under postponed annotations, a TypedDict's own
    `__required_keys__` cannot see `NotRequired`)."""
    names = vars(fixture_format) | vars(jsonvalue)
    declared = {}
    for key, annotation in kind.__annotations__.items():
        text = annotation
        if isinstance(annotation, typing.ForwardRef):
            text = annotation.__forward_arg__
        hint = eval(text, names) if isinstance(text, str) else text
        required = getattr(kind, "__total__", True)
        if typing.get_origin(hint) in (typing.NotRequired, typing.Required):
            required = typing.get_origin(hint) is typing.Required
            (hint,) = typing.get_args(hint)
        declared[key] = (hint, required)
    return declared


def _fields(kind: type) -> dict[str, object]:
    return {key: hint for key, (hint, _) in _declared(kind).items()}


def _out_of_order(value: object, hint: object, where: str) -> list[str]:
    """Where a written value's keys are not in the order its record declares them."""
    if typing.is_typeddict(hint):
        assert isinstance(hint, type) and isinstance(value, dict), where
        fields = _fields(hint)
        found = (
            [] if list(value) == [k for k in fields if k in value] else [f"{where}: {list(value)}"]
        )
        for key, item in value.items():
            found += _out_of_order(item, fields[key], f"{where}.{key}")
        return found
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and isinstance(value, list):
        return [
            e
            for i, item in enumerate(value)
            for e in _out_of_order(item, arguments[0], f"{where}[{i}]")
        ]
    if origin in (typing.Union, type(int | str)) and isinstance(value, dict):
        (record,) = [a for a in arguments if set(value) <= set(_fields(a))]
        return _out_of_order(value, record, where)
    return []  # JSON carried whole (a manifest, a response), or a scalar


@pytest.mark.parametrize("which", ["dumped", "recorded"])
def test_every_record_written_has_its_kinds_order_of_keys(written: Written, which: str):
    document = getattr(written, which)
    assert _out_of_order(document, FixtureDocument, "document") == []


# Records whose shape is also another format's, so that a dict of their keys elsewhere is
# that format's: the contract's role binding subjects and permissions (as a manifest
# carries them), the `{name, id}` of every named thing, and the live view's grants and
# integrations (shown in the fixture's words).
SHARED_SHAPES = {
    "BoundSubjectRecord",
    "PermissionRecord",
    "TenantRecord",
    "NamedRecord",
    "GrantRecord",
    "IntegrationRecord",
}
RECORDS = {
    name: (set(declared), {key for key, (_, required) in declared.items() if required})
    for name, kind in vars(fixture_format).items()
    if typing.is_typeddict(kind) and not name.startswith("_")
    if name not in SHARED_SHAPES | {"FixtureDocument"}
    for declared in [_declared(kind)]
}


# What names any record, of whatever format (`{name, type}` is a role binding's subject on the
# wire too): a record of the fixture format is written with a key beyond these.
NAMING = frozenset({"id", "name", "type"})


def _keys_written(node: ast.AST) -> set[str] | None:
    """The keys a dict display or a call by keywords writes, when they are all named."""
    if isinstance(node, ast.Dict) and node.keys:
        keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        named = {key for key in keys if isinstance(key, str)}
        return named if len(named) == len(node.keys) else None
    if isinstance(node, ast.Call) and node.keywords:
        names = [k.arg for k in node.keywords if k.arg is not None]
        return set(names) if len(names) == len(node.keywords) else None
    return None


def test_no_module_but_the_fixture_format_writes_a_fixture_record():
    writers = []
    modules = sorted(PACKAGE_DIR.rglob("*.py"))
    assert len(modules) > 50, PACKAGE_DIR  # the package's modules, every one
    for path in modules:
        if path.name == "fixture_format.py" and path.parent.name == "state":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            keys = _keys_written(node)
            for name, (every, required) in RECORDS.items():
                if keys and len(keys) > 1 and keys - NAMING and required <= keys <= every:
                    where = path.relative_to(PACKAGE_DIR.parent)
                    writers.append(f"{where}:{getattr(node, 'lineno', 0)} {name}")
    assert writers == []
