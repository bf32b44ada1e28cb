"""Every package the code imports is declared in pyproject.toml's `dependencies` (not only in the dev extras),
so a plain `pip install` of the engine runs: each import in the source packages, read with `ast`, is mapped to
its distribution by `importlib.metadata.packages_distributions()`."""

from __future__ import annotations

import ast
import importlib.metadata as md
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

from tests.test_layers import PACKAGES  # our own packages: every layer

ROOT = Path(__file__).resolve().parent.parent
#: Imported only inside the `langgraph dev` server that loads the Studio app (ania/studio_http.py,
#: ania/studio_threads.py): that server (`make studio`, langgraph-cli[inmem] in the dev extras) brings them.
SERVER_ONLY = {"langgraph_api", "langgraph_runtime"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(group: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] if group is None else project["optional-dependencies"][group]
    return {canonical(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}


def optional(node: ast.Try) -> bool:
    """A `try` around an import that handles ImportError: the import is optional by construction."""
    caught = [h.type for h in node.handlers if h.type is not None]
    names = [n.id for t in caught for n in ast.walk(t) if isinstance(n, ast.Name)]
    return bool({"ImportError", "ModuleNotFoundError"} & set(names))


def imports(tree: ast.AST) -> list[str]:
    """Absolute module names imported, leaving out those in a `try` that handles ImportError."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Try) and optional(node):
            for child in node.handlers + node.orelse + node.finalbody:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def third_party() -> dict[str, set[str]]:
    """Module name → the files importing it, for modules outside the standard library and this project."""
    out: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for module in imports(ast.parse(path.read_text(encoding="utf-8"))):
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in PACKAGES and top != "__future__":
                    out.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    return out


def distributions_of(module: str, candidates: list[str]) -> set[str]:
    """The distribution that installs `module`; for a namespace shared by several (langgraph), the one
    whose files hold the module itself."""
    if len(candidates) > 1 and (spec := importlib.util.find_spec(module)) is not None and spec.origin:
        origin = Path(spec.origin).resolve()
        for dist in candidates:
            files = md.distribution(dist).files or []
            if any(Path(str(md.distribution(dist).locate_file(f))).resolve() == origin for f in files):
                return {canonical(dist)}
    return {canonical(d) for d in candidates}


def test_every_imported_package_is_a_declared_dependency():
    owners = md.packages_distributions()
    runtime = declared()
    missing, unknown = [], []
    for module, where in sorted(third_party().items()):
        top = module.split(".")[0]
        if top in SERVER_ONLY:
            continue
        if top not in owners:
            unknown.append(f"{module} ({', '.join(sorted(where))})")
            continue
        dists = distributions_of(module, owners[top])
        if not dists & runtime:
            missing.append(f"{module} from {'/'.join(sorted(dists))} ({', '.join(sorted(where))})")
    assert not unknown, f"imported but installed by no distribution: {unknown}"
    assert not missing, f"imported but not in pyproject.toml's dependencies: {missing}"


def test_the_server_only_modules_come_with_a_dev_tool():
    owners = md.packages_distributions()
    assert {top for top in SERVER_ONLY if top in owners} == SERVER_ONLY
    assert "langgraph-cli" in declared("dev")
    assert {m.split(".")[0] for m in third_party()} >= SERVER_ONLY  # still imported, else drop it from the list


def test_the_scan_sees_what_it_should():
    """The mapping reaches into namespaces and leaves optional imports alone."""
    found = third_party()
    assert "aiohttp" in found and "starlette.applications" in found and "langgraph.checkpoint.base" in found
    assert "uvloop" not in found  # in a try that handles ImportError (ania/loop.py)
    assert "langgraph.checkpoint.postgres.aio" in found  # a dependency since the cluster's checkpoints
    owners = md.packages_distributions()
    assert distributions_of("langgraph.checkpoint.base", owners["langgraph"]) == {"langgraph-checkpoint"}
