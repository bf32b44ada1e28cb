"""Custom slash commands (G8): `config/commands.json` maps `/name args` to a prompt template.

The file:

    {"commands": {"tr": {"prompt": "Translate into English: $args", "description": "Translate a text"},
                  "joke": "Tell a short joke about $args"}}

A value is the template itself or an object with `prompt` (and an optional `description`). `$args` is
replaced by what follows the name; a template without it gets the arguments appended on a new line. The
expanded text then flows like a normal message. Names match `^[a-z][a-z0-9_-]{0,31}$` and may not be a
built-in command.

The file is re-read at most every `ttl_sec` (5 s), re-parsed only when its bytes changed; a broken file is
reported once (log, and `problem` for /cmd list) while the last good commands keep working. `/cmd add`
and `/cmd del` write it atomically and take effect at once; a broken file is never overwritten by them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from services.files import atomic_write_text
from services.store import AppStore

log = logging.getLogger(__name__)

COMMANDS_FILE = "commands.json"
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
#: The runtime's own commands (ania/entry.py; `/as` is the terminal's), and `clock`, which is coming.
BUILTIN_COMMANDS = ("as", "clock", "cmd", "help", "plan", "reboot", "stop", "usage")
MAX_COMMANDS = 200
MAX_TEMPLATE = 4000
_COMMAND = re.compile(r"/(\S+)(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class CustomCommand:
    name: str
    template: str
    description: str = ""

    def expand(self, args: str) -> str:
        if "$args" in self.template:
            return self.template.replace("$args", args)
        return f"{self.template}\n{args}" if args else self.template

    def line(self) -> str:
        about = self.description or " ".join(self.template.split())
        return f"/{self.name}: {about if len(about) <= 80 else about[:79] + '…'}"


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ConfigError(f'invalid command name "{name[:40]}": 1-32 lowercase letters, digits, "_" or "-", '
                          "starting with a letter")
    if name in BUILTIN_COMMANDS:
        raise ConfigError(f'"/{name}" is a built-in command; choose another name')
    return name


def parse_commands(text: str) -> dict[str, CustomCommand]:
    """The commands of a commands.json text; ConfigError names the first problem."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"commands.json is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("commands", {}), dict):
        raise ConfigError('commands.json must be an object with a "commands" object')
    raw: dict[str, Any] = data.get("commands", {})
    if len(raw) > MAX_COMMANDS:
        raise ConfigError(f"commands.json has {len(raw)} commands; at most {MAX_COMMANDS} are allowed")
    out: dict[str, CustomCommand] = {}
    for name in sorted(raw):
        out[name] = _command(check_name(name), raw[name])
    return out


def _command(name: str, value: Any) -> CustomCommand:
    template: Any
    description: Any
    if isinstance(value, str):
        template, description = value, ""
    elif isinstance(value, dict):
        template, description = value.get("prompt"), value.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f'command "{name}": "description" must be a string')
    else:
        raise ConfigError(f'command "{name}": give the template as a string or {{"prompt": ...}}')
    if not isinstance(template, str) or not template.strip():
        raise ConfigError(f'command "{name}": the prompt template is empty')
    if len(template) > MAX_TEMPLATE:
        raise ConfigError(f'command "{name}": the template is longer than {MAX_TEMPLATE} characters')
    return CustomCommand(name, template.strip(), description.strip())


def split_command(text: str) -> tuple[str, str] | None:
    """("name", "args") of a "/name args" text, else None."""
    m = _COMMAND.match(text.strip())
    return (m.group(1).lower(), (m.group(2) or "").strip()) if m else None


class CommandStore:
    def __init__(self, config_dir: Path, store: AppStore, *, ttl_sec: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = config_dir / COMMANDS_FILE
        self._store = store
        self._ttl = ttl_sec
        self._clock = clock
        self._raw: bytes | None = None
        self._commands: Mapping[str, CustomCommand] = {}
        self._checked_at: float | None = None
        #: Why the file on disk is not in use ("" when it is); reported to the log once per content.
        self.problem = ""
        self._lock = asyncio.Lock()

    def invalidate(self) -> None:
        """Read the file again at the next look-up (after a write)."""
        self._checked_at = None

    async def commands(self) -> Mapping[str, CustomCommand]:
        now = self._clock()
        if self._checked_at is None or now - self._checked_at >= self._ttl:
            async with self._lock:
                self._refresh()
                self._checked_at = now
        return self._commands

    def _refresh(self) -> None:
        try:
            raw = self.path.read_bytes() if self.path.exists() else None
        except OSError as e:
            self._report(f"cannot read {self.path.name} ({e.strerror or e})")
            return
        if raw == self._raw and self._checked_at is not None:
            return
        self._raw = raw
        try:
            self._commands = parse_commands(raw.decode("utf-8-sig")) if raw is not None else {}
            self.problem = ""
        except (UnicodeDecodeError, ConfigError) as e:
            self._report(str(e) if isinstance(e, ConfigError) else "commands.json is not UTF-8 text")

    def _report(self, problem: str) -> None:
        if problem != self.problem:
            log.warning("%s: %s; keeping the last good commands", self.path, problem)
        self.problem = problem

    async def expand(self, text: str) -> str | None:
        """The expanded prompt of a custom command, or None when `text` is not one."""
        parts = split_command(text)
        if parts is None:
            return None
        command = (await self.commands()).get(parts[0])
        return command.expand(parts[1]) if command is not None else None

    async def listing(self) -> str:
        commands = await self.commands()
        lines = [c.line() for c in commands.values()] or ["No custom commands."]
        if self.problem:
            lines.append(f"Note: {self.problem}; the last good version is in use.")
        return "\n".join(lines)

    async def add(self, name: str, template: str, *, session: str, actor: str) -> str:
        check_name(name)
        command = _command(name, template)
        async with self._lock:
            data = self._read_for_edit()
            data.setdefault("commands", {})[name] = {"prompt": command.template}
            self._write(data)
        self._store.log_op("command_manage", session, actor, {"action": "add", "name": name})
        return f"Added /{name}."

    async def delete(self, name: str, *, session: str, actor: str) -> str:
        async with self._lock:
            data = self._read_for_edit()
            if name not in data.get("commands", {}):
                raise ConfigError(f"there is no custom command /{name[:40]}")
            del data["commands"][name]
            self._write(data)
        self._store.log_op("command_manage", session, actor, {"action": "del", "name": name})
        return f"Deleted /{name}."

    def _read_for_edit(self) -> dict[str, Any]:
        text = self.path.read_text(encoding="utf-8-sig") if self.path.exists() else ""
        parse_commands(text)  # a broken file is refused, never overwritten
        data = json.loads(text) if text.strip() else {}
        data.setdefault("commands", {})
        return data

    def _write(self, data: dict[str, Any]) -> None:
        data["commands"] = {k: data["commands"][k] for k in sorted(data["commands"])}
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        parse_commands(text)
        atomic_write_text(self.path, text)
        self.invalidate()
