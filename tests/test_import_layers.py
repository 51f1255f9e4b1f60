"""The package's layers, read from its import statements (ast, every import including function-level ones):

(a) no import cycles between modules;
(b) xsp_trace.formats (facts about external formats) imports nothing else from xsp_trace;
(c) the readers of a database (xsp_trace.analyze, xsp_trace.perfetto) never import xsp_trace.convert.

An edge is "module A imports module B": `from P import name` counts as an import of P.name when that is a
module, else of P; a package's `__init__` is a module of its own, and importing a submodule runs the
`__init__` of every package above it, so A imports those too (a cycle through an `__init__` that
re-exports is a cycle).
"""

from __future__ import annotations

import ast
import os
from functools import cache
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "xsp_trace"

ALLOWED_CYCLE_EDGES: set[tuple[str, str]] = set()  # none: every module imports what it needs from where it lives


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    # capture/ reaches the package through the symlink xsp_trace/capture (followed here, where Path.rglob would not):
    # it is xsp_trace.capture, its only module identity.
    found = {}
    for folder, _, names in os.walk(PACKAGE_DIR, followlinks=True):
        for file_name in names:
            if file_name.endswith(".py"):
                path = Path(folder, file_name)
                found[_module_name(path)] = path
    return dict(sorted(found.items()))


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The xsp_trace modules that module `name` (file `path`) imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a name inside a module: its module
                target = target.rpartition(".")[0]
            if target.startswith("xsp_trace") and target != name:
                found.add(target)
    return found | _packages_above(found, name, modules)


def _packages_above(targets: set[str], importer: str, modules: dict[str, Path]) -> set[str]:
    """The packages whose `__init__` Python runs to import `targets` (xsp_trace itself included),
    less the importer and the packages it lives in (already running when it runs)."""
    own = {importer.rsplit(".", k)[0] for k in range(importer.count(".") + 1)}
    return {package for target in targets for k in range(1, target.count(".") + 1) if (package := target.rsplit(".", k)[0]) in modules} - own


@cache
def _parsed() -> dict[str, frozenset[str]]:
    modules = _modules()
    return {name: frozenset(_imports(name, path, modules)) for name, path in modules.items()}


def _graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (parsed once per session; a fresh copy for each caller)."""
    return {name: set(targets) for name, targets in _parsed().items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_graph_sees_the_package():
    graph = _graph()
    # A reader that found nothing would pass every check below: it must see known edges, including function-level
    # ones (convert_into imports .run_dir inside the function) and the capture side through its symlink.
    assert "xsp_trace.capture.runner" in graph
    assert "xsp_trace.convert.run_dir" in graph["xsp_trace.convert.local"]
    assert "xsp_trace.naming" in graph["xsp_trace.capture.hooks"]
    assert "xsp_trace.store.database" in graph["xsp_trace.convert.local"]


def test_a_submodule_import_runs_its_packages():
    """`from ..analyze.install import x` runs analyze/__init__ first: the edge to it is in the graph."""
    graph = _graph()
    assert "xsp_trace.analyze" in graph["xsp_trace.convert.local"]  # through analyze.install
    assert "xsp_trace.analyze.critical_path" in graph["xsp_trace.analyze.session"]  # through critical_path.walk
    modules = {"p": Path("p/__init__.py"), "p.q": Path("p/q/__init__.py"), "p.q.r": Path("p/q/r.py"), "p.s": Path("p/s.py")}
    assert _packages_above({"p.q.r"}, "p.s", modules) == {"p.q"}  # p runs before p.s itself
    assert _packages_above({"p.q.r"}, "x", modules) == {"p", "p.q"}


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    graph = _graph()
    for source, target in ALLOWED_CYCLE_EDGES:
        assert target in graph[source], f"allow-listed edge {source} -> {target} is gone: remove it from ALLOWED_CYCLE_EDGES"
        graph[source].discard(target)
    assert _cycles(graph) == []


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("xsp_trace.formats", "xsp_trace"),  # anything outside formats itself
        ("xsp_trace.analyze", "xsp_trace.convert"),
        ("xsp_trace.perfetto", "xsp_trace.convert"),
        # storage knows no reader, writer or printer of what it stores
        ("xsp_trace.store", "xsp_trace.analyze"),
        ("xsp_trace.store", "xsp_trace.convert"),
        ("xsp_trace.store", "xsp_trace.perfetto"),
        ("xsp_trace.store", "xsp_trace.terminal"),
        ("xsp_trace.terminal", "xsp_trace.analyze"),
        ("xsp_trace.terminal", "xsp_trace.store"),
    ],
)
def test_layer_imports(layer, forbidden):
    bad = sorted(
        f"{source} -> {target}"
        for source, targets in _graph().items()
        if _inside(source, layer)
        for target in targets
        if _inside(target, forbidden) and not _inside(target, layer)
    )
    assert bad == []


def test_bench_does_not_import_tests():
    """bench/ runs without the test suite (the suite may import bench, never the reverse), and as
    modules of the checkout's top (`python -m bench.NAME`): no sys.path edits."""
    import re

    bench = PACKAGE_DIR.parent / "bench"
    offending = []
    for path in sorted(bench.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"sys\.path\.(insert|append)\(", line) or re.match(r"\s*(from|import) (tests|conftest|support)\b", line):
                offending.append(f"{path.relative_to(bench.parent)}:{number}: {line.strip()}")
    assert not offending, offending


def test_the_engines_never_call_each_other():
    """convert/engine.py picks the engine; the engines (local, processes, ray_engine) import none of
    each other's modules, nor the chooser (a Ray task and a worker process run the in-process
    converter, convert/local.py, which is the one exception: it is what every engine runs)."""
    graph = _graph()
    engines = ("xsp_trace.convert.processes", "xsp_trace.convert.ray_engine")
    for engine in engines:
        assert "xsp_trace.convert.engine" not in graph[engine]
        assert not set(engines) & set(graph[engine]) - {engine}
    assert "xsp_trace.convert.engine" not in graph["xsp_trace.convert.local"]
    assert not set(engines) & set(graph["xsp_trace.convert.local"])
    assert set(engines) <= set(graph["xsp_trace.convert.engine"])


def test_the_convert_package_only_re_exports():
    """convert/__init__.py holds imports and __all__, no logic."""
    tree = ast.parse((PACKAGE_DIR / "convert" / "__init__.py").read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Import", "Assign"}, kinds


def _room(module: str) -> str:
    """A room: a package directly under xsp_trace, or a module at its root."""
    return ".".join(module.split(".")[:2])


def room_floors(graph: dict[str, set[str]]) -> dict[int, list[str]]:
    """floor -> rooms: 0 imports no other room, each floor imports only floors below it."""
    rooms: dict[str, set[str]] = {}
    for source, targets in graph.items():
        rooms.setdefault(_room(source), set()).update(_room(t) for t in targets if _room(t) not in (_room(source), "xsp_trace"))
    assert _cycles(rooms) == [], f"rooms that import each other (an upward edge): {_cycles(rooms)}"
    floor: dict[str, int] = {}

    def of(room: str) -> int:
        if room not in floor:
            floor[room] = 1 + max((of(t) for t in rooms[room]), default=-1)
        return floor[room]

    floors: dict[int, list[str]] = {}
    for room in sorted(rooms):
        floors.setdefault(of(room), []).append(room.removeprefix("xsp_trace."))
    return floors


def test_the_rooms_stand_on_floors():
    """No two rooms import each other (no upward edge), so the rooms stack on floors; `pytest -s` prints them."""
    floors = room_floors(_graph())
    for number, rooms in sorted(floors.items()):
        print(f"floor {number}: {', '.join(rooms)}")
    assert floors[0] and "cli" in floors[max(floors)]
    assert room_floors({"xsp_trace.a.x": {"xsp_trace.b"}, "xsp_trace.b": set()}) == {0: ["b"], 1: ["a"]}
    with pytest.raises(AssertionError, match="upward edge"):
        room_floors({"xsp_trace.a.x": {"xsp_trace.b"}, "xsp_trace.b": {"xsp_trace.a.y"}, "xsp_trace.a.y": set()})


def test_installing_the_analyses_loads_no_critical_path():
    """convert installs the analyses as its last step: that must not load the analysis session, the
    critical path or numpy (convert has its own numpy, but `install-analyses` has none)."""
    import subprocess
    import sys

    probe = (
        "import sys, xsp_trace.analyze.install, xsp_trace.store.database; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pyarrow') "
        "or m.startswith(('xsp_trace.analyze.session', 'xsp_trace.analyze.critical_path', 'xsp_trace.convert'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=PACKAGE_DIR.parent).stdout
    assert loaded.strip() == "[]"
