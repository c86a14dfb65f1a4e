"""The shape of the package, checked from its source with `ast`.

Every import counts as an edge of the module graph: module-level ones,
function-level ones (deferred, but still a dependency) and those under
`if TYPE_CHECKING:` (a type checker follows them, and they keep two modules
knowing each other). `from memgpt_lite.x import y`, where `y` is a module, is an
edge to `memgpt_lite.x.y`; otherwise to `memgpt_lite.x`. A package is the
module of its `__init__.py`; importing a submodule is not counted as an edge to
its parents' `__init__`, which is why those must import nothing (checked below).

On that graph: no module cycle, and no cycle between packages either (the
top-level parts, and the subpackages of any one package); every top-level part
sits in a layer (`LAYERS`) and imports nothing from a layer above its own; and
the parts below the edges (`SETTINGS_FREE`) reach no module that reads the
environment or config.toml: settings are resolved at the edges (the command
line, the server, `Agent`) and handed down. The command line and the server
import nothing of the loop or the store (`APART`): they go through the agent
layer, its application layer above all (agent/workspace.py). And `Agent`
stays the user's object, at most `AGENT_MAX_METHODS` functions in its class
body, with no base class and no `__getattr__` to hide more behind.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pytest
from support.paths import REPO

PACKAGE = "memgpt_lite"
PACKAGE_DIR = REPO / PACKAGE
MAX_LINES = 650
# Subpackages whose __init__ must stay empty of package imports, so that
# importing one of their modules never drags the whole subpackage in.
EMPTY_INITS = (
    "loop",
    "memory",
    "memory.core",
    "memory.recall",
    "memory.archival",
    "memory.retrieval",
    "tools",
    "llm",
    "embeddings",
    "settings",
    "storage",
    "storage.core",
    "agentfile",
    "cli",
    "server",
)

# The layers, from the bottom: a part may import its own layer and those
# below. Peers of one layer may import each other, but never in a cycle (the
# package cycle test). `__init__` is the package's own module, `memgpt_lite`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("text",),
    ("errors", "names"),  # names: the rules of agent names
    # events: what a step reports; frozen: read-only values; conversations:
    # their model; step_input: what a step is given
    # tool_rules: which tools a step may call when
    ("models", "events", "frozen", "conversations", "step_input", "tool_rules"),
    ("settings",),
    ("llm", "embeddings", "storage"),
    ("testing",),  # test doubles of the model endpoint, for the layers above
    ("memory",),
    ("tools",),
    ("loop",),
    ("agent",),
    ("agentfile",),
    ("cli", "server", "__init__", "__main__"),
)
# What may not read the environment or config.toml, even through another module.
SETTINGS_FREE = ("llm", "storage", "memory", "loop", "tools", "embeddings")
# Parts that may not import others, though those are below them: the command
# line and the server reach steps and stored state through the agent layer.
APART: dict[str, tuple[str, ...]] = {
    "cli": ("loop", "storage"),
    "server": ("loop", "storage"),
}
# The most functions `Agent`'s class body may define, every kind counted:
# configuration and memory access, and the drivers of a step; the rest is its
# runner's (agent/runner.py), its history's or its archival memory's.
AGENT_SOURCE = PACKAGE_DIR / "agent" / "agent.py"
AGENT_MAX_METHODS = 25
# How a module reads the environment: `os.environ`, `os.getenv`, ...
ENV_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})

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


def part_of(module: str) -> str:
    """The top-level part a module belongs to: `memgpt_lite.memory.core.blocks`
    is in `memory`, `memgpt_lite.agent` in `agent`, `memgpt_lite` in `__init__`."""
    names = module.split(".")
    return names[1] if len(names) > 1 else "__init__"


def collapsed(graph: Mapping[str, set[str]], group: Callable[[str], str | None]) -> Graph:
    """The graph of the groups `group` puts modules in (None: left out), with
    an edge wherever a module of one group imports a module of another."""
    result: Graph = {}
    for module, imported in graph.items():
        source = group(module)
        if source is None:
            continue
        targets = result.setdefault(source, set())
        targets |= {g for child in imported if (g := group(child)) is not None and g != source}
    return result


def package_cycles(graph: Mapping[str, set[str]], root: str = PACKAGE) -> list[list[str]]:
    """The cycles between packages: between the top-level parts of `root`, and
    between the children (subpackages and modules) of each package."""
    packages = {".".join(m.split(".")[:n]) for m in graph for n in range(1, m.count(".") + 1)}
    packages.add(root)

    def child_of(package: str) -> Callable[[str], str | None]:
        def group(module: str) -> str | None:
            if not module.startswith(package + "."):
                return None
            return package + "." + module[len(package) + 1 :].split(".")[0]

        return group

    found: list[list[str]] = []
    for package in sorted(packages):
        found += cycles(collapsed(graph, child_of(package)))
    return found


def layer_problems(graph: Mapping[str, set[str]], layers: Sequence[Sequence[str]]) -> list[str]:
    """Each import against `layers` (a part importing from a higher layer),
    and each part that is in no layer, one line apiece."""
    level = {part: number for number, members in enumerate(layers) for part in members}
    problems = sorted(
        f"{part} is in no layer" for part in {part_of(m) for m in graph} if part not in level
    )
    for module, imported in sorted(graph.items()):
        source = part_of(module)
        for child in sorted(imported):
            target = part_of(child)
            if source in level and target in level and level[target] > level[source]:
                problems.append(f"{module} imports {child}: {target} is above {source}")
    return problems


def env_reads(source: str) -> list[str]:
    """How `source` reads the environment or a TOML file: `os.environ` and the
    other ENV_NAMES of `os`, and `tomllib` (config.toml), one entry per use."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ENV_NAMES
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            found.append(f"os.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [
                f"os.{a.name} (line {node.lineno})" for a in node.names if a.name in ENV_NAMES
            ]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            found += [f"tomllib (line {node.lineno})" for n in names if n == "tomllib"]
    return found


def reached(graph: Mapping[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for child in graph.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def settings_reads(
    graph: Mapping[str, set[str]], readers: Mapping[str, list[str]], parts: Iterable[str]
) -> list[str]:
    """Each module of `parts` that reads the environment or config.toml itself
    or through a module it reaches (`readers`: the modules that read, and how)."""
    problems = []
    for module in sorted(graph):
        if part_of(module) not in parts:
            continue
        if readers.get(module):
            problems.append(f"{module} reads {', '.join(readers[module])}")
        through = sorted(m for m in reached(graph, module) if readers.get(m))
        if through:
            problems.append(f"{module} reaches {', '.join(through)}, which read settings")
    return problems


def imports_kept_apart(
    graph: Mapping[str, set[str]], apart: Mapping[str, Sequence[str]]
) -> list[str]:
    """Each import of a part that `apart` keeps that part from, one line apiece."""
    problems = []
    for module, imported in sorted(graph.items()):
        banned = apart.get(part_of(module), ())
        problems += [
            f"{module} imports {child}: {part_of(module)} goes through the agent layer"
            for child in sorted(imported)
            if part_of(child) in banned
        ]
    return problems


def class_functions(source: str, name: str) -> tuple[list[str], list[str]]:
    """The functions defined in the body of class `name` (methods, properties
    and their setters, class and static methods, dunders, private ones: every
    `def`), and the names of its bases."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            functions = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            return functions, [ast.unparse(base) for base in node.bases]
    raise AssertionError(f"no class {name} in the source")


def package_readers(root: Path = PACKAGE_DIR) -> dict[str, list[str]]:
    return {
        module: found
        for module, path in package_sources(root).items()
        if (found := env_reads(path.read_text(encoding="utf-8")))
    }


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


def test_package_cycles_are_found_at_every_level():
    graph = {
        "p": set(),
        "p.a.x": {"p.b.y"},  # a -> b
        "p.b.y": {"p.b.z"},  # inside b: no cycle between packages
        "p.b.z": {"p.a.w"},  # b -> a: a cycle of a and b, though no module cycle
        "p.a.w": set(),
        "p.c.s.one": {"p.c.t.two"},  # under c, its subpackages s and t import each other
        "p.c.t.two": {"p.c.s.three"},
        "p.c.s.three": set(),
    }
    assert cycles(graph) == []
    assert package_cycles(graph, "p") == [["p.a", "p.b", "p.a"], ["p.c.s", "p.c.t", "p.c.s"]]
    del graph["p.c.t.two"]
    graph["p.b.z"] = set()
    assert package_cycles(graph, "p") == []


def test_imports_against_the_layers_and_unplaced_parts_are_found():
    layers = (("low",), ("mid", "peer"), ("top", "__init__"))
    graph = {
        "pkg": {"pkg.top"},
        "pkg.top": {"pkg.mid.a"},
        "pkg.mid.a": {"pkg.low", "pkg.peer.b"},  # down, and to a peer of its layer
        "pkg.peer.b": set(),
        "pkg.low": {"pkg.mid.a"},  # up: against the layers
        "pkg.stray": {"pkg.low"},  # in no layer
    }
    assert layer_problems(graph, layers) == [
        "stray is in no layer",
        "pkg.low imports pkg.mid.a: mid is above low",
    ]
    del graph["pkg.stray"]
    graph["pkg.low"] = set()
    assert layer_problems(graph, layers) == []


def test_reads_of_the_environment_and_config_files_are_found():
    source = """
import os
import tomllib
from os import environ, getenv, path
a = os.environ["HOME"]
b = os.environ.get("X")
c = os.getenv("Y")
d = os.path.join("x", "y")
def later():
    from tomllib import loads
"""
    assert sorted(env_reads(source)) == [
        "os.environ (line 4)",
        "os.environ (line 5)",
        "os.environ (line 6)",
        "os.getenv (line 4)",
        "os.getenv (line 7)",
        "tomllib (line 10)",
        "tomllib (line 3)",
    ]
    assert env_reads("import os\nos.path.exists(os.sep)\nenviron = {}\n") == []


def test_a_read_of_settings_is_found_through_the_modules_that_lead_to_it():
    graph = {
        "p.llm.a": {"p.llm.b"},
        "p.llm.b": {"p.settings.paths"},
        "p.settings.paths": set(),
        "p.settings.resolve": {"p.settings.paths"},
        "p.llm.c": {"p.settings.resolve"},  # through one import
        "p.llm.d": {"p.llm.c"},  # through two
        "p.cli.main": {"p.settings.resolve"},  # an edge, not in the parts checked
    }
    readers = {"p.settings.resolve": ["os.environ (line 3)"], "p.llm.b": []}
    assert settings_reads(graph, readers, ["llm"]) == [  # a and b reach only paths
        "p.llm.c reaches p.settings.resolve, which read settings",
        "p.llm.d reaches p.settings.resolve, which read settings",
    ]
    readers["p.llm.a"] = ["os.getenv (line 9)"]
    assert settings_reads(graph, readers, ["llm"])[0] == "p.llm.a reads os.getenv (line 9)"


def test_imports_a_part_is_kept_apart_from_are_found():
    graph = {
        "p.cli.main": {"p.agent.workspace", "p.loop.events"},
        "p.server.app": {"p.storage.open"},
        "p.agent.workspace": {"p.storage.open", "p.loop.step"},  # not kept apart
    }
    apart = {"cli": ("loop", "storage"), "server": ("loop", "storage")}
    assert imports_kept_apart(graph, apart) == [
        "p.cli.main imports p.loop.events: cli goes through the agent layer",
        "p.server.app imports p.storage.open: server goes through the agent layer",
    ]
    graph["p.cli.main"] = {"p.agent.workspace"}
    graph["p.server.app"] = set()
    assert imports_kept_apart(graph, apart) == []


def test_every_function_of_a_class_body_is_counted():
    source = """
class Thing(Base, mixins.More):
    size = 3

    def __init__(self): ...
    @property
    def name(self): ...
    @name.setter
    def name(self, value): ...
    @classmethod
    def make(cls): ...
    async def run(self): ...
    def _helper(self):
        def inner(): ...
    class Nested:
        def elsewhere(self): ...

def outside(): ...
"""
    functions, bases = class_functions(source, "Thing")
    assert functions == ["__init__", "name", "name", "make", "run", "_helper"]
    assert bases == ["Base", "mixins.More"]
    with pytest.raises(AssertionError):
        class_functions(source, "Missing")


@pytest.fixture(scope="module")
def package_graph() -> Graph:
    """The package's import graph, parsed once for the tests below (0.6 s)."""
    return import_graph()


def test_the_graph_covers_the_package(package_graph):
    graph = package_graph
    assert f"{PACKAGE}.cli.main" in graph
    assert f"{PACKAGE}.cli.base" in graph[f"{PACKAGE}.cli.main"]
    assert len(graph) > 40


# The package.


def test_no_import_cycles(package_graph):
    graph = package_graph
    found = cycles(graph)
    tangles = "\n".join(
        ", ".join(name.removeprefix(f"{PACKAGE}.") for name in component)
        for component in strongly_connected(graph)
    )
    assert not found, f"import cycles:\n{describe(found)}\nmodules tangled together:\n{tangles}"


def test_no_cycles_between_packages(package_graph):
    found = package_cycles(package_graph)
    assert not found, f"packages importing each other:\n{describe(found)}"


def test_no_import_against_the_layers(package_graph):
    problems = layer_problems(package_graph, LAYERS)
    assert not problems, "\n".join(problems)


def test_settings_are_read_only_at_the_edges(package_graph):
    problems = settings_reads(package_graph, package_readers(), SETTINGS_FREE)
    assert not problems, "\n".join(problems)


def test_the_command_line_and_the_server_go_through_the_agent_layer(package_graph):
    problems = imports_kept_apart(package_graph, APART)
    assert not problems, "\n".join(problems)


def test_agent_stays_small():
    functions, bases = class_functions(AGENT_SOURCE.read_text(encoding="utf-8"), "Agent")
    assert len(functions) <= AGENT_MAX_METHODS, (
        f"Agent defines {len(functions)} functions, over {AGENT_MAX_METHODS}: {functions}; "
        "move what runs steps to its runner (agent/runner.py)"
    )
    # Nothing may hide more behavior behind the count: no base class (a
    # mixin), no attribute forwarding.
    assert bases == [], f"Agent has bases {bases}"
    assert not {"__getattr__", "__getattribute__"} & set(functions)


def test_modules_are_short():
    lines = {
        module: len(path.read_text(encoding="utf-8").splitlines())
        for module, path in package_sources().items()
    }
    long = {module: count for module, count in lines.items() if count >= MAX_LINES}
    assert not long, f"modules of {MAX_LINES} lines or more: {long}"


@pytest.mark.parametrize("subpackage", EMPTY_INITS)
def test_subpackage_init_imports_nothing_from_the_package(subpackage):
    path = PACKAGE_DIR / subpackage.replace(".", "/") / "__init__.py"
    module = f"{PACKAGE}.{subpackage}"
    imports = imported_names(ast.parse(path.read_text(encoding="utf-8")), module, True)
    ours = [base for base, _ in imports if base == PACKAGE or base.startswith(PACKAGE + ".")]
    assert not ours, f"{path} imports {ours}"
