"""The JSON config files the chat may read and replace (T8): `mcp.json`, `hooks.json`, `commands.json`,
`prompt.json`. Each is validated by the code that reads it; services/configure/edit.py writes them.

In mcp.json the values of `env` and `headers` are shown masked; a masked value written back keeps the saved
one, and a `${VAR}` reference that the file did not have before is refused (the MCP adapters would expand
it from the bot's environment, e.g. into a header sent to a server the model chose).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.errors import ConfigError, DeveloperError, ToolError
from services.commands import parse_commands
from services.hooks.config import parse_hooks
from services.mcp.config import ServerSpec
from services.persona import parse_prompt

MASK = "****"
MAX_FILE = 256 * 1024
#: config_file_get/set names → file names in the config dir.
CONFIG_FILES = {"commands_json": "commands.json", "hooks_json": "hooks.json", "mcp_json": "mcp.json",
                "prompt_json": "prompt.json"}
TAKES_EFFECT = {"commands_json": "within 5 s", "hooks_json": "within 5 s",
                "mcp_json": "after an admin sends /reboot", "prompt_json": "after an admin sends /reboot"}


def masked_file_args(raw: dict[str, Any]) -> dict[str, Any]:
    """config_file_set's arguments with mcp.json's env and header values masked."""
    if raw.get("name") != "mcp_json" or not isinstance(raw.get("content"), str):
        return raw
    try:
        data = json.loads(raw["content"])
    except json.JSONDecodeError:
        return raw
    return {**raw, "content": json.dumps(_mask_mcp(data), ensure_ascii=False)}


def shown_file(name: str, config_dir: Path) -> str:
    """What config_file_get returns: the file, with mcp.json's secrets masked."""
    path = config_dir / CONFIG_FILES[name]
    text = _read_text(path)
    if text is None:
        return f"config/{path.name} does not exist yet."
    if name != "mcp_json":
        return f"config/{path.name}:\n{text}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ToolError(f"config/mcp.json is not valid JSON ({e}); it is not shown because it may hold "
                        "secrets. Write a whole new file with config_file_set.") from None
    return (f'config/mcp.json (values of env and headers are shown as "{MASK}"; write "{MASK}" back to keep '
            f"a saved value):\n{json.dumps(_mask_mcp(data), indent=2, ensure_ascii=False)}")


def raw_file(name: str, config_dir: Path) -> str | None:
    """The file's text as saved (None when it does not exist), for a reader allowed to see all of it: never
    mcp.json, whose secrets are shown masked only (shown_file)."""
    if name == "mcp_json":
        raise DeveloperError("mcp.json is shown masked only (shown_file)")
    return _read_text(config_dir / CONFIG_FILES[name])


def _read_text(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ToolError(f"cannot read config/{path.name} ({e})") from None
    if len(text) > MAX_FILE:
        raise ToolError(f"config/{path.name} is larger than {MAX_FILE // 1024} KiB")
    return text


def checked_file(name: str, content: str, config_dir: Path) -> str:
    """The text to write, or ConfigError: each file is validated by the code that reads it."""
    text = content if content.endswith("\n") else content + "\n"
    if name == "hooks_json":
        _, warnings = parse_hooks(content, "hooks.json")
        if warnings:
            raise ConfigError("; ".join(w.removeprefix("hooks.json: ") for w in warnings))
    elif name == "commands_json":
        parse_commands(content)
    elif name == "prompt_json":
        parse_prompt(content)
    else:
        text = json.dumps(_checked_mcp(content, config_dir), indent=2, ensure_ascii=False) + "\n"
    return text


def _checked_mcp(content: str, config_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(content)
    except json.JSONDecodeError as e:
        raise ConfigError(f"invalid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise ConfigError('mcp.json must be an object with an "mcpServers" object')
    path = config_dir / CONFIG_FILES["mcp_json"]
    try:
        old = json.loads(path.read_text(encoding="utf-8-sig")) if path.exists() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        old = {}
    old_servers = old.get("mcpServers", {}) if isinstance(old, dict) else {}
    new_refs = references(data) - references(old)
    if new_refs:
        raise ConfigError(f'"{sorted(new_refs)[0][:80]}" adds a ${{...}} reference; variables are not expanded '
                          "in servers written from the chat")
    for server, spec in data["mcpServers"].items():
        if isinstance(spec, dict):
            _unmask(server, spec, old_servers.get(server) if isinstance(old_servers, dict) else None)
            if spec.get("disabled") is True:
                continue
        try:
            ServerSpec.parse(server, spec)
        except ToolError as e:
            raise ConfigError(str(e)) from None
    return data


def _mask_mcp(data: Any) -> Any:
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return data
    out = json.loads(json.dumps(data))
    for spec in out["mcpServers"].values():
        for field in ("env", "headers"):
            if isinstance(spec, dict) and isinstance(spec.get(field), dict):
                spec[field] = dict.fromkeys(spec[field], MASK)
    return out


def _unmask(server: str, spec: dict[str, Any], old: Any) -> None:
    """Put the saved value back wherever the masked placeholder was written."""
    for field in ("env", "headers"):
        values = spec.get(field)
        if not isinstance(values, dict):
            continue
        saved: dict[str, Any] = {}
        if isinstance(old, dict) and isinstance(old.get(field), dict):
            saved = old[field]
        for k, v in values.items():
            if v == MASK:
                if k not in saved:
                    raise ConfigError(f'MCP server "{server}": {field}.{k} is "{MASK}" but no saved value exists')
                values[k] = saved[k]


def references(data: Any) -> set[str]:
    """Every string holding a `${...}` reference, anywhere in the JSON value."""
    if isinstance(data, str):
        return {data} if "${" in data else set()
    if isinstance(data, dict):
        return set().union(*(references(v) for v in data.values()), *(references(k) for k in data))
    if isinstance(data, list):
        return set().union(*(references(v) for v in data))
    return set()
