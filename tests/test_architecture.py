"""The shape of the package, checked from its source with `ast`.

Every import counts as an edge of the module graph: module-level ones,
function-level ones (deferred, but still a dependency) and those under
`if TYPE_CHECKING:` (a type checker follows them, and they keep two modules
knowing each other). `from memgpt_lite.x import y`, where `y` is a module, is an
edge to `memgpt_lite.x.y`; otherwise to `memgpt_lite.x`. A package is the
module of its `__init__.py`; importing a submodule is not counted as an edge to
its parents' `__init__`, which is why those must import nothing (checked below).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = "memgpt_lite"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE
MAX_LINES = 650
# Subpackages whose __init__ must stay empty of package imports, so that
# importing one of their modules never drags the whole subpackage in.
EMPTY_INITS = (
    "loop",
    "memory",
    "tools",
    "llm",
    "embeddings",
    "storage",
    "agentfile",
    "cli",
    "server",
)

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_sources(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, str | None]]:
    """(module, imported name or None) for every import anywhere in `tree`,
    relative ones resolved against `module`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):  # walks into functions and `if TYPE_CHECKING:` too
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found += [(base, alias.name) for alias in node.names]
    return found


def edges_of(
    source: str, module: str, modules: Iterable[str], is_package: bool = False
) -> set[str]:
    """The modules of the package that `source` (the text of `module`) imports."""
    known = set(modules)
    edges: set[str] = set()
    for base, name in imported_names(ast.parse(source), module, is_package):
        if name is not None and f"{base}.{name}" in known:
            edges.add(f"{base}.{name}")  # a submodule imported from its package
        elif base in known:
            edges.add(base)
    edges.discard(module)
    return edges


def import_graph(root: Path = PACKAGE_DIR) -> Graph:
    sources = package_sources(root)
    return {
        module: edges_of(path.read_text(encoding="utf-8"), module, sources, path.stem == "__init__")
        for module, path in sources.items()
    }


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components of more than one module,
    or of one module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(sorted(component))
    return sorted(components)


def shortest_cycle_through(graph: Mapping[str, set[str]], start: str) -> list[str] | None:
    """The shortest import path from `start` back to itself (breadth first)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph.get(node, ())):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return None


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each module that is on a cycle, each cycle
    listed once (starting at its smallest name), so every tangle is visible."""
    found: set[tuple[str, ...]] = set()
    for component in strongly_connected(graph):
        for module in component:
            cycle = shortest_cycle_through(graph, module)
            if cycle is None:  # cannot happen inside a component; keep the report honest
                raise AssertionError(f"{module} is in a component but on no cycle")
            ring = cycle[:-1]
            first = ring.index(min(ring))
            found.add(tuple(ring[first:] + ring[:first]))
    return [[*ring, ring[0]] for ring in sorted(found)]


def describe(found: list[list[str]]) -> str:
    short = [[name.removeprefix(f"{PACKAGE}.") for name in cycle] for cycle in found]
    return "\n".join(" -> ".join(cycle) for cycle in short)


# The checker itself: a test that cannot fail is no test.


def test_every_kind_of_import_is_an_edge():
    modules = ["p", "p.a", "p.b", "p.c", "p.d", "p.e", "p.sub", "p.sub.f"]
    source = """
import p.a
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from p.b import Thing
def later():
    from p import c
    from .d import x
    from .sub import f
    import os
from . import e
"""
    assert edges_of(source, "p.g", modules) == {"p.a", "p.b", "p.c", "p.d", "p.e", "p.sub.f"}
    # In a package's __init__, "." is the package itself.
    assert edges_of("from .a import x\nfrom . import b", "p", modules, is_package=True) == {
        "p.a",
        "p.b",
    }


def test_cycles_are_found_and_reported_once_each():
    graph = {"a": {"b"}, "b": {"c", "a"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["d"]]
    assert cycles(graph) == [["a", "b", "a"], ["a", "b", "c", "a"], ["d", "d"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_covers_the_package():
    graph = import_graph()
    assert f"{PACKAGE}.cli.main" in graph
    assert f"{PACKAGE}.cli.base" in graph[f"{PACKAGE}.cli.main"]
    assert len(graph) > 40


# The package.


def test_no_import_cycles():
    graph = import_graph()
    found = cycles(graph)
    tangles = "\n".join(
        ", ".join(name.removeprefix(f"{PACKAGE}.") for name in component)
        for component in strongly_connected(graph)
    )
    assert not found, f"import cycles:\n{describe(found)}\nmodules tangled together:\n{tangles}"


def test_modules_are_short():
    lines = {
        module: len(path.read_text(encoding="utf-8").splitlines())
        for module, path in package_sources().items()
    }
    long = {module: count for module, count in lines.items() if count >= MAX_LINES}
    assert not long, f"modules of {MAX_LINES} lines or more: {long}"


@pytest.mark.parametrize("subpackage", EMPTY_INITS)
def test_subpackage_init_imports_nothing_from_the_package(subpackage):
    path = PACKAGE_DIR / subpackage / "__init__.py"
    module = f"{PACKAGE}.{subpackage}"
    imports = imported_names(ast.parse(path.read_text(encoding="utf-8")), module, True)
    ours = [base for base, _ in imports if base == PACKAGE or base.startswith(PACKAGE + ".")]
    assert not ours, f"{path} imports {ours}"
