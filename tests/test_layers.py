"""The house rules (docs/ARCHITECTURE.md), checked on the source: imports point down only, and no cycles.

Every import counts: module level, inside a function, and under `if TYPE_CHECKING:`. A module may import
modules of its own layer or below; the import graph between project modules has no cycle, and neither has
the graph between packages (`services` and `checkpoints` share a layer, so only one may import the other).
A file's layer is its package's: the tree shows it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Layers by package (DESIGN: 5 runtime, 4 graphs, 3 nodes, 2 tools, 1 services and persistence, 0 core:
#: the tool abstraction, schemas, the tool registry, typed settings, the errors, the run-context protocol).
LAYERS = {"ania": 5, "graphs": 4, "nodes": 3, "tools": 2, "services": 1, "checkpoints": 1, "core": 0}
PACKAGES = tuple(LAYERS)


def package(module: str) -> str:
    return module.split(".")[0]


def layer(module: str) -> int:
    return LAYERS[package(module)]


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules imported anywhere in the file (resolved to the longest known module name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def test_imports_point_down_only():
    upward = sorted(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
                    for m, targets in graph().items() for t in targets
                    if layer(t) > layer(m) and not (t in PACKAGES and t == m.split(".")[0]))
    assert upward == []


def test_no_import_cycles():
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert cycles == []


def test_packages_import_each_other_one_way_only():
    """Package level: no two packages import each other (e.g. no `services` module imports `tools` while
    `tools` imports `services`), so each package sits wholly on its layer."""
    edges: dict[str, set[str]] = {}
    for m, targets in graph().items():
        edges.setdefault(package(m), set()).update(package(t) for t in targets if package(t) != package(m))
    both_ways = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and a in edges.get(b, set()))
    assert both_ways == []
    assert edges["core"] == set(), "layer 0 imports nothing of ours above it"


def test_every_source_file_is_in_a_layered_package():
    """A new top-level package must be given a layer here before it can hold code."""
    top = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert top <= set(LAYERS), f"packages without a layer: {sorted(top - set(LAYERS))}"


def test_the_checker_sees_function_local_and_type_checking_imports(tmp_path):
    """The rule cannot pass by hiding an import: a local and a TYPE_CHECKING import are both found."""
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ania.engine import Engine\n"
                   "def f():\n    from graphs.agent import build_agent_graph\n")
    found = imports_of("services.m", src, {"ania.engine", "graphs.agent", "services.m"})
    assert found == {"ania.engine", "graphs.agent"}
