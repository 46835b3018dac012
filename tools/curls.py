"""The curl of every operation of the contract on `docs/curl.md`, written from the spec's
examples (those Swagger UI's "Try it out" sends: `tests/test_docs_pages.py`), numbered as
the operations page numbers them. `python -m tools.tables` writes them with the tables;
`tests/test_curl_examples.py` fails while the page differs, and runs each as written."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any
from urllib.parse import urlencode

from mock_server.contract import documents as contract

BEGIN = "<!-- curls: written by `python -m tools.tables` from the spec's examples -->\n"
END = "<!-- /curls -->\n"
BLOCK = re.compile(r"<!-- curl: (\w+) (\d{3}) -->\n```sh\n(.*?)```", re.DOTALL)
METHODS = ("get", "put", "post", "delete", "patch")
# What the shell would expand or end inside the double quotes around a URL.
UNQUOTABLE = re.compile(r'["$`\\]')


def _operation(op: contract.Operation) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The operation's object in its document, and its parameters (the path's first)."""
    item = contract.resolved(contract.spec(op.document))["paths"][op.path]
    found: dict[str, Any] = item[op.method.lower()]
    return found, [*item.get("parameters", []), *found.get("parameters", [])]


def _example(parameter: dict[str, Any]) -> Any:
    """A parameter's example (its own, else its schema's): a parameter without one is left
    out of the curl unless the operation requires it."""
    for source in (parameter, parameter.get("schema", {})):
        if "example" in source:
            return source["example"]
    assert not parameter.get("required"), f"{parameter['name']} is required and has no example"
    return None


def status(op: contract.Operation) -> int:
    """The status the example answers: the operation's first documented success."""
    return min(s for s in op.statuses if 200 <= s < 300)


def curl(op: contract.Operation) -> str:
    """The operation's example request, as a curl command reading `$PLATFORM_MOCK_URL` and
    `$PLATFORM_MOCK_TOKEN`."""
    found, parameters = _operation(op)
    path, query, headers = op.path, {}, []
    for parameter in parameters:
        value = _example(parameter)
        if value is None:
            continue
        shown = [contract.as_text(v) for v in value] if isinstance(value, list) else value
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", contract.as_text(value))
        elif parameter["in"] == "query":
            query[parameter["name"]] = shown if isinstance(shown, list) else contract.as_text(value)
        elif parameter["in"] == "header":
            headers.append(f"{parameter['name']}: {contract.as_text(value)}")
    base = "/gateway" if op.document == contract.GATEWAY_SPEC else ""
    url = f"{base}{path}" + (f"?{urlencode(query, doseq=True)}" if query else "")
    assert "{" not in url and not UNQUOTABLE.search(url), url
    words = ["curl -s"] + ([f"-X {op.method}"] if op.method != "GET" else [])
    lines = [" ".join(words) + f' "$PLATFORM_MOCK_URL{url}"']
    if op.token:
        lines.append('-H "Authorization: Bearer $PLATFORM_MOCK_TOKEN"')
    lines += [f"-H {shlex.quote(header)}" for header in headers]
    if "requestBody" in found:
        media_type, content = next(iter(found["requestBody"]["content"].items()))
        lines.append(f"-H {shlex.quote('Content-Type: ' + media_type)}")
        lines.append(f"-d {shlex.quote(json.dumps(content['example']))}")
    return " \\\n  ".join(lines) + "\n"


def section(number: int, op: contract.Operation) -> str:
    found, _ = _operation(op)
    summary = found.get("summary", "").rstrip(".")
    shown = ("{gateway}" if op.document == contract.GATEWAY_SPEC else "") + op.path
    return (
        f"### {number}. `{op.operation_id}`\n\n"
        f"`{op.method} {shown}`{': ' + summary if summary else ''}. Answers {status(op)}.\n\n"
        f"<!-- curl: {op.operation_id} {status(op)} -->\n```sh\n{curl(op)}```\n"
    )


def written(order: list[str]) -> str:
    """The page's written part, the operations in `order` (the operations page's)."""
    operations = contract.operations()
    sections = [section(n, operations[op]) for n, op in enumerate(order, start=1)]
    return BEGIN + "\n".join(sections) + END


def curl_page(text: str, order: list[str]) -> str:
    """`docs/curl.md` with its written part as it should be."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + written(order) + text[end:]
