"""What `load_settings` checks beyond pydantic (core/settings/__init__.py): where in `ania.toml` a key is (file
and line, for errors), unknown keys and sections with the closest known key, `ANIA_*` variables that are
no setting, and JSON lists in the environment. `sections` is the settings' table name → section model."""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from core.errors import ConfigError

ENV_PREFIX = "ANIA_"
#: `ANIA_*` variables that are not settings (the two directories; the bash runner's marker; the URL
#: a Studio server announced).
OTHER_ENV = ("ANIA_CONFIG_DIR", "ANIA_DATA_DIR", "ANIA_BASH_RUN", "ANIA_STUDIO_URL")
Sections = Mapping[str, type[BaseModel]]


def env_name(key: str) -> str:
    section, _, name = key.partition(".")
    return f"{ENV_PREFIX}{section.upper()}__{name.upper()}"


def given_value(toml_path: Path, key: str) -> Any:
    """One setting as given, without loading (or validating) the others: its environment variable wins, then
    its key in the TOML file; None when neither gives it. A file that is not valid TOML gives nothing: the
    commands that read stored state (`ania sessions`, Studio) read it whatever the settings say."""
    given = {k.upper(): v for k, v in os.environ.items()}.get(env_name(key))
    if given is not None:
        return given
    try:
        data, _ = read_toml(toml_path)
    except ConfigError:
        return None
    section, _, name = key.partition(".")
    table = data.get(section)
    return table.get(name) if isinstance(table, dict) else None


Lines = dict[tuple[str, ...], int]
_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_PART = r"""(?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)"""
_ASSIGN = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")


def _key_parts(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in re.findall(r'"[^"]*"|\'[^\']*\'|[^.]+', text))


def read_toml(path: Path) -> tuple[dict[str, Any], Lines]:
    """The file's data and the line where each table and key first appears (tomllib keeps no positions)."""
    if not path.exists():
        return {}, {}
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    lines: Lines = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        if m := _TABLE.match(line):
            table = _key_parts(m.group(1))
            found = table
        elif m := _ASSIGN.match(line):
            found = table + _key_parts(m.group(1))
        else:
            continue
        for i in range(1, len(found) + 1):
            lines.setdefault(found[:i], number)
    return data, lines


def _at(path: Path, lines: Lines, *parts: str) -> str:
    number = lines.get(tuple(parts))
    return f"{path}:{number}" if number else str(path)


def _closest(word: str, options: list[str], cutoff: float = 0.6) -> str | None:
    """The option most like `word` (case-insensitively), if any is close; on a tie the first in `options`
    (sections in file order: `llm` before `web`), not difflib's alphabetically last."""
    matcher = difflib.SequenceMatcher(b=word.lower())
    best, best_score = None, cutoff
    for option in options:
        matcher.set_seq1(option.lower())
        score = matcher.ratio()
        if score > best_score or (best is None and score >= cutoff):
            best, best_score = option, score
    return best


def _all_keys(sections: Sections) -> list[str]:
    return [f"{s}.{k}" for s, m in sections.items() for k in m.model_fields]


def unknown_in_file(data: dict[str, Any], lines: Lines, path: Path, sections: Sections) -> list[str]:
    out = []
    for section, value in data.items():
        if section not in sections:
            if isinstance(value, dict):
                hint = _closest(section, list(sections))
                suggestion = f"did you mean [{hint}]?" if hint else f"sections: {', '.join(sorted(sections))}"
                out.append(f"{_at(path, lines, section)}: unknown section [{section}] (ignored); {suggestion}")
            else:
                hint = next((k for k in _all_keys(sections) if k.endswith("." + section)), None) or _closest(
                    section, _all_keys(sections))
                suggestion = f"; did you mean {hint}?" if hint else ""
                out.append(f"{_at(path, lines, section)}: unknown key {section} outside any [section] "
                           f"(ignored){suggestion}")
            continue
        if not isinstance(value, dict):
            continue  # not a table: the validation error names it
        fields = list(sections[section].model_fields)
        for key in value:
            if key in fields:
                continue
            hint = _closest(key, fields)
            elsewhere = [k for k in _all_keys(sections) if k.endswith("." + key)]
            if elsewhere:  # the same key in another section beats a merely similar one here
                suggestion = f"did you mean {elsewhere[0]}?"
            elif hint:
                suggestion = f"did you mean {section}.{hint}?"
            else:
                suggestion = f"keys of [{section}]: {', '.join(sorted(fields))}"
            out.append(f"{_at(path, lines, section, key)}: unknown key {section}.{key} (ignored); {suggestion}")
    return out


def unknown_in_env(env: Mapping[str, str], sections: Sections) -> list[str]:
    known = {env_name(k) for k in _all_keys(sections)} | {f"{ENV_PREFIX}{s.upper()}" for s in sections}
    out = []
    for name in sorted(env):
        if name in known or name in OTHER_ENV:
            continue
        hint = _closest(name, sorted(known), cutoff=0.85)  # the shared ANIA_ prefix makes anything look close
        if "__" in name or hint:
            suggestion = f"; did you mean {hint}?" if hint else ""
            out.append(f"environment variable {name} is not a setting (ignored){suggestion}")
    return out


def _is_json_field(section: str, key: str, sections: Sections) -> bool:
    model = sections.get(section)
    field = model.model_fields.get(key) if model else None
    if field is None:
        return False
    origin = typing.get_origin(field.annotation)
    return origin in (list, dict, tuple, set) or field.annotation in (list, dict)


def check_env_json(env: Mapping[str, str], path: Path, sections: Sections) -> None:
    """List settings come from the environment as JSON; pydantic-settings' own error names no key."""
    for key in _all_keys(sections):
        section, _, name = key.partition(".")
        value = env.get(env_name(key))
        if value is None or not _is_json_field(section, name, sections):
            continue
        try:
            json.loads(value)
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"invalid setting {key} from {env_name(key)} (overrides {path}): not valid JSON ({e.msg} at "
                f"column {e.colno} of {value[:60]!r}); give a JSON list such as '[\"a\", \"b\"]'"
            ) from None


def invalid(e: ValidationError, data: dict[str, Any], lines: Lines, path: Path, env: Mapping[str, str],
            sections: Sections) -> str:
    err = e.errors()[0]
    loc = [str(p) for p in err["loc"]]
    key = ".".join(loc[:2])
    sensitive = len(loc) > 1 and _sensitive(sections, loc[0], loc[1])
    got = "" if sensitive or "input" not in err else f" (got {str(err['input'])[:60]!r})"
    more = f" ({len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    variable = env_name(key) if len(loc) > 1 else f"{ENV_PREFIX}{loc[0].upper()}"
    if variable in env:
        return f"invalid setting {key} from {variable} (overrides {path}): {err['msg']}{got}{more}"
    return f"invalid setting {key} in {_at(path, lines, *loc[:2])} (env {variable}): {err['msg']}{got}{more}"


def _sensitive(sections: Sections, section: str, name: str) -> bool:
    """A secret's value never appears in an error."""
    f = sections[section].model_fields.get(name) if section in sections else None
    extra = f.json_schema_extra if f is not None and isinstance(f.json_schema_extra, dict) else {}
    return bool(extra.get("sensitive"))


def section_help(section: str, model: type[BaseModel]) -> str:
    """The settings of one section for a command's --help: key, environment variable, default, description
    (from the field descriptions, so the help cannot drift from the settings)."""
    lines = [f"Settings: [{section}] in config/ania.toml (the directory is ANIA_CONFIG_DIR), or the environment "
             "variable named:"]
    for name, field in model.model_fields.items():
        key = f"{section}.{name}"
        default = "" if _sensitive({section: model}, section, name) else field.get_default(call_default_factory=True)
        shown = f" (default {default!r})" if default not in ("", None, [], {}) else ""
        lines.append(f"  {key}, {env_name(key)}{shown}")
        lines.append(f"      {field.description or ''}")
    return "\n".join(lines)


#: API keys as the examples write them ("sk-...", "<your key>", "your-api-key"): never a real key.
PLACEHOLDER_KEY = re.compile(r"^(sk-)?(\.{3}|…|x{3,}|<[^>]*>|your[-_ ]?(api[-_ ]?)?key\b.*)$", re.IGNORECASE)


def check_llm_endpoint(base_url: str, api_key: str, path: Path, env: Mapping[str, str]) -> None:
    """What can be told about the model endpoint before any request: a placeholder key, a base_url that is
    no http(s) URL with a host. One line naming the key and where it came from (ConfigError: exit 2)."""
    from urllib.parse import urlsplit

    lines = read_toml(path)[1] if path.exists() else {}

    def where(name: str) -> str:
        variable = env_name(f"llm.{name}")
        return f"from {variable}" if variable in env else f"in {_at(path, lines, 'llm', name)}"

    if PLACEHOLDER_KEY.match(api_key.strip()):
        raise ConfigError(f"llm.api_key {where('api_key')} is a placeholder ({api_key.strip()[:20]!r}), not a key: "
                          f"put your provider's API key there (or set {env_name('llm.api_key')}; `make demo` needs "
                          "none)")
    try:
        url = urlsplit(base_url.strip())
        ok = url.scheme in ("http", "https") and bool(url.hostname)
        url.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"invalid setting llm.base_url {where('base_url')}: {base_url[:80]!r} is not an http(s) URL "
                          "with a host, e.g. https://api.deepseek.com or http://127.0.0.1:11434/v1")
