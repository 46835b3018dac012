"""The package's layers only look down, and the web framework stays behind its fence.

Every import of `mock_server/` is read from the source (module level, inside functions and
under `TYPE_CHECKING` alike: a type is a dependency too), and each module is placed in one
layer of `LAYERS`. A module may import its own layer and those below; no import may close a
circle; Connexion, Flask, Werkzeug and a2wsgi are imported only in `mock_server/http/`, and no
module below the HTTP side imports a web framework or server at all.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mock_server"

# Lowest first: each layer is a folder of the package (its modules are `folder.*`), and the
# package's public faces sit at its top, above every folder.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "core: errors, text escaping, masking, shipped files, coordinates, the version",
        ("core", "core.*"),
    ),
    ("contract: the spec documents and checking JSON against them", ("contract", "contract.*")),
    ("state: the platform's entities and rules", ("state", "state.*")),
    ("fixtures: the world's files, read, checked and written", ("fixtures", "fixtures.*")),
    ("services: tokens, the journal, faults, one request's record", ("services", "services.*")),
    ("reports: the contract and drift reports, their files, why", ("reports", "reports.*")),
    ("view: what the live view shows, and its events", ("view", "view.*")),
    ("handlers and the catalog of operations", ("handlers", "handlers.*")),
    (
        "the HTTP side: the fence around Connexion, Flask and a2wsgi; the mock composed, served",
        ("http", "http.*"),
    ),
    ("proxy: the validating proxy, the drift check, recordings", ("proxy", "proxy.*")),
    ("cli: the command line", ("cli", "cli.*")),
    (
        "the public faces: the package, `python -m mock_server`, the pytest plugin",
        ("", "__main__", "pytest_plugin"),
    ),
]
FENCED = ("connexion", "flask", "werkzeug", "a2wsgi")  # only in mock_server/http/
WEB = (*FENCED, "starlette", "uvicorn", "httptools", "h11")
FENCE = "the HTTP side"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str) -> set[str]:
    """Every module this one imports: of the package (by name relative to it; `from
    mock_server import errors` is the module `errors`), and of others their top package
    (`connexion`, `flask`, ...) prefixed with `!`."""
    path = MODULES[name]
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(["mock_server", *base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            named = [f"{module}.{alias.name}" for alias in node.names]
            targets = [m for m in named if _inner(m) in MODULES]
            if len(targets) < len(named):  # a name of the module itself, not a submodule
                targets.append(module)
        else:
            continue
        for target in targets:
            if target == "mock_server" or target.startswith("mock_server."):
                if _inner(target) in MODULES:
                    found.add(_inner(target))
            else:
                found.add("!" + target.split(".")[0])
    found.discard(name)
    return found


def _inner(module: str) -> str:
    return module.removeprefix("mock_server").removeprefix(".")


def layer_of(name: str) -> int:
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            return index
    raise AssertionError(f"mock_server.{name} is in no layer of tests/test_layers.py")


GRAPH = {name: {m for m in imports(name) if not m.startswith("!")} for name in MODULES}


def test_every_module_has_a_layer():
    unplaced = []
    for name in MODULES:
        try:
            layer_of(name)
        except AssertionError:
            unplaced.append(name)
    assert unplaced == []


@pytest.mark.parametrize("name", sorted(MODULES), ids=lambda n: n or "mock_server")
def test_a_module_imports_only_its_layer_and_those_below(name):
    mine = layer_of(name)
    above = sorted(m for m in GRAPH[name] if layer_of(m) > mine)
    assert above == [], f"{name or 'mock_server'} ({LAYERS[mine][0]}) looks up at {above}"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_closes_a_circle():
    assert circles(GRAPH) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(MODULES), ids=lambda n: n or "mock_server")
def test_connexion_flask_and_a2wsgi_are_imported_only_behind_the_fence(name):
    fenced = sorted(m[1:] for m in imports(name) if m[1:] in FENCED)
    if not LAYERS[layer_of(name)][0].startswith(FENCE):
        assert fenced == []


@pytest.mark.parametrize("name", sorted(MODULES), ids=lambda n: n or "mock_server")
def test_nothing_below_the_http_side_imports_a_web_framework_or_server(name):
    fence = next(i for i, (title, _) in enumerate(LAYERS) if title.startswith(FENCE))
    if layer_of(name) < fence:
        assert sorted(m[1:] for m in imports(name) if m[1:] in WEB) == []


def string_imports(source: str) -> list[str]:
    """Imports a module's source makes by a string (`importlib.import_module("...")`,
    `__import__("...")`): a dependency no reader of its imports sees."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("__import__", "importlib.import_module", "import_module"):
                found.append(ast.unparse(node))
    return found


@pytest.mark.parametrize("name", sorted(MODULES), ids=lambda n: n or "mock_server")
def test_no_module_imports_by_a_string(name):
    assert string_imports(MODULES[name].read_text()) == []


def test_an_import_by_a_string_is_found():
    assert string_imports("importlib.import_module(f'mock_server.{x}')") != []


def classes_defined_twice(sources: dict[str, str]) -> dict[str, list[str]]:
    """Class names that more than one place of the package defines, with those places."""
    places: dict[str, list[str]] = {}
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                places.setdefault(node.name, []).append(name)
    return {cls: where for cls, where in places.items() if len(where) > 1}


def test_no_class_name_is_defined_twice():
    # Two `Entry` classes mean a reader (and an import) must guess which is meant.
    sources = {name: path.read_text() for name, path in MODULES.items()}
    assert classes_defined_twice(sources) == {}


def test_a_class_name_defined_twice_is_found():
    found = classes_defined_twice({"a": "class Entry: pass", "b": "class Entry(Base): pass"})
    assert found == {"Entry": ["a", "b"]}


# -- private names of libraries: only behind a fence ---------------------------------------

# Where a library's private parts may be reached, and whose; each place's docstring lists
# them, and tests/test_connexion_hooks.py (tests/test_pytest_plugin.py for pytest's) drives
# each. The package pins each such dependency below its next release.
FENCES = {
    "http.*": "Connexion, Flask, a2wsgi, Starlette and uvicorn",
    # Degrades to pytest's own finding where a part is gone: pytest is the user's.
    "pytest_plugin": "pytest (finding the rootdir again once the plugin's options are known)",
}
PUBLIC_DESPITE_THE_UNDERSCORE = {"_exit"}  # os._exit: documented, the way to end a child


def _own_names() -> set[str]:
    """Every name the package binds itself: its functions, classes, variables, arguments,
    and the attributes it sets on `self` or `cls`."""
    own: set[str] = set()
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                own.add(node.attr)
    return own


def foreign_private_names(source: str, own: set[str]) -> list[str]:
    """The private names of other code that a module's source reaches: `x._name` where the
    package never binds `_name` itself, and imports of `_module` or `_name`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if _private(name) and name not in own and name not in PUBLIC_DESPITE_THE_UNDERSCORE:
                found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] != "mock_server"
            and (
                any(map(_private, node.module.split(".")))
                or any(_private(alias.name) for alias in node.names)
            )
        ):
            found.append(f"from {node.module} import ...")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


OWN_NAMES = _own_names()


@pytest.mark.parametrize("name", sorted(MODULES), ids=lambda n: n or "mock_server")
def test_no_private_name_of_a_library_outside_its_fence(name):
    if any(fnmatch.fnmatchcase(name, fence) for fence in FENCES):
        return
    assert foreign_private_names(MODULES[name].read_text(), OWN_NAMES) == []


@pytest.mark.parametrize(
    "source",
    [
        "self._captured_signals.clear()",
        "faker.unique._seen = {}",
        "from uvicorn.protocols.http.httptools_impl import _x",
        "from _pytest.config import findpaths",
    ],
)
def test_a_private_name_of_a_library_is_found(source):
    assert foreign_private_names(source, {"_seen_not"}) != []


# -- the checks above can fail --------------------------------------------------------------


def test_the_import_reader_sees_the_web_framework_behind_the_fence():
    assert "!connexion" in set().union(*(imports(n) for n in MODULES if n.startswith("http.")))


def test_an_import_that_looks_up_is_found(tmp_path, monkeypatch):
    module = tmp_path / "store.py"
    module.write_text("from mock_server.http.mock import PlatformMock\nimport flask\n")
    monkeypatch.setitem(MODULES, "state.looking_up", module)
    found = imports("state.looking_up")
    assert found == {"http.mock", "!flask"}
    assert layer_of("http.mock") > layer_of("state.looking_up")
    assert not LAYERS[layer_of("state.looking_up")][0].startswith(FENCE)


# -- the benchmarks and tools stand beside the tests, never on them ---------------------------

BESIDE_THE_TESTS = ("bench", "tools")


def imports_of_the_tests(source: str) -> list[str]:
    """The modules of `tests` a source imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        found += [n for n in names if n == "tests" or n.startswith("tests.")]
    return found


@pytest.mark.parametrize("folder", BESIDE_THE_TESTS)
def test_benchmarks_and_tools_import_nothing_of_the_tests(folder):
    root = PACKAGE.parent / folder
    found = {
        str(path.relative_to(root)): names
        for path in sorted(root.rglob("*.py"))
        if (names := imports_of_the_tests(path.read_text()))
    }
    assert found == {}


def test_an_import_of_the_tests_is_found():
    assert imports_of_the_tests("from tests.test_fuzz import KEY\nimport tests.tables") == [
        "tests.test_fuzz",
        "tests.tables",
    ]
