"""The sidebar: every page of the panel in the issue's order (path, label key in i18n/common.json, concern =
the module under ania/panel/pages/). A page whose module is not there yet is left out of the sidebar."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NavItem:
    path: str
    label: str
    concern: str


NAV: tuple[NavItem, ...] = (
    NavItem("/", "nav.overview", "overview"),
    NavItem("/queries", "nav.queries", "queries"),
    NavItem("/usage", "nav.usage", "usage"),
    NavItem("/sessions", "nav.sessions", "sessions"),
    NavItem("/clock", "nav.clock", "clock"),
    NavItem("/teams", "nav.teams", "teams"),
    NavItem("/skills", "nav.skills", "skills"),
    NavItem("/knowledge", "nav.knowledge", "knowledge"),
    NavItem("/memory", "nav.memory", "memory"),
    NavItem("/hooks", "nav.hooks", "hooks"),
    NavItem("/config", "nav.config", "config"),
    NavItem("/mcp", "nav.mcp", "mcp"),
    NavItem("/commands", "nav.commands", "commands"),
    NavItem("/ops", "nav.ops", "ops"),
    NavItem("/approvals", "nav.approvals", "approvals"),
)


def active(item: NavItem, path: str) -> bool:
    """Whether the sidebar marks `item` for the page at `path` (its sub-paths included)."""
    return path == "/" if item.path == "/" else path == item.path or path.startswith(item.path + "/")
