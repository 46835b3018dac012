"""Fixture documents: read from YAML, checked against the fixture JSON Schema, applied to a store.

Each section is read and written by the state area it mirrors (`Secrets.load_group` beside
`Secrets.dump`, ...), through the same methods the API uses (staging, tagging, token creation
go through the API's own rules), so no fixture can build a world the API could not. This
module reads the text, checks it, finds the lines, and applies and dumps whole documents.
Every error names the file, the line and the field.

Every door is bounded in time and memory, whatever it is fed. A fixture is at most
`MAX_FIXTURE_BYTES` (a regular file is measured before it is read; a pipe is read with a
deadline; a device, such as /dev/zero, is refused at once). The text is read in one pass
over libyaml's events, without a node tree, and refused there as soon as it cannot be a
fixture (a root that is not a mapping, an alias, a repeated key, a tag, nesting past
`MAX_DEPTH`); nothing falls back to PyYAML's pure-Python reader. Schema problems are found
record by record by jsonschema-rs and explained by Python's jsonschema for the first
`MAX_EXPLAINED_RECORDS` records at fault only; their lines come from a second pass over the
events. A value no response can carry (an integer past 2^53 - 1, even one of 5,000 digits)
is a field error.
"""

from __future__ import annotations

import difflib
import math
import os
import select
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import jsonschema_rs
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from mock_server import errors
from mock_server.resources import package_file
from mock_server.state.area import IdTaken
from mock_server.validation import (
    BODY_LIMITS,
    MAX_DEPTH,
    depth,
    field_path,
    is_unicode,
)

if TYPE_CHECKING:
    from mock_server.state.store import Store

# The largest fixture, from any door: what the admin API takes in one body.
MAX_FIXTURE_BYTES = BODY_LIMITS["adminLoadFixtures"]
PIPE_SECONDS = 30  # a fixture read from a pipe (`--fixtures <(generate)`) arrives within this
MAX_EXPLAINED_RECORDS = 200  # records at fault that Python's jsonschema explains in full
Path_ = tuple[Any, ...]  # a field's place in a document: its keys and indexes


class FixtureError(ValueError):
    """A fixture document that is not valid, with where and why."""


@dataclass(frozen=True)
class Fixture:
    """One fixture document and where it came from (for error messages)."""

    data: dict[str, Any]
    source: str = "<fixture>"
    text: str | None = None  # the YAML read, for the lines of errors found after parsing

    def lines(self, paths: Iterable[Path_]) -> dict[Path_, int]:
        """The line of the field at each path (or of its nearest ancestor), where known:
        one pass over the text's events, whatever the number of paths."""
        return {} if self.text is None else _lines(self.text, paths)

    def line(self, path: Path_) -> int | None:
        return self.lines([path]).get(path)

    def where(self, path: Path_) -> str:
        return self.located([path])[0]

    def apply_to(self, store: Store) -> None:
        """Enter the store's world, every record through the API's own rules, or raise
        FixtureError naming every record that cannot (the store keeps its world)."""
        apply_document(store, self)

    def located(self, paths: list[Path_]) -> list[str]:
        """`file:line: field` for each path, the lines found in one pass."""
        lines = self.lines(paths)
        return [_where(self.source, lines.get(path), path) for path in paths]


def _where(source: str, line: int | None, path: Path_) -> str:
    return f"{source}{f':{line}' if line else ''}: {field_path(path) or '(document)'}"


@cache
def fixture_schema() -> dict[str, Any]:
    schema: dict[str, Any] = yaml.safe_load(package_file("fixture-schema.yaml").read_text())
    return schema


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


def _record_schema(section: str) -> dict[str, Any] | None:
    """The schema of one record of a section that is a list of records, with the schema's
    definitions; None for the other sections."""
    schema = fixture_schema()
    items = schema["properties"].get(section, {})
    if "$ref" in items:  # a list defined once for several sections (`namedList`)
        items = schema["$defs"][items["$ref"].rsplit("/", 1)[1]]
    if items.get("type") != "array" or "items" not in items:
        return None
    return {"$defs": schema["$defs"], **items["items"]}


@cache
def _record_validators(section: str) -> tuple[Any, Draft202012Validator] | None:
    """jsonschema-rs and Python jsonschema for one record of `section`."""
    schema = _record_schema(section)
    if schema is None:
        return None
    fast = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
    return fast, Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _surely_valid(validator: Any, data: Any) -> bool:
    try:
        return bool(validator.is_valid(data))
    except Exception:  # a value it cannot take (a YAML timestamp, a huge integer)
        return False


MAX_INTEGER = 2**53 - 1  # the largest integer every JSON client reads exactly


# -- reading: bounded doors, one pass over libyaml's events -------------------------------


def read_text(path: str | Path) -> str:
    """The text of a fixture file: a regular file, or a pipe (process substitution,
    `/dev/stdin` fed by a pipe) read within `PIPE_SECONDS`; at most `MAX_FIXTURE_BYTES`,
    UTF-8. Anything else (a directory, a device such as /dev/zero or a terminal) is refused
    before a byte is read."""
    try:
        # Not blocking: opening a named pipe would otherwise wait for its writer forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FixtureError(f"{path}: cannot read fixture file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            data = _read_file(fd, path)
        elif stat.S_ISFIFO(mode):
            data = _read_pipe(fd, path)
        else:
            kind = "a directory" if stat.S_ISDIR(mode) else "a device or socket"
            raise FixtureError(
                f"{path}: cannot read fixture file: it is {kind}, not a file or a pipe"
            )
    except OSError as exc:
        raise FixtureError(f"{path}: cannot read fixture file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FixtureError(f"{path}: cannot read fixture file: not UTF-8 ({exc.reason})") from None


def _too_big(path: str | Path) -> NoReturn:
    raise FixtureError(
        f"{path}: a fixture is at most {MAX_FIXTURE_BYTES // (1024 * 1024)} MiB; this one is more"
    )


def _read_file(fd: int, path: str | Path) -> bytes:
    if os.fstat(fd).st_size > MAX_FIXTURE_BYTES:
        _too_big(path)
    chunks, size = [], 0
    while chunk := os.read(fd, 1024 * 1024):  # a file may grow while it is read
        size += len(chunk)
        if size > MAX_FIXTURE_BYTES:
            _too_big(path)
        chunks.append(chunk)
    return b"".join(chunks)


def _read_pipe(fd: int, path: str | Path) -> bytes:
    """A pipe's bytes up to its end, which must come within `PIPE_SECONDS`. `poll` tells
    data (POLLIN) from a writer that has gone (POLLHUP); a named pipe no writer has opened
    yet shows neither, and is waited for within the same deadline."""
    deadline = time.monotonic() + PIPE_SECONDS
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FixtureError(
                f"{path}: cannot read fixture file: the pipe did not end within {PIPE_SECONDS} s"
            )
        events = poller.poll(left * 1000)
        if not events:
            continue
        if events[0][1] & select.POLLIN:
            try:
                chunk = os.read(fd, 1024 * 1024)
            except BlockingIOError:
                continue
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_FIXTURE_BYTES:
                _too_big(path)
            chunks.append(chunk)
        elif events[0][1] & (select.POLLHUP | select.POLLERR):
            break
    return b"".join(chunks)


class _EventLoader(yaml.CSafeLoader):
    """libyaml's parser and PyYAML's safe resolver and scalar constructors, for `_read`."""


# Scalar tags a fixture may carry, and the text they turn into (others are refused).
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "timestamp", "binary")
)
_COLLECTION_TAGS = {
    yaml.MappingStartEvent: "tag:yaml.org,2002:map",
    yaml.SequenceStartEvent: "tag:yaml.org,2002:seq",
}
_SKIP: Any = object()  # the key of a value read and thrown away (after a key that is not text)
_UNREADABLE: Any = object()  # a scalar that cannot be read (its problem is noted)


def _not_yaml(source: str, mark: Any, problem: str) -> NoReturn:
    line = f":{mark.line + 1}" if mark is not None else ""
    raise FixtureError(f"{source}{line}: not valid YAML: {problem}")


def _yaml_error(source: str, text: str, exc: yaml.YAMLError) -> FixtureError:
    """A FixtureError saying what libyaml found wrong, and where."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        number = text.encode("utf-8", "surrogatepass")[: exc.position].count(b"\n") + 1
        character = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return FixtureError(
            f"{source}:{number}: not valid YAML: character #x{character:04x} is not allowed"
        )
    mark = getattr(exc, "problem_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    # The parts of the message that are about the text, not its "<unicode string>".
    parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    reason = ", ".join(p for p in parts if p) or str(exc)
    return FixtureError(f"{source}{line}: not valid YAML: {reason}")


def _read(text: str, source: str) -> tuple[Any, list[Path_]]:
    """The data of a YAML document, built straight from libyaml's events (at a hundred
    thousand records many times faster than PyYAML's composer and constructor, and keeping
    no node tree), and the paths of its values no response can carry (a YAML timestamp, a
    lone surrogate): none, for a plain document.

    Refuses at once, with the line, what no fixture can be: a root that is not a mapping,
    an alias, a tag on a collection or one YAML has not for scalars, a merge key, a key
    given twice or that is a collection, further documents, nesting past `MAX_DEPTH`. A
    scalar that cannot be read (an integer of thousands of digits, a date that is none)
    is a field error, reported with the others once the whole text is read."""
    loader = _EventLoader(text)
    plain_scalars: dict[str, Any] = {}  # each distinct untagged plain scalar, read once
    unreadable: list[tuple[Path_, int, str]] = []
    odd: list[Path_] = []
    stack: list[tuple[Any, Any]] = []
    current: Any = None
    key: Any = None

    def here() -> Path_:
        """The path of the node being read."""
        parts: list[Any] = []
        for container, at in [*stack[1:], (current, key)]:
            if container.__class__ is list:
                parts.append(len(container))
            elif at is not None and at is not _SKIP:
                parts.append(at)
        return tuple(parts)

    def scalar(event: Any) -> Any:
        """The value of a scalar; `_UNREADABLE` (its problem noted) if it cannot be read,
        `_ODD` (its path noted) if no response can carry it."""
        tag = event.tag
        if tag is None or tag == "!":
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
        if tag not in _SCALAR_TAGS:
            if tag == "tag:yaml.org,2002:merge":
                _not_yaml(source, event.start_mark, "merge keys (<<) are not allowed")
            _not_yaml(source, event.start_mark, f"the tag {event.tag or tag} is not allowed")
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            # The constructor function itself: `construct_object` would keep every node.
            value = loader.yaml_constructors[tag](loader, node)
        except (ValueError, OverflowError) as exc:  # the digit limit of int(), a 13th month
            unreadable.append((here(), event.start_mark.line + 1, _unreadable(tag, node, exc)))
            return _UNREADABLE
        if value.__class__ is int and abs(value) > MAX_INTEGER:
            why = f"{_shown(value)} is past the largest integer, 2^53 - 1"
            unreadable.append((here(), event.start_mark.line + 1, why))
            return _UNREADABLE
        if next(_unsendable_values(value, ()), None) is not None:
            odd.append(here())
            return _Odd(value)
        return value

    try:
        get = loader.get_event
        get()  # the stream's start
        if loader.check_event(yaml.StreamEndEvent):
            return None, []  # no document at all
        get()  # the document's start
        first = loader.peek_event()
        if first.__class__ is not yaml.MappingStartEvent:
            if first.__class__ is yaml.ScalarEvent and first.value == "" and first.implicit[0]:
                return None, []  # an empty document
            raise FixtureError(f"{source}: a fixture document must be a mapping of sections")
        root: Any = None
        while True:
            event: Any = get()
            kind = event.__class__
            if kind is yaml.ScalarEvent:
                if event.tag is not None:
                    value = scalar(event)
                elif not event.style:  # plain: its type is what its text resolves to
                    value = plain_scalars.get(event.value, plain_scalars)
                    if value is plain_scalars:
                        value = scalar(event)
                        if value is not _UNREADABLE and value.__class__ is not _Odd:
                            plain_scalars[event.value] = value
                else:  # quoted or a block: text, only to check for lone surrogates
                    value = event.value
                    try:
                        value.encode("utf-8")
                    except UnicodeEncodeError:
                        odd.append(here())
                if value.__class__ is _Odd:
                    value = value.value
                if current.__class__ is dict and key is None:  # a key
                    if value.__class__ is not str:
                        if value is not _UNREADABLE:
                            why = f"the key {value!r} is not text"
                            unreadable.append((here(), event.start_mark.line + 1, why))
                        key = _SKIP
                    elif value in current:
                        _not_yaml(
                            source,
                            event.start_mark,
                            f"the key {value!r} appears twice in one mapping",
                        )
                    else:
                        key = value
                    continue
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                if current.__class__ is dict and key is None:
                    _not_yaml(source, event.start_mark, "a key must be text, not a collection")
                if event.tag is not None and event.tag != _COLLECTION_TAGS[kind]:
                    _not_yaml(source, event.start_mark, f"the tag {event.tag} is not allowed")
                stack.append((current, key))
                if len(stack) > MAX_DEPTH:
                    raise FixtureError(
                        f"{source}:{event.start_mark.line + 1}: nested more than {MAX_DEPTH} "
                        "levels deep"
                    )
                current, key = ({} if kind is yaml.MappingStartEvent else []), None
                continue
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                value = current
                current, key = stack.pop()
            elif kind is yaml.AliasEvent:
                _not_yaml(source, event.start_mark, _alias(event))
            else:
                _not_yaml(source, event.start_mark, f"unexpected {kind.__name__}")
            if current is None:
                root = value
                break
            if current.__class__ is list:
                current.append(value)
            else:
                if key is not _SKIP:
                    current[key] = value
                key = None
        loader.get_event()  # the document's end
        if not loader.check_event(yaml.StreamEndEvent):
            another: Any = loader.peek_event()
            _not_yaml(
                source,
                another.start_mark,
                "expected a single document in the stream, but found another document",
            )
    except yaml.YAMLError as exc:
        raise _yaml_error(source, text, exc) from None
    finally:
        loader.dispose()
    if unreadable:
        raise FixtureError(
            _listed(
                f"{_where(source, line, path)}: {why}"
                for path, line, why in sorted(unreadable, key=lambda u: u[1])
            )
        )
    return root, odd


@dataclass(frozen=True, slots=True)
class _Odd:
    """A scalar's value no response can carry, as `scalar` hands it back."""

    value: Any


def _shown(value: int) -> str:
    """An integer as text, or its size when it has too many digits to write out."""
    if value.bit_length() < 10_000:  # Python writes ints of up to 4,300 digits
        return str(value)
    return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"


def _alias(event: Any) -> str:
    return f"the alias *{event.anchor} is not allowed: fixtures repeat values in full"


def _unreadable(tag: str, node: yaml.ScalarNode, exc: Exception) -> str:
    """Why a scalar cannot be read, in the terms of the document."""
    if tag.endswith(":int"):
        digits = sum(c.isdigit() for c in node.value)
        return f"an integer of {digits} digits is past the largest integer, 2^53 - 1"
    return f"{node.value[:100]!r} cannot be read as a {tag.rsplit(':', 1)[1]}: {exc}"


def parse(text: str, source: str = "<fixture>") -> Fixture:
    """A fixture from YAML (or JSON) text, checked against the schema."""
    if len(text) > MAX_FIXTURE_BYTES:
        _too_big(source)
    data, odd = _read(text, source)
    return check(data, source, text=text, odd=odd)


def check(
    data: Any,
    source: str = "<fixture>",
    text: str | None = None,
    *,
    odd: list[Path_] | None = None,
) -> Fixture:
    """A fixture from already parsed data, checked against the schema. `odd` (from `_read`)
    says where the values no response can carry are, and that the data nests no deeper than
    `MAX_DEPTH`; data from elsewhere (a JSON body) is walked to find them."""
    fixture = Fixture(data if isinstance(data, dict) else {}, source, text)
    if not isinstance(data, dict):
        raise FixtureError(f"{source}: a fixture document must be a mapping of sections")
    if odd is None and depth(data) > MAX_DEPTH:
        raise FixtureError(f"{source}: nested more than {MAX_DEPTH} levels deep")
    problems, unexplained = _schema_problems(data, odd)
    if not problems and odd != []:
        problems = list(_unsendable_values(data, ()))
    if not problems:
        problems = _generated_problems(data)
    if problems:
        lines = fixture.lines(path for path, _ in problems)
        # In the order of the file's lines, as an editor shows them.
        problems.sort(key=lambda p: (lines.get(p[0]) or 0, list(map(str, p[0]))))
        raise FixtureError(
            _listed(
                (f"{_where(source, lines.get(path), path)}: {why}" for path, why in problems),
                more_elsewhere=unexplained,
            )
        )
    return fixture


THIN_OVER = 64  # a list longer than this is cut, for an explanation, to what matters in it
KEPT = 8  # elements a cut list keeps from its start (the schema's `minItems` are below it)


# What one document may ask to be generated, in all: each `generate` is bounded by the
# schema, but a few lines of them could otherwise ask for more than any memory holds.
MAX_GENERATED = {"applications": 10_000, "runs": 1_000_000, "modelResponses": 100_000}
RUNS_PER_GENERATED_JOB = 30  # at most (`Deployments.generate_applications`)


def _generated_problems(data: dict[str, Any]) -> list[tuple[Path_, str]]:
    """The sections of a (schema-valid) document that ask for more generated records, in
    all, than `MAX_GENERATED` allows."""

    def asked(records: Any) -> int:
        return sum(r["generate"] for r in records or [] if isinstance(r, dict) and "generate" in r)

    applications = data.get("applications") or []
    totals = {
        "applications": asked(applications),
        "runs": asked(applications) * RUNS_PER_GENERATED_JOB
        + sum(asked(a.get("runs")) for a in applications if "generate" not in a),
        "modelResponses": asked(data.get("modelResponses")),
    }
    named = {"applications": "applications", "runs": "runs", "modelResponses": "model responses"}
    return [
        (
            ("modelResponses",) if kind == "modelResponses" else ("applications",),
            f"asks for up to {total:,} generated {named[kind]} in all; one document may ask "
            f"for at most {MAX_GENERATED[kind]:,}",
        )
        for kind, total in totals.items()
        if total > MAX_GENERATED[kind]
    ]


def _schema_problems(data: dict[str, Any], odd: list[Path_] | None) -> tuple[list[Any], bool]:
    """Every schema problem of the document, explained as (path, message), and whether some
    were left unexplained (past `MAX_EXPLAINED_RECORDS` records or elements at fault).

    jsonschema-rs tells the records at fault, one by one, and inside one of them the
    elements at fault of its long lists (a job's runs); Python's jsonschema explains each
    record at fault with its long lists cut to those elements, and the rest of the document
    (its sections less their records). So a document of a hundred thousand records costs
    fast passes and a few explanations, however many records are at fault."""
    if odd in ([], None) and _surely_valid(_fast_validator(), data):  # odd values: it cannot
        return [], False
    problems: list[tuple[Path_, str]] = []
    outline = {
        section: [] if _record_validators(section) and isinstance(value, list) else value
        for section, value in data.items()
    }
    _explain(_validator(), outline, (), _same, problems)
    budget, left_out = MAX_EXPLAINED_RECORDS, False
    for section, records in data.items():
        validators = _record_validators(section)
        if validators is None or not isinstance(records, list):
            continue
        fast, slow = validators
        for index, record in enumerate(records):
            if _surely_valid(fast, record):
                continue
            if budget <= 0:
                left_out = True
                continue
            value, translate, cut, budget = _thinned(record, _record_schema(section), budget)
            left_out = left_out or cut
            found = len(problems)
            _explain(slow, value, (section, index), translate, problems)
            if len(problems) == found:  # the cut left out what was wrong: look at all of it
                _explain(slow, record, (section, index), _same, problems)
    if not problems and odd == []:  # rs found a fault the parts do not show: look at all
        _explain(_validator(), data, (), _same, problems)
    return list(dict.fromkeys(problems)), left_out


def _explain(
    validator: Draft202012Validator,
    value: Any,
    prefix: Path_,
    translate: Callable[[Path_], Path_],
    problems: list[tuple[Path_, str]],
) -> None:
    for error in validator.iter_errors(value):
        for problem in _explained(error):
            place = (*prefix, *translate(tuple(problem.absolute_path)))
            problems.append((place, _message(problem)))


def _same(path: Path_) -> Path_:
    return path


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:  # the fixture schema refers only to its own `$defs`
        schema = fixture_schema()["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _branches(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The schema and every schema it combines (`oneOf`, `anyOf`, `allOf`), resolved."""
    schema = _resolved(schema)
    yield schema
    for keyword in ("oneOf", "anyOf", "allOf"):
        for branch in schema.get(keyword, []):
            yield from _branches(branch)


def _item_validator(schema: dict[str, Any] | None, path: Path_) -> Any:
    """jsonschema-rs for the elements of the list at `path` in a value of `schema`, when one
    schema only can apply to them; else None."""
    found: dict[int, dict[str, Any]] = {}

    def walk(node: dict[str, Any], rest: Path_) -> None:
        for branch in _branches(node):
            if not rest:
                if isinstance(branch.get("items"), dict):
                    found[id(branch["items"])] = branch["items"]
            elif isinstance(rest[0], int):
                if isinstance(branch.get("items"), dict):
                    walk(branch["items"], rest[1:])
            elif rest[0] in branch.get("properties", {}):
                walk(branch["properties"][rest[0]], rest[1:])
            elif isinstance(branch.get("additionalProperties"), dict):
                walk(branch["additionalProperties"], rest[1:])

    if schema is not None:
        walk(schema, path)
    if len(found) != 1:
        return None
    (items,) = found.values()
    return _compiled_items(id(items), items)


_ITEM_VALIDATORS: dict[int, Any] = {}  # by the id of an `items` schema of the fixture schema


def _compiled_items(key: int, items: dict[str, Any]) -> Any:
    if key not in _ITEM_VALIDATORS:
        schema = {"$defs": fixture_schema()["$defs"], **items}
        _ITEM_VALIDATORS[key] = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
    return _ITEM_VALIDATORS[key]


def _thinned(
    record: Any, schema: dict[str, Any] | None, budget: int
) -> tuple[Any, Callable[[Path_], Path_], bool, int]:
    """The record with each list longer than `THIN_OVER` cut to its first `KEPT` elements and
    those at fault (as jsonschema-rs judges each against the one schema of its elements; a
    list whose elements more than one schema may describe is kept whole); a function taking
    a path in the cut record back to the path in the record; whether elements at fault were
    left out (past `budget`); and what is left of `budget`."""
    original_of: dict[int, list[int]] = {}  # id of a cut list -> the indexes it kept
    left_out = False
    budget -= 1

    def thin(node: Any, path: Path_) -> Any:
        nonlocal budget, left_out
        if isinstance(node, dict):
            return {k: thin(v, (*path, k)) for k, v in node.items()}
        if not isinstance(node, list):
            return node
        fast = _item_validator(schema, path) if len(node) > THIN_OVER else None
        if fast is None:
            return [thin(item, (*path, i)) for i, item in enumerate(node)]
        kept = list(range(min(KEPT, len(node))))
        for i in range(KEPT, len(node)):
            if not _surely_valid(fast, node[i]):
                if budget <= 0:
                    left_out = True
                    break
                kept.append(i)
                budget -= 1
        cut = [thin(node[i], (*path, i)) for i in kept]
        original_of[id(cut)] = kept
        return cut

    thinned = thin(record, ())

    def translate(path: Path_) -> Path_:
        node, out = thinned, []
        for part in path:
            if isinstance(node, list) and isinstance(part, int) and part < len(node):
                out.append(original_of[id(node)][part] if id(node) in original_of else part)
                node = node[part]
            elif isinstance(node, dict) and part in node:
                out.append(part)
                node = node[part]
            else:
                out.append(part)
        return tuple(out)

    return thinned, translate, left_out, budget


MAX_SHOWN_PROBLEMS = 50  # of one fixture file: past them, how many more there are


def _listed(problems: Iterable[str], more_elsewhere: bool = False) -> str:
    """One line per problem, at most MAX_SHOWN_PROBLEMS of them and then how many more
    (and that there are more elsewhere, when the rest of the document was not explained)."""
    lines = list(problems)
    shown = lines[:MAX_SHOWN_PROBLEMS]
    more = len(lines) - len(shown)
    if more or more_elsewhere:
        tail = f"... and {more} more problem(s)"
        if more_elsewhere:
            tail += ", and more in records not looked into"
        shown.append(tail)
    return "\n".join(shown)


def _message(error: ValidationError) -> str:
    """The schema's message, and for a misspelt value of a closed set, the value meant."""
    if error.validator == "enum" and isinstance(error.instance, str):
        close = difflib.get_close_matches(error.instance, map(str, error.validator_value), 1)
        if close:
            return (
                f"{error.instance!r} is not one of the allowed values; did you mean {close[0]!r}?"
            )
    return str(error.message)


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


def _unsendable_values(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
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
    return parse(read_text(path), str(path))


def default_fixtures() -> list[Fixture]:
    """The bundled default world."""
    return [load(package_file("fixtures") / "default.yaml")]


def _lines(text: str, paths: Iterable[Path_]) -> dict[Path_, int]:
    """The 1-based line of the node at each path, or of its nearest ancestor that exists:
    one pass over libyaml's events, with no node tree, stopping once every path is placed."""
    wanted = set(paths)
    prefixes = {path[:n] for path in wanted for n in range(len(path) + 1)}
    found: dict[Path_, int] = {}  # the line of each prefix reached
    loader = _EventLoader(text)
    # Per open collection: its path, and its next index (a list) or key (a mapping).
    stack: list[list[Any]] = []
    at: Path_ = ()
    try:
        while not loader.check_event(yaml.StreamEndEvent):
            event: Any = loader.get_event()
            kind = event.__class__
            if kind in (yaml.StreamStartEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent):
                continue
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                stack.pop()
                if not stack:
                    break
                continue
            if stack:
                top = stack[-1]
                if top[1] is dict:
                    if top[2] is None:  # a key
                        top[2] = event.value if kind is yaml.ScalarEvent else _SKIP
                        continue
                    at, top[2] = (*top[0], top[2]), None
                else:
                    at, top[2] = (*top[0], top[2]), top[2] + 1
            if at in prefixes:
                found.setdefault(at, event.start_mark.line + 1)
                if len(found) == len(prefixes):
                    break
            if kind is yaml.MappingStartEvent:
                stack.append([at, dict, None])
            elif kind is yaml.SequenceStartEvent:
                stack.append([at, list, 0])
    except yaml.YAMLError:
        pass  # lines are a courtesy: the text was read once already
    finally:
        loader.dispose()
    lines: dict[Path_, int] = {}
    for path in wanted:
        for n in range(len(path), -1, -1):
            if path[:n] in found:
                lines[path] = found[path[:n]]
                break
    return lines


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
    problems: list[tuple[Path_, str]] = []
    for section, apply in store.sections():
        single = section in ("tenant", "clock")
        records = [data.get(section)] if single else data.get(section, [])
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
                problems.append((path, message))
        if problems:  # later sections build on this one: they would only repeat its failures
            break
    if problems:
        places = fixture.located([path for path, _ in problems])  # one pass for every line
        raise FixtureError(
            _listed(f"{where}: {why}" for where, (_, why) in zip(places, problems, strict=True))
        )


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


def dump(store: Store) -> dict[str, Any]:
    """The whole state as a fixture document: loaded into a mock without default fixtures,
    it rebuilds this state, ids and timestamps included (`Store.dump`)."""
    return store.dump()
