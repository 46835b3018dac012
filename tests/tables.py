"""The tables of the README and the spec that list operations or errors, written from their
one source: the contract (`contract.operations()`) and the error classes (`mock_server.errors`).

`python -m tests.tables` writes them in place; `tests/test_contract_documents.py` fails while
a document differs from what this writes, so no row is kept by hand:

- README, "The operations": one row per operation of the contract. The rows keep their
  numbers (the README refers to operations by them); a new operation gets the next one, and
  the row of an operation the contract no longer has goes.
- README, "Reliability": the number of operations the fuzzing covers.
- README, "Errors", and `spec/control-plane.yaml` (`info.description`): one row per error
  class, `condition | status | code`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mock_server import catalog, contract, errors

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SPEC = ROOT / "spec" / contract.CONTROL_PLANE_SPEC

OPERATION_ROW = re.compile(r"^\| (\d+) \| `(\w+) ([^`]+)` \| `(\w+)` \|$", re.MULTILINE)
OPERATIONS_HEAD = "| # | operation | operationId |\n|---|---|---|\n"
ERRORS_HEAD = "| condition | status | code |\n|---|---|---|\n"
ERROR_ROW = re.compile(r"^\| .+ \| \d{3} \| \d{5} \|$")
COUNTED = re.compile(r"all \d+ operations")


def _shown_path(operation: contract.Operation) -> str:
    gateway = operation.document == contract.GATEWAY_SPEC
    return ("{gateway}" if gateway else "") + operation.path


def operations_table(readme: str) -> str:
    """The README's table of operations: the rows it has, in their order, for the operations
    the contract still has; then a row for each operation it lacks, in the contract's order."""
    operations = contract.operations()
    listed = [op for *_, op in OPERATION_ROW.findall(readme) if op in operations]
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


def readme(text: str) -> str:
    """The README with its generated tables and count as they should be."""
    text = _replace_table(text, OPERATIONS_HEAD, operations_table(text))
    text = _replace_table(text, ERRORS_HEAD, errors_table())
    return COUNTED.sub(f"all {len(contract.operations())} operations", text)


def spec(text: str) -> str:
    """The control plane's document (as text) with its error table as it should be."""
    return _replace_table(text, ERRORS_HEAD, errors_table(indent="    "), indent="    ")


def main() -> int:
    for path, write in ((README, readme), (SPEC, spec)):
        text = path.read_text()
        written = write(text)
        if written != text:
            path.write_text(written)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
