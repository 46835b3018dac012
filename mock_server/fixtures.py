"""Fixture documents: read from YAML, checked against the fixture JSON Schema, applied to a store.

Each section is read and written by the state area it mirrors (`Secrets.load_group` beside
`Secrets.dump`, ...), through the same methods the API uses (staging, tagging, token creation
go through the API's own rules), so no fixture can build a world the API could not. This
module reads the text, checks it, keeps the lines, and applies and dumps whole documents.
Every error names the file, the line and the field.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from mock_server import errors
from mock_server.resources import package_file
from mock_server.state.sources import iso, world_time
from mock_server.state.store import IdTaken
from mock_server.validation import (
    MAX_DEPTH,
    depth,
    field_path,
    is_unicode,
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
    text: str | None = None  # the YAML read, for the lines of errors found after parsing

    @cached_property
    def _tree(self) -> yaml.Node | None:
        """The node tree that knows each field's line: given, or composed from the text
        when first needed (most documents never need one, and a big one costs much)."""
        if self.node is not None or self.text is None:
            return self.node
        return yaml.compose(self.text, Loader=yaml.CSafeLoader)

    def line(self, path: tuple[Any, ...]) -> int | None:
        """The line of the field at `path` (or of its nearest ancestor), if known."""
        tree = self._tree
        return _line_of(tree, path) if tree is not None else None

    def where(self, path: tuple[Any, ...]) -> str:
        line = self.line(path)
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


@cache
def _fast_validator() -> Any:
    """jsonschema-rs, which tells a valid document in a fraction of the time; Python's
    jsonschema explains what is wrong with one that is not."""
    return jsonschema_rs.Draft202012Validator(fixture_schema(), validate_formats=True)


def _surely_valid(data: Any) -> bool:
    try:
        return bool(_fast_validator().is_valid(data))
    except Exception:  # a value it cannot take (a YAML timestamp, a huge integer)
        return False


MAX_INTEGER = 2**53 - 1  # the largest integer every JSON client reads exactly


class _UniqueKeys:
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
        return super().construct_mapping(node, deep)  # type: ignore[misc]


class _Loader(_UniqueKeys, yaml.SafeLoader):
    """YAML without aliases: an alias can make a document refer to itself (a recursive
    structure no check survives) or multiply a few lines into millions of values."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                problem=f"the alias *{event.anchor} is not allowed: fixtures repeat values in full",
                problem_mark=event.start_mark,
            )
        return super().compose_node(parent, index)


class _NotPlain(Exception):
    """Text the fast reader leaves to `_Loader`, whose errors say what and where."""


class _EventLoader(yaml.CSafeLoader):  # type: ignore[misc]
    """libyaml's parser, for `_read_fast`."""


def _read_fast(text: str) -> Any:
    """The data of a plain YAML document, built straight from libyaml's events: at a hundred
    thousand records, many times faster than PyYAML's composer and constructor, and it keeps
    no node tree. Plain means what `check` would pass on the way: no aliases, tags on
    collections, repeated or non-text keys, further documents, nesting past `MAX_DEPTH`, or
    values no response can carry. Raises `_NotPlain` for any other text."""
    loader = _EventLoader(text)
    plain_scalars: dict[str, Any] = {}  # each distinct untagged plain scalar, read once

    def scalar(event: Any) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        value = loader.construct_object(node)
        if next(_unsendable_values(value, ()), None) is not None:
            raise _NotPlain
        return value

    try:
        get = loader.get_event
        get(), get()  # the stream's and the document's start
        stack: list[tuple[Any, Any]] = []
        current: Any = None
        key: Any = None
        root: Any = None
        while True:
            event: Any = get()
            kind = event.__class__
            if kind is yaml.ScalarEvent:
                if event.tag is not None:
                    value = scalar(event)
                elif not event.style:  # plain: its type is what its text resolves to
                    text_ = event.value
                    value = plain_scalars.get(text_, plain_scalars)
                    if value is plain_scalars:
                        value = plain_scalars[text_] = scalar(event)
                else:  # quoted or a block: text, only to check for lone surrogates
                    value = event.value
                    value.encode("utf-8")
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                if event.tag is not None and not event.implicit:  # type: ignore[attr-defined]
                    raise _NotPlain
                stack.append((current, key))
                if len(stack) > MAX_DEPTH:
                    raise _NotPlain
                current, key = ({} if kind is yaml.MappingStartEvent else []), None
                continue
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                value = current
                current, key = stack.pop()
            else:  # an alias, an empty document, or anything else `_Loader` should judge
                raise _NotPlain
            if current is None:
                root = value
                break
            if current.__class__ is list:
                current.append(value)
            elif key is None:
                if value.__class__ is not str or value in current or value == "<<":
                    raise _NotPlain  # a repeated, merge or non-text key
                key = value
            else:
                current[key] = value
                key = None
        if not (
            loader.check_event(yaml.DocumentEndEvent)
            and get()
            and loader.check_event(yaml.StreamEndEvent)
        ):
            raise _NotPlain  # more than one document
        return root
    except (yaml.YAMLError, RecursionError, TypeError, ValueError):  # UnicodeError too
        raise _NotPlain from None
    finally:
        loader.dispose()


def parse(text: str, source: str = "<fixture>") -> Fixture:
    """A fixture from YAML (or JSON) text, checked against the schema."""
    try:
        data = _read_fast(text)
    except _NotPlain:
        # PyYAML's own reader says what is wrong and where, as it always has.
        return _parse_slowly(text, source)
    return check(data, source, text=text, plain=True)


def _parse_slowly(text: str, source: str) -> Fixture:
    try:
        # One parse gives both the data and the node tree that knows each field's line.
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, by position
        number = text.count("\n", 0, exc.position) + 1
        raise FixtureError(
            f"{source}:{number}: not valid YAML: character #x{exc.character:04x} is not allowed"
        ) from None
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


def check(
    data: Any,
    source: str = "<fixture>",
    node: yaml.Node | None = None,
    text: str | None = None,
    *,
    plain: bool = False,
) -> Fixture:
    """A fixture from already parsed data, checked against the schema. `plain` data (from
    `_read_fast`) is known to nest and hold only what a response can carry."""
    fixture = Fixture(data if isinstance(data, dict) else {}, source, node, text)
    if not isinstance(data, dict):
        raise FixtureError(f"{source}: a fixture document must be a mapping of sections")
    if not plain and depth(data) > MAX_DEPTH:
        raise FixtureError(f"{source}: nested more than {MAX_DEPTH} levels deep")
    problems = (
        []
        if _surely_valid(data)
        else sorted(  # in the order of the file's lines, as an editor shows them
            (e for error in _validator().iter_errors(data) for e in _explained(error)),
            key=lambda e: (fixture.line(tuple(e.absolute_path)) or 0, list(map(str, e.path))),
        )
    )
    if problems:
        raise FixtureError(
            _listed(f"{fixture.where(tuple(e.absolute_path))}: {_message(e)}" for e in problems)
        )
    values = [] if plain else list(_unsendable_values(data, ()))
    if values:
        raise FixtureError(_listed(f"{fixture.where(path)}: {why}" for path, why in values))
    return fixture


MAX_SHOWN_PROBLEMS = 50  # of one fixture file: past them, how many more there are


def _listed(problems: Iterable[str]) -> str:
    """One line per problem, at most MAX_SHOWN_PROBLEMS of them and then how many more."""
    lines = list(problems)
    shown = lines[:MAX_SHOWN_PROBLEMS]
    if len(lines) > MAX_SHOWN_PROBLEMS:
        shown.append(f"... and {len(lines) - MAX_SHOWN_PROBLEMS} more problem(s)")
    return "\n".join(shown)


def _message(error: ValidationError) -> str:
    """The schema's message, and for a misspelt value of a closed set, the value meant."""
    if error.validator == "enum" and isinstance(error.instance, str):
        close = difflib.get_close_matches(error.instance, map(str, error.validator_value), 1)
        if close:
            return (
                f"{error.instance!r} is not one of the allowed values; did you mean {close[0]!r}?"
            )
    return error.message


def _explained(error: ValidationError) -> list[ValidationError]:
    """Every problem a schema error stands for. Inside a `oneOf` (a run given in full or as
    `generate N`), the branch the record came closest to is the one it meant (best_match's
    choice), and each of that branch's problems is reported: `status` not one of the values
    and `durationSeconds` below 0, not the first of them alone, nor "is not valid under any
    of the given schemas"."""
    if error.validator not in ("oneOf", "anyOf") or not error.context:
        return [error]
    closest = best_match([error])
    while closest.parent is not None and closest.parent is not error:
        closest = closest.parent
    branch = closest.relative_schema_path[0]
    chosen = [e for e in error.context if e.relative_schema_path[0] == branch]
    return [problem for e in chosen for problem in _explained(e)]


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
    # Every record is tried, and every one that cannot enter is reported at once; the
    # caller (`Store`) then keeps the world as it was before the document.
    problems = []
    for section, loader in _SECTIONS:
        single = section in ("tenant", "clock")
        records = [data.get(section)] if single else data.get(section, [])
        apply = loader(store)
        for index, record in enumerate(records):
            if record is None:
                continue
            try:
                apply(record)
            except (ValueError, KeyError, TypeError, ArithmeticError, errors.PlatformError) as exc:
                message = exc.message if isinstance(exc, errors.PlatformError) else str(exc)
                path = (section,) if single else (section, index)
                if isinstance(exc, IdTaken):
                    path += _id_field(record, exc.id)
                problems.append(f"{fixture.where(path)}: {message}")
        if problems:  # later sections build on this one: they would only repeat its failures
            break
    if problems:
        raise FixtureError(_listed(problems))


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


# Each section and the area method that builds one record of it, in dependency order; each
# area writes its sections back (`dump`) beside the code that reads them.
_SECTIONS: tuple[tuple[str, Callable[[Store], Callable[[Any], None]]], ...] = (
    ("tenant", lambda store: store.identity.load_tenant),
    ("users", lambda store: store.identity.load_user),
    ("teams", lambda store: store.identity.load_team),
    ("virtualAccounts", lambda store: store.identity.load_virtual_account),
    ("agents", lambda store: store.identity.load_agent),
    ("clusters", lambda store: store.identity.load_cluster),
    ("workspaces", lambda store: store.identity.load_workspace),
    ("resources", lambda store: store.identity.load_resource),
    ("secretGroups", lambda store: store.secrets.load_group),
    ("mlRepos", lambda store: store.artifacts.load_ml_repo),
    ("grants", lambda store: store.identity.load_grant),
    ("applications", lambda store: store.deployments.load_application),
    ("artifactVersions", lambda store: store.artifacts.load_version),
    ("personalAccessTokens", lambda store: store.tokens.load_token),
    ("modelResponses", lambda store: store.gateway.load_response),
    ("clock", lambda store: lambda moment: store.sources.clock.set(world_time(moment))),
)


def dump(store: Store) -> dict[str, Any]:
    """The whole state as a fixture document: loaded into a mock without default fixtures,
    it rebuilds this state, ids and timestamps included. Each area's dump is its own: it
    shares nothing the world goes on changing."""
    with store.lock:
        sections: dict[str, Any] = {
            **store.identity.dump(),
            **store.secrets.dump(),
            **store.artifacts.dump(),
            **store.deployments.dump(),
            **store.tokens.dump(),
            **store.gateway.dump(),
            "clock": iso(store.sources.clock.now()),
        }
        document = {
            section: sections[section]
            for section, _ in _SECTIONS
            if sections[section] not in ([], None)
        }
        return document
