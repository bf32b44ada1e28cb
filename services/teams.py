"""Saved teams (A4): a name, a one-line purpose, role-described members and run defaults, per scope.

A team belongs to one session (`g:<group>` / `f:<user>`) or is global (every session can run it; only
admins save or delete it: the tools check that). Each scope is one record in the app store KV,
`team:<scope>` → {name: team}, so listing needs no key scan; a lock makes read-modify-write safe.

Limits are product text the model reads when it breaks one, and they hold at save and at run: a team
edited by hand in the store with eleven members is refused when it is run.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Literal

from core.context import is_session_key
from core.errors import ToolError
from services.store import AppStore

GLOBAL = "global"
Scope = Literal["session", "global"]
MAX_MEMBERS = 10
MAX_NAME = 32
MAX_PURPOSE = 200
MAX_ROLE = 4000
MAX_TEAMS_PER_SCOPE = 50

#: Han (with extension A and compatibility ideographs), kana and Hangul, besides ASCII letters and digits.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_NAME = re.compile(rf"[A-Za-z0-9_\-{_CJK}]{{1,{MAX_NAME}}}")

BAD_NAME = ('invalid {what} name "{name}": use 1 to {max} characters, each a CJK character, a letter, a digit, '
            '"_" or "-"')
TOO_MANY_MEMBERS = "a team has at most {max} members; {name} has {count}"
NO_MEMBERS = "a team needs at least one member"
DUPLICATE_MEMBER = 'two members are named "{name}"; member names must differ'
BAD_PURPOSE = "the purpose must be one line of 1 to {max} characters"
BAD_ROLE = 'the role of member "{name}" must be 1 to {max} characters'
BAD_SCOPE = '"{scope}" is not a scope: use "global", g:<group id> or f:<user id>'
TOO_MANY_TEAMS = "this scope already has {max} teams; delete one first (team_delete)"


def check_name(name: str, what: str = "team") -> str:
    """The name, stripped, or a ToolError that says what a valid name is."""
    name = name.strip()
    if not _NAME.fullmatch(name):
        raise ToolError(BAD_NAME.format(what=what, name=name[:40], max=MAX_NAME))
    return name


def check_scope(scope: str) -> str:
    """GLOBAL or a session key (`g:<group>` / `f:<user>`), else a ToolError."""
    scope = scope.strip()
    if scope != GLOBAL and not is_session_key(scope):
        raise ToolError(BAD_SCOPE.format(scope=scope[:80]))
    return scope


@dataclass(frozen=True)
class Member:
    name: str
    role: str


@dataclass(frozen=True)
class Team:
    name: str
    purpose: str
    members: tuple[Member, ...]
    #: The session key of its session, or GLOBAL.
    scope: str
    timeout_sec: int | None = None
    max_rounds: int | None = None

    @property
    def is_global(self) -> bool:
        return self.scope == GLOBAL

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "purpose": self.purpose, "scope": self.scope, "timeout_sec": self.timeout_sec,
                "max_rounds": self.max_rounds, "members": [{"name": m.name, "role": m.role} for m in self.members]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Team:
        members = tuple(Member(str(m["name"]), str(m["role"])) for m in d.get("members", []))
        return cls(name=str(d["name"]), purpose=str(d.get("purpose", "")), members=members,
                   scope=str(d.get("scope", GLOBAL)), timeout_sec=d.get("timeout_sec"), max_rounds=d.get("max_rounds"))


def check_members(team: Team) -> None:
    """The member count cap (also checked at run time, against a store edited by hand)."""
    if len(team.members) > MAX_MEMBERS:
        raise ToolError(TOO_MANY_MEMBERS.format(max=MAX_MEMBERS, name=f'"{team.name}"', count=len(team.members)))
    if not team.members:
        raise ToolError(NO_MEMBERS)


def validated(team: Team) -> Team:
    """The team with names and texts checked and trimmed, or a ToolError naming the first problem."""
    name = check_name(team.name)
    purpose = team.purpose.strip()
    if not 1 <= len(purpose) <= MAX_PURPOSE or "\n" in purpose:
        raise ToolError(BAD_PURPOSE.format(max=MAX_PURPOSE))
    check_members(team)
    members, seen = [], set()
    for m in team.members:
        member = check_name(m.name, "member")
        if member in seen:
            raise ToolError(DUPLICATE_MEMBER.format(name=member))
        seen.add(member)
        role = m.role.strip()
        if not 1 <= len(role) <= MAX_ROLE:
            raise ToolError(BAD_ROLE.format(name=member, max=MAX_ROLE))
        members.append(Member(member, role))
    return Team(name, purpose, tuple(members), team.scope, team.timeout_sec, team.max_rounds)


MAX_ROUNDS = 50


def make_team(name: str, purpose: str, members: list[tuple[str, str]], scope: str, timeout_sec: int | None,
              max_rounds: int | None, max_timeout_sec: int) -> Team:
    """A validated team from what a person or the model gave: the run defaults clamped (timeout to
    1..subagent.max_timeout_sec, rounds to 1..50), names and texts checked (team_save and the panel)."""
    rounds = None if max_rounds is None else min(max(max_rounds, 1), MAX_ROUNDS)
    timeout = None if timeout_sec is None else min(max(timeout_sec, 1), max_timeout_sec)
    return validated(Team(name, purpose, tuple(Member(n, r) for n, r in members), scope, timeout, rounds))


class TeamStore:
    def __init__(self, store: AppStore) -> None:
        self._store = store
        self._lock = threading.Lock()

    def _key(self, scope: str) -> str:
        return f"team:{scope}"

    def _scope(self, scope: str) -> dict[str, dict[str, Any]]:
        value = self._store.kv_get(self._key(scope), {})
        return value if isinstance(value, dict) else {}

    def save(self, team: Team) -> bool:
        """Store a validated team; True when it replaced one of the same name in its scope."""
        team = validated(team)
        with self._lock:
            teams = self._scope(team.scope)
            replaced = team.name in teams
            if not replaced and len(teams) >= MAX_TEAMS_PER_SCOPE:
                raise ToolError(TOO_MANY_TEAMS.format(max=MAX_TEAMS_PER_SCOPE))
            teams[team.name] = team.to_dict()
            self._store.kv_set(self._key(team.scope), teams)
        return replaced

    def delete(self, scope: str, name: str) -> bool:
        with self._lock:
            teams = self._scope(scope)
            if teams.pop(name, None) is None:
                return False
            if teams:
                self._store.kv_set(self._key(scope), teams)
            else:
                self._store.kv_delete(self._key(scope))
        return True

    def in_scope(self, scope: str) -> list[Team]:
        return [Team.from_dict(d) for _, d in sorted(self._scope(scope).items())]

    def scopes(self) -> list[str]:
        """Every scope that holds a team: "global" first, then the sessions, sorted."""
        rows = self._store.query("SELECT key FROM kv WHERE substr(key, 1, 5) = 'team:' ORDER BY key")
        found = [str(r["key"])[5:] for r in rows]
        return sorted(found, key=lambda s: (s != GLOBAL, s))

    def everywhere(self) -> list[Team]:
        """Every saved team (the panel): the global ones, then each session's, each sorted by name."""
        return [team for scope in self.scopes() for team in self.in_scope(scope)]

    def visible(self, session_key: str) -> list[Team]:
        """What a session can run: its own teams, then the global ones, each sorted by name."""
        return [*self.in_scope(session_key), *self.in_scope(GLOBAL)]

    def find(self, session_key: str, name: str) -> Team | None:
        """The session's team of that name, else the global one (a session team shadows a global one)."""
        for scope in (session_key, GLOBAL):
            found = self._scope(scope).get(name)
            if found is not None:
                return Team.from_dict(found)
        return None
