"""The import graph keeps the layers of docs/refimpl.md and README ("How the specification is organised").

Dependencies flow one way: spec ← refimpl ← traces, conformance ← the command line (``rocketspec/``); traces and
conformance do not import each other. The reference implementation takes from the spec only its shared facts
(``protocol``, ``java``, ``queues``, ``fastjson``), never a machine or an oracle. No module imports another at run
time in a cycle, and no module imports a module of its own package inside a function to dodge one: imports inside
functions are allowed only where the reason is given below (start-up time of the command line, Spark's workers).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import attrs
import tomllib

ROOT = Path(__file__).resolve().parent.parent
#: Source folder -> the package it is installed as.
FOLDERS = {"rocketspec": "rocketspec", "spec": "rocketspec.spec", "refimpl": "rocketspec.refimpl",
           "conformance": "rocketspec.conformance", "traces": "rocketspec.traces"}
#: Layer order: a module may import its own layer and the layers below it.
LAYERS = {"spec": 0, "refimpl": 1, "conformance": 2, "traces": 2, "cli": 3}
#: What the reference implementation may take from the spec (facts shared on purpose, never decisions).
SPEC_FACTS = {"rocketspec.spec", "rocketspec.spec.protocol", "rocketspec.spec.java", "rocketspec.spec.queues",
              "rocketspec.spec.fastjson"}
#: Modules allowed to import inside functions, and why.
LOCAL_IMPORTS_ALLOWED = {
    "rocketspec.cli.spec": "the command line loads a command's modules only when it runs (start-up time)",
    "rocketspec.cli.traces": "the command line loads a command's modules only when it runs (start-up time)",
    "rocketspec.cli.serve": "the command line loads a command's modules only when it runs (start-up time)",
    "rocketspec.pytest_plugin": "a pytest plugin loaded by every project that installs rocketspec imports its "
                                "fixtures' modules only when a fixture is used",
    "rocketspec.traces.generate": "Spark is imported only when a Spark check is asked for",
    "rocketspec.traces.sparkcheck.workers": "a UDF body runs on Spark's Python workers, which import what it needs "
                                            "there",
    "rocketspec.refimpl": "the package's lazy exports (PEP 562 __getattr__) keep `import rocketspec.refimpl` light",
}


@attrs.frozen
class Import:
    source: str
    target: str
    kind: str  # "top", "local" (inside a function or class body) or "type" (under `if TYPE_CHECKING:`)
    line: int


def module_name(folder: str, path: Path) -> str:
    parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([FOLDERS[folder], *parts])


def modules() -> dict[str, Path]:
    found = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if folder == "rocketspec" and path.relative_to(ROOT / folder).parts[0] in FOLDERS:
                continue  # rocketspec/<sub> links of an editable layout are the other folders
            found[module_name(folder, path)] = path
    return found


def layer(module: str) -> str:
    for name in ("spec", "refimpl", "conformance", "traces"):
        if module == f"rocketspec.{name}" or module.startswith(f"rocketspec.{name}."):
            return name
    return "cli"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def targets(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
            return
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parent, *([base] if base else [])])
        for alias in node.names:
            full = f"{base}.{alias.name}"
            yield full if full in known else base

    def walk(node: ast.AST, kind: str) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for inner in child.body:
                    yield from walk_one(inner, "type")
                for inner in child.orelse:
                    yield from walk_one(inner, kind)
                continue
            yield from walk_one(child, kind)

    def walk_one(node: ast.AST, kind: str) -> Iterator[Import]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in targets(node):
                if target.startswith("rocketspec"):
                    yield Import(name, target, kind, node.lineno)
            return
        inner = "local" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) \
            and kind == "top" else kind
        yield from walk(node, inner)

    yield from walk(tree, "top")


@functools.cache
def all_imports() -> tuple[Import, ...]:
    known = modules()
    return tuple(imp for name, path in sorted(known.items()) for imp in imports_of(name, path, known))


def test_layers_only_import_downwards() -> None:
    wrong = [f"{i.source}:{i.line} ({layer(i.source)}) imports {i.target} ({layer(i.target)})"
             for i in all_imports()
             if LAYERS[layer(i.target)] > LAYERS[layer(i.source)]
             or (layer(i.target) != layer(i.source) and LAYERS[layer(i.target)] == LAYERS[layer(i.source)])]
    assert not wrong, "\n".join(wrong)


def test_the_reference_implementation_takes_only_facts_from_the_spec() -> None:
    wrong = [f"{i.source}:{i.line} imports {i.target}" for i in all_imports()
             if layer(i.source) == "refimpl" and layer(i.target) == "spec" and i.target not in SPEC_FACTS]
    assert not wrong, "\n".join(wrong)


def test_no_run_time_import_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for i in all_imports():
        if i.kind != "type":
            graph.setdefault(i.source, set()).add(i.target)
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_imports_inside_functions_only_where_a_reason_is_given() -> None:
    wrong = [f"{i.source}:{i.line} imports {i.target} inside a function" for i in all_imports()
             if i.kind == "local" and i.source not in LOCAL_IMPORTS_ALLOWED and i.target != i.source]
    assert not wrong, "\n".join(wrong)


def test_the_checks_can_fail() -> None:
    """The graph walk sees what it must: a top-level, a function-local and a type-only import, and a cycle."""
    known = modules()
    found = {(i.target, i.kind) for i in imports_of("rocketspec.refimpl.client.producer",
                                                     known["rocketspec.refimpl.client.producer"], known)}
    assert ("rocketspec.refimpl.client.instance", "type") in found
    assert ("rocketspec.spec.protocol", "top") in found
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan), each from its least module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_path_through(sorted(component), graph))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _path_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A cycle inside ``component`` starting at its least module (breadth-first back to it)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ()) & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component


def test_lazy_exports_are_also_static() -> None:
    """``from rocketspec.refimpl import Cluster`` is typed: every lazily loaded name is also imported under
    ``if TYPE_CHECKING:`` from the module ``__getattr__`` loads it from."""
    import rocketspec.refimpl as package

    known = modules()
    static = {(i.target, i.line) for i in imports_of("rocketspec.refimpl", known["rocketspec.refimpl"], known)
              if i.kind == "type"}
    tree = ast.parse(known["rocketspec.refimpl"].read_text(encoding="utf-8"))
    names = {alias.asname or alias.name: node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names if (node.module, node.lineno) in static}
    assert names == dict(package._EXPORTS)


def test_every_package_folder_is_installed() -> None:
    """pyproject lists its packages by hand (the folders map to ``rocketspec.*``): a package folder missing from the
    list would be left out of a wheel, and every import of it would fail on a user's machine."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {name for name, path in modules().items() if path.name == "__init__.py"}
    assert found - listed == set(), f"package folders missing from pyproject's packages: {sorted(found - listed)}"
    assert listed - found == set(), f"pyproject lists packages that do not exist: {sorted(listed - found)}"
