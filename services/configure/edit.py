"""Reading and changing the configuration from the chat (T8, G3): settings keys and the JSON config files.

Keys: the settings model is the registry (`core.settings.registry()`): only its keys exist, values are
validated by the key's own field (type and bounds), sensitive values are masked when shown or logged. A
change is written into `config/ania.toml` with tomlkit, so the file's comments, order and other keys stay
as they were; the running settings are frozen, so it takes effect after /reboot.

Files: `mcp.json`, `hooks.json`, `commands.json`, `prompt.json`, validated by services/configure/files.py
(a file that does not validate is refused and the old one kept) and written atomically. Who may call
these is the tools' business (tools/config.py); who asked and who approved is logged here.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import BaseModel, ValidationError
from tomlkit.exceptions import TOMLKitError

from core.errors import ConfigError, DeveloperError, ToolError
from core.settings import CONFIG_FILE, KeyInfo, Paths, Settings, registry
from services.commands import CommandStore
from services.configure.files import CONFIG_FILES, MASK, MAX_FILE, TAKES_EFFECT, checked_file, raw_file, shown_file
from services.configure.shared import SharedConfig
from services.files import atomic_write_text
from services.store import AppStore

#: No value (a key the file does not hold, or holds at its running value).
UNSET: Any = object()
ADMINS_ONLY_VALUE = "shown to admins only"


def masked(info: KeyInfo, value: Any) -> Any:
    return (MASK if value else "") if info.sensitive else value


def shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def masked_set_args(raw: dict[str, Any]) -> dict[str, Any]:
    """config_set's arguments with the value of a sensitive key masked (approval prompt, operation log)."""
    sensitive = {k.key for k in registry() if k.sensitive}
    return {**raw, "value": MASK} if str(raw.get("key", "")).strip() in sensitive and "value" in raw else raw


@dataclass(frozen=True)
class KeyView:
    """One key as config_get and the web panel show it: `value` running (masked if sensitive), `pending` what
    the file holds for the next reboot (`UNSET` when nothing differs), `from_env` an environment override."""

    info: KeyInfo
    value: Any
    pending: Any
    from_env: bool

    @property
    def needs_reboot(self) -> bool:
        return self.pending is not UNSET and not self.from_env


class ConfigEditor:
    def __init__(self, paths: Paths, settings: Settings, store: AppStore, commands: CommandStore) -> None:
        self.paths = paths
        self.settings = settings
        self.store = store
        self.commands = commands
        #: What this process writes reaches the other processes of a cluster (a no-op on SQLite).
        self.shared = SharedConfig(store, paths.config_dir)
        self.keys = {k.key: k for k in registry()}
        self._lock = asyncio.Lock()

    # --- keys ------------------------------------------------------------------------------------
    def key(self, key: str) -> KeyInfo:
        info = self.keys.get(key.strip())
        if info is None:
            near = difflib.get_close_matches(key, self.keys, n=3)
            section = key.partition(".")[0] + "."
            near = [k for k in near if k.startswith(section)] or near  # a typo rarely changes the section
            hint = f" Did you mean {', '.join(near)}?" if near else " config_get() lists every key."
            raise ToolError(f'unknown setting "{key[:80]}".{hint}')
        return info

    def running(self, info: KeyInfo) -> Any:
        section, _, name = info.key.partition(".")
        value = getattr(getattr(self.settings, section), name)
        return list(value) if isinstance(value, tuple | list) else value

    def describe(self, key: str | None = None, *, admin: bool = True) -> str:
        """One key, or every key: the running value (masked if sensitive), what the file will change. For a
        non-admin, the value of a key in `ADMINS_ONLY_KEYS` is not shown at all."""
        infos = [self.key(key)] if key else list(self.keys.values())
        lines = [] if key else [f"Settings ({len(infos)}; running values; config_set writes {CONFIG_FILE}, "
                                "which takes effect after /reboot):"]
        for view in self.views(infos):
            info = view.info
            if info.admins_only and not admin:
                lines.append(f"{info.key} = ({ADMINS_ONLY_VALUE}) — {info.description}")
                continue
            line = f"{info.key} = {shown(view.value)}"
            if view.from_env:
                line += f" (from the environment, {info.env})"
            elif view.pending is not UNSET:
                line += f" ({CONFIG_FILE} has {shown(view.pending)}: after /reboot)"
            lines.append(f"{line} — {info.description}" + (" [sensitive]" if info.sensitive else ""))
        return "\n".join(lines)

    def views(self, infos: list[KeyInfo] | None = None) -> list[KeyView]:
        """Each key's running value and what the file will change at the next reboot, sensitive ones masked."""
        saved = self._file_values()
        out = []
        for info in infos if infos is not None else list(self.keys.values()):
            value = self.running(info)
            on_file = saved.get(info.key, UNSET)
            pending = masked(info, on_file) if on_file is not UNSET and on_file != value else UNSET
            out.append(KeyView(info, masked(info, value), pending, _env_set(info.env)))
        return out

    def _file_values(self) -> dict[str, Any]:
        try:
            data = tomllib.loads(self._toml_path().read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return {}
        return {f"{s}.{k}": v for s, table in data.items() if isinstance(table, dict) for k, v in table.items()}

    def _toml_path(self) -> Path:
        return self.paths.config_dir / CONFIG_FILE

    def validate(self, info: KeyInfo, raw: str) -> Any:
        """The typed value of `raw` for this key: JSON when it parses as a valid value, else the text itself."""
        section, _, name = info.key.partition(".")
        model = _section_model(section)
        candidates: list[Any] = []
        try:
            candidates.append(json.loads(raw))
        except json.JSONDecodeError:
            pass
        candidates.append(raw)
        error: ValidationError | None = None
        for candidate in candidates:
            try:
                return getattr(model.model_validate({name: candidate}), name)
            except ValidationError as e:
                error = error or e
        assert error is not None  # noqa: S101 - narrows for mypy: the loop returned or set it
        msg = error.errors(include_url=False)[0]["msg"]
        raise ToolError(f"invalid value for {info.key}: {msg}. Nothing was changed.")

    async def set(self, key: str, raw: str, *, session: str, actor: str, approved_by: str) -> str:
        info = self.key(key)
        value = self.validate(info, raw)
        section, _, name = info.key.partition(".")
        async with self._lock:
            path = self._toml_path()
            try:
                text = path.read_text(encoding="utf-8") if path.exists() else ""
                doc = tomlkit.parse(text)
            except (OSError, UnicodeDecodeError, TOMLKitError) as e:
                raise ToolError(f"{CONFIG_FILE} cannot be edited ({e}); fix it first. Nothing was changed.") from None
            table = doc.get(section)
            if table is None:
                table = tomlkit.table()
                doc[section] = table
            item: Any = table.get(name, None)
            old = item.unwrap() if hasattr(item, "unwrap") else item
            if value is None:
                table.pop(name, None)
            else:
                table[name] = value
            new_text = tomlkit.dumps(doc)
            try:
                _section_model(section).model_validate(tomllib.loads(new_text).get(section, {}))
            except (tomllib.TOMLDecodeError, ValidationError) as e:
                raise ToolError(f"{CONFIG_FILE} would not load after this change ({e}). Nothing was changed.") from None
            try:
                atomic_write_text(path, new_text)
            except OSError as e:
                raise ToolError(f"could not write {CONFIG_FILE} ({e.strerror or e}). Nothing was changed.") from None
            self.shared.publish(CONFIG_FILE, new_text)
        self.store.log_op("config_set", session, actor, {
            "key": info.key, "old": masked(info, old), "new": masked(info, value), "approved_by": approved_by})
        env = (f" Note: {info.env} is set in the environment and overrides the file."
               if _env_set(info.env) else "")
        return (f"Set {info.key} = {shown(masked(info, value))} in config/{CONFIG_FILE}. It takes effect after an "
                f"admin sends /reboot.{env}")

    # --- files -----------------------------------------------------------------------------------
    def read_file(self, name: str) -> str:
        return shown_file(name, self.paths.config_dir)

    def raw_file(self, name: str) -> str | None:
        """The file as saved (None: not there yet) for the operator's panel; never mcp.json."""
        return raw_file(name, self.paths.config_dir)

    async def write_file(self, name: str, content: str, *, session: str, actor: str, approved_by: str) -> str:
        path = self.paths.config_dir / CONFIG_FILES[name]
        if len(content) > MAX_FILE:
            raise ToolError(f"the content is larger than {MAX_FILE // 1024} KiB. Nothing was changed.")
        async with self._lock:
            try:
                text = checked_file(name, content, self.paths.config_dir)
            except ConfigError as e:
                raise ToolError(f"refused: {e}. config/{path.name} was not changed.") from None
            try:
                atomic_write_text(path, text)
            except OSError as e:
                raise ToolError(f"could not write config/{path.name} ({e.strerror or e}). "
                                "Nothing was changed.") from None
            self.shared.publish(path.name, text)
        if name == "commands_json":
            self.commands.invalidate()
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        self.store.log_op("config_file_set", session, actor, {
            "file": path.name, "bytes": len(text.encode()), "sha256": digest, "approved_by": approved_by})
        return f"Saved config/{path.name}. It takes effect {TAKES_EFFECT[name]}."

def _section_model(section: str) -> type[BaseModel]:
    model = Settings.model_fields[section].annotation
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise DeveloperError(f"Settings.{section} is not a settings model")
    return model


def _env_set(env: str) -> bool:
    return any(k.upper() == env for k in os.environ)


