"""Ania's copies of library internals, the library versions each was checked against, and the start check.

Seven places re-implement or reach into LangGraph, langchain-openai and pydantic for speed and storage
(docs/ARCHITECTURE.md, "Copied internals"). Each has an equivalence test, but an upgrade of the library
can change what they copy without failing anything at import. So the fast mode (the default) starts only
when every package below is in the range its copies were checked against (the versions the equivalence
tests last passed on, up to the next minor release); outside it, start fails with one line naming the
package, its version, the range and the switch, `engine.stock = true` (`ANIA_ENGINE__STOCK=1`), which
runs on the libraries' own code instead. Widening a range means running the equivalence tests on the new
version first (`make test-stock` runs them with the rest of the two-mode subset).

The version lookup is the seam tests use to play an upgrade: `check_versions(version_of=...)` takes it
as a parameter, and without one it calls this module's `installed_version` (the installed distribution's
version, `importlib.metadata`) when it runs, so a test can also replace that for a whole engine start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from packaging.specifiers import SpecifierSet

from core.errors import ConfigError

SWITCH = "engine.stock = true (or ANIA_ENGINE__STOCK=1)"


@dataclass(frozen=True)
class Copy:
    """One copied internal: where it lives, what of the library it replaces, the packages it leans on."""

    module: str
    replaces: str
    packages: tuple[str, ...]


COPIES = (
    Copy("checkpoints/fold.py", "langgraph's add_messages, once per write", ("langgraph", "langchain-core")),
    Copy("checkpoints/delta.py", "langgraph's DeltaChannel snapshot cadence", ("langgraph",)),
    Copy("checkpoints/saver.py, checkpoints/memo.py", "AsyncSqliteSaver's delta history loader and puts",
         ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite")),
    Copy("checkpoints/saver_pg.py, checkpoints/loader.py", "AsyncPostgresSaver's delta history loader and puts "
         "(its table layout)", ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-postgres")),
    Copy("checkpoints/serde.py", "JsonPlusSerializer's message rebuilding (pydantic's model_construct)",
         ("langgraph-checkpoint", "pydantic", "langchain-core")),
    Copy("nodes/model.py (applied)", "LangGraph applying a node's update, inside the model step",
         ("langgraph", "langchain-core")),
    Copy("services/llm/lean_openai.py", "ChatOpenAI._get_request_payload (private)", ("langchain-openai",)),
)

#: The range of each package the copies above were checked against (pyproject.toml allows wider ones
#: for the stock mode).
CHECKED: dict[str, str] = {
    "langgraph": ">=1.2.24,<1.3",
    "langgraph-checkpoint": ">=4.3.2,<4.4",
    "langgraph-checkpoint-sqlite": ">=3.1.2,<3.2",
    "langgraph-checkpoint-postgres": ">=3.2.0,<3.3",
    "langchain-core": ">=1.8.3,<1.9",
    "langchain-openai": ">=1.7,<1.8",
    "pydantic": ">=2.14,<2.15",
}

VersionOf = Callable[[str], str | None]


def installed_version(package: str) -> str | None:
    """The installed distribution's version, None when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def outside(version_of: VersionOf | None = None) -> list[str]:
    """One line per package outside its checked range (empty when all are inside)."""
    lookup = version_of or installed_version
    out = []
    for package, spec in CHECKED.items():
        version = lookup(package)
        if version is not None and SpecifierSet(spec).contains(version, prereleases=True):
            continue
        users = ", ".join(c.module for c in COPIES if package in c.packages)
        found = f"{package} {version}" if version is not None else f"{package} (not installed)"
        out.append(f"{found} is outside {spec}, the range Ania's copies of its internals ({users}) were checked "
                   f"against; set {SWITCH} to run on the libraries' own code, or install {package}{spec}")
    return out


def check_versions(version_of: VersionOf | None = None) -> None:
    """Raise `ConfigError` (one line, the first package out of range) when the fast mode cannot start."""
    problems = outside(version_of)
    if problems:
        raise ConfigError(problems[0])
