"""The tables of the docs pages and the spec that list operations or errors, written from
their one source: the contract (`contract.operations()`) and the error classes
(`mock_server.core.errors`).

`python -m tools.tables` writes them in place; `tests/test_contract_documents.py` fails while
a document differs from what this writes, so no row is kept by hand:

- `docs/operations.md`: one row per operation of the contract. The rows keep their numbers
  (the pages refer to operations by them); a new operation gets the next one, and the row
  of an operation the contract no longer has goes.
- `docs/reliability.md`: the number of operations the fuzzing covers, the workflows of
  linked calls it runs (the spec's links, `contract.workflows()`), and the number of cases
  of the bad-input suite (which pages every paginated operation), as pytest collects them
  (`collected`); the test that checks the page counts them from the suite's module
  (`cases`), and the two agree while every case is a `parametrize` mark.
- `docs/errors.md`, and `spec/control-plane.yaml` (`info.description`): one row per error
  class, `condition | status | code`.
- `docs/curl.md`: a curl of each operation, in the operations page's order (`tools/curls.py`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from math import prod
from pathlib import Path
from types import ModuleType

from mock_server.contract import documents as contract
from mock_server.core import errors
from mock_server.handlers import catalog
from tools import curls

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

OPERATIONS_PAGE = DOCS / "operations.md"
ERRORS_PAGE = DOCS / "errors.md"
RELIABILITY_PAGE = DOCS / "reliability.md"
CURL_PAGE = DOCS / "curl.md"
SPEC = ROOT / "spec" / contract.CONTROL_PLANE_SPEC

OPERATION_ROW = re.compile(r"^\| (\d+) \| `(\w+) ([^`]+)` \| `(\w+)` \|$", re.MULTILINE)
OPERATIONS_HEAD = "| # | operation | operationId |\n|---|---|---|\n"
ERRORS_HEAD = "| condition | status | code |\n|---|---|---|\n"
ERROR_ROW = re.compile(r"^\| .+ \| \d{3} \| \d{5} \|$")
COUNTED = re.compile(r"all \d+ operations")
WORKFLOWS = re.compile(r"the spec's workflows: [^)]*\)")
BAD_INPUTS = re.compile(r"(\(`tests/test_bad_inputs\.py`\): )\d+ cases")


def _shown_path(operation: contract.Operation) -> str:
    gateway = operation.document == contract.GATEWAY_SPEC
    return ("{gateway}" if gateway else "") + operation.path


def operations_table(page: str) -> str:
    """The page's table of operations: the rows it has, in their order, for the operations
    the contract still has; then a row for each operation it lacks, in the contract's order."""
    operations = contract.operations()
    listed = [op for *_, op in OPERATION_ROW.findall(page) if op in operations]
    order = [*listed, *(op for op in operations if op not in listed)]
    rows = [
        f"| {number} | `{operations[op].method} {_shown_path(operations[op])}` | `{op}` |"
        for number, op in enumerate(order, start=1)
    ]
    return OPERATIONS_HEAD + "\n".join(rows) + "\n"


def errors_table(indent: str = "") -> str:
    """The table of error conditions, one row per class, in the order of their codes (the
    catalog imported: every handler and state rule, so every condition declared beside a
    rule, is loaded)."""
    assert catalog.CATALOG
    rows = [ERRORS_HEAD.splitlines()[0], ERRORS_HEAD.splitlines()[1]]
    rows += [f"| {cls.condition} | {cls.status} | {cls.code} |" for cls in errors.error_classes()]
    return "".join(f"{indent}{row}\n" for row in rows)


def _replace_table(text: str, head: str, table: str, indent: str = "") -> str:
    """The text with the table that starts with `head` (its first line) replaced."""
    first = indent + head.splitlines()[0] + "\n"
    start = text.index(first)
    end = start
    lines = text[start:].splitlines(keepends=True)
    for line in lines:
        if not line.startswith(indent + "|"):
            break
        end += len(line)
    return text[:start] + table + text[end:]


def cases(module: ModuleType) -> int:
    """How many test cases a test module's functions make: each parametrised one counts the
    product of its parameter lists."""
    total = 0
    for name, function in vars(module).items():
        if name.startswith("test_") and callable(function):
            total += prod(
                len(mark.args[1])
                for mark in getattr(function, "pytestmark", [])
                if mark.name == "parametrize"
            )
    return total


def operations_page(text: str) -> str:
    """`docs/operations.md` with its table of operations as it should be."""
    return _replace_table(text, OPERATIONS_HEAD, operations_table(text))


def errors_page(text: str) -> str:
    """`docs/errors.md` with its table of error conditions as it should be."""
    return _replace_table(text, ERRORS_HEAD, errors_table())


def collected(test_file: str) -> int:
    """How many test cases pytest collects from a test file of the repository."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", test_file],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.MULTILINE)
    assert found, f"pytest collected nothing from {test_file}: {done.stdout[-500:]}"
    return int(found[1])


def reliability_page(text: str, bad_input_cases: int | None = None) -> str:
    """`docs/reliability.md` with its counts and list of workflows as they should be, given
    the number of cases of the bad-input suite (else counted as pytest collects them)."""
    if bad_input_cases is None:
        bad_input_cases = collected("tests/test_bad_inputs.py")
    text = _once(COUNTED, f"all {len(contract.operations())} operations", text)
    named = ", ".join(f"`{workflow}`" for workflow in contract.workflows())
    text = _once(WORKFLOWS, f"the spec's workflows: {named})", text)
    return _once(BAD_INPUTS, rf"\g<1>{bad_input_cases} cases", text)


def _once(pattern: re.Pattern[str], replacement: str, text: str) -> str:
    """The text with the one place the pattern matches replaced (a document that lost that
    place fails, rather than going unchecked)."""
    written, count = pattern.subn(replacement, text)
    assert count == 1, f"{pattern.pattern!r} matches {count} places of the document"
    return written


def spec(text: str) -> str:
    """The control plane's document (as text) with its error table as it should be."""
    return _replace_table(text, ERRORS_HEAD, errors_table(indent="    "), indent="    ")


def curl_page(text: str) -> str:
    """`docs/curl.md` with a curl of each operation, numbered as the operations page (as it
    should be) numbers them."""
    table = operations_table(OPERATIONS_PAGE.read_text())
    return curls.curl_page(text, [op for *_, op in OPERATION_ROW.findall(table)])


WRITTEN = {
    OPERATIONS_PAGE: operations_page,
    ERRORS_PAGE: errors_page,
    RELIABILITY_PAGE: reliability_page,
    CURL_PAGE: curl_page,
    SPEC: spec,
}


def main() -> int:
    for path, write in WRITTEN.items():
        text = path.read_text()
        written = write(text)
        if written != text:
            path.write_text(written)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
