"""Typed settings: `ania.toml` in the config dir, every key overridable by `ANIA_<SECTION>__<KEY>`.

The settings model is also the key registry: each field carries a description and, through
`json_schema_extra={"sensitive": True}`, a sensitive flag. `config_get`/`config_set`
(services/config_edit.py) read that registry instead of keeping a second list of keys.

Loading is strict where a mistake would silently change behaviour: an invalid value (in the file or
the environment, JSON lists included) is one ConfigError line naming the key, its environment
variable and the file; unknown keys, misspelled sections and `ANIA_*` variables that are no setting
are warned about with the file, the line and the closest key (they would otherwise be ignored).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import tomllib
import typing
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError

from services.errors import ConfigError

log = logging.getLogger(__name__)

ENV_PREFIX = "ANIA_"
CONFIG_FILE = "ania.toml"
#: `ANIA_*` variables that are not settings (the two directories; the bash runner's marker; the URL
#: a Studio server announced).
OTHER_ENV = ("ANIA_CONFIG_DIR", "ANIA_DATA_DIR", "ANIA_BASH_RUN", "ANIA_STUDIO_URL")


class LLMSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str = Field("", description="OpenAI-compatible endpoint, e.g. https://api.deepseek.com")
    api_key: str = Field("", description="API key of the endpoint", json_schema_extra={"sensitive": True})
    model: str = Field("", description="Model name, e.g. deepseek-chat")
    timeout_sec: float = Field(60.0, gt=0, description="Per-request timeout of the model endpoint")
    max_retries: int = Field(2, ge=0, le=10, description="Retries after an endpoint error or timeout")
    temperature: float | None = Field(None, description="Sampling temperature; unset = provider default")
    vision: bool = Field(False, description="The model accepts images: loaded images go to it as image parts")


class BotSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    admins: list[str] = Field(default_factory=list, description="User ids with admin rights")
    msg_event_timeout_sec: float = Field(300.0, gt=0, description="Time budget of one message")
    system_prompt: str = Field(
        "You are Ania, a helpful assistant in a chat. Answer concisely.",
        description="System prompt; must not change per turn (keeps the provider cache warm)",
    )

    group_prefixes: list[str] = Field(
        default_factory=list,
        description="In a group, a message starting with one of these is for the bot (besides an @)",
    )
    groups: list[str] = Field(default_factory=list, description="Only these group ids are served; empty = every group")
    users: list[str] = Field(
        default_factory=list, description="Only these user ids are served (groups and private chats); empty = everyone"
    )
    blocked_users: list[str] = Field(default_factory=list, description="User ids the bot never answers")

    @field_validator("admins", "groups", "users", "blocked_users", mode="before")
    @classmethod
    def _ids_as_text(cls, v: Any) -> Any:
        return [str(x) for x in v] if isinstance(v, list) else v


class AgentSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_rounds: int = Field(20, ge=1, le=200, description="Tool rounds per message before stopping")
    context_tokens: int = Field(
        60000, ge=500, description="Estimated history size above which older turns are summarized"
    )
    keep_recent_tokens: int = Field(
        8000, ge=100, description="History kept verbatim when compacting (the rest is summarized)"
    )


class BashSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(False, description="Offer the bash tool")
    blacklist: list[str] = Field(default_factory=list, description="Regexes that refuse a command")
    whitelist: list[str] = Field(default_factory=list, description="Regexes that run a command at once")
    timeout_sec: float = Field(30.0, gt=0, le=600, description="Timeout of one command")
    workdir: str = Field("", description="Working directory (default: <data dir>/workspace)")
    sandbox: Literal["auto", "bwrap", "off"] = Field(
        "auto", description="Run commands under bubblewrap: auto (when bwrap is installed), bwrap (required), off"
    )
    network: bool = Field(False, description="Let sandboxed commands use the network")


class ApprovalSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(True, description="Ask a human before tools in approval.tools run")
    tools: list[str] = Field(default_factory=list, description="Tool names that need approval")
    timeout_sec: float = Field(120.0, description="Approval wait, clamped to 10-240 s; timeout denies")
    self_approve_in_groups: bool = Field(
        False, description="In a group, a non-admin may approve their own call (else only admins can)"
    )

    @property
    def effective_timeout(self) -> float:
        return min(240.0, max(10.0, self.timeout_sec))


class MCPSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    lazy_load: bool = Field(True, description="Discover/load MCP tools on demand instead of all at start")
    lazy_mode: str = Field("native", pattern="^(native|proxy)$", description="native or proxy lazy loading")
    call_timeout_sec: float = Field(60.0, gt=0, description="Deadline of one MCP tool call")
    connect_timeout_sec: float = Field(15.0, gt=0, description="Deadline of connecting to a server")


class SubagentSettings(BaseModel):
    """Subagents and teams (A1-A4)."""

    model_config = ConfigDict(frozen=True)

    default_timeout_sec: int = Field(120, ge=1, description="Budget of a subagent or team member when none is asked")
    max_timeout_sec: int = Field(600, ge=1, le=3600, description="Upper clamp of a requested timeout_sec")
    parent_reserve_sec: int = Field(
        30, ge=0, description="Seconds of the message's budget kept for the main reply after a subagent"
    )
    min_budget_sec: int = Field(5, ge=1, description="A subagent with less time than this left is not started")
    max_rounds: int = Field(10, ge=1, le=200, description="Tool rounds of a subagent or team member")
    max_result_len: int = Field(4000, ge=100, description="Runes of a subagent's answer returned to the main AI")
    team_max_result_len: int = Field(
        12000, ge=100, description="Runes of a team run's answers together (shared by its members)"
    )


class ClockSettings(BaseModel):
    """Scheduled tasks (C1-C7)."""

    model_config = ConfigDict(frozen=True)

    timezone: str = Field(
        "", description="IANA timezone of new tasks' schedules, e.g. Asia/Shanghai; empty = the machine's"
    )
    min_interval_sec: int = Field(60, ge=1, description="Shortest interval between two runs of a repeating task")
    max_tasks_per_session: int = Field(20, ge=1, le=1000, description="Tasks one chat may have")
    default_timeout_sec: int = Field(120, ge=1, description="Time budget of one run when the task sets none")
    max_timeout_sec: int = Field(1800, ge=1, le=86400, description="Upper clamp of a task's own timeout_sec")
    misfire_grace_sec: int = Field(
        300, ge=0,
        description="A run due while the bot was down runs at start if at most this late, else it is logged missed",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        if v:
            try:
                ZoneInfo(v)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown timezone {v!r}; use an IANA name such as Asia/Shanghai") from None
        return v


class ToggleSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(False, description="Offer the self-management tools")


class SkillsSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enabled: list[str] = Field(default_factory=list, description="Only these skills (by name); empty = every skill")
    max_download_mb: float = Field(10.0, gt=0, le=1024, description="Largest download skill_install accepts")
    download_timeout_sec: float = Field(30.0, gt=0, le=600, description="Deadline of one skill download")
    max_files: int = Field(1000, ge=1, le=100_000, description="Most entries an installed skill archive may have")
    max_unpacked_mb: float = Field(50.0, gt=0, le=4096, description="Largest unpacked size of a skill archive")


class KnowledgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(True, description="Offer the knowledge base and long-term memory tools (kb_*, memory_*)")
    chroma_url: str = Field(
        "", description="Chroma server URL (e.g. http://127.0.0.1:8000); empty = embedded store in <data dir>/chroma"
    )
    max_docs: int = Field(200, ge=1, description="Documents per knowledge base scope (a session, or global)")
    max_doc_runes: int = Field(1_000_000, ge=1, description="Longest document kb_add or `ania kb add` accepts")
    max_memories: int = Field(500, ge=1, description="Long-term memories per session")
    analyzer: Literal["grams", "bigrams", "words"] = Field(
        "grams", description="Search terms of CJK text: characters and pairs (grams), pairs, or jieba words"
    )


class EmbeddingSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str = Field("", description="OpenAI-compatible /v1/embeddings endpoint; empty = keyword search only")
    model: str = Field("", description="Embedding model name; empty = keyword search only")
    api_key: str = Field("", description="API key of the embedding endpoint", json_schema_extra={"sensitive": True})
    timeout_sec: float = Field(10.0, gt=0, le=120, description="Deadline of one embeddings request")
    batch_size: int = Field(64, ge=1, le=2048, description="Texts per embeddings request")


class VisionSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str = Field("", description="OpenAI-compatible endpoint of a vision model that describes images "
                                          "for a model without vision (llm.vision = false)")
    api_key: str = Field("", description="API key of the vision endpoint", json_schema_extra={"sensitive": True})
    model: str = Field("", description="Vision model name, e.g. gpt-4o-mini or qwen-vl-plus")
    timeout_sec: float = Field(60.0, gt=0, description="Per-request timeout of the vision endpoint")

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class OneBotSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    ws_url: str = Field("", description="Forward WebSocket: the implementation's server Ania dials, e.g. ws://127.0.0.1:3001")
    listen: str = Field("", description="Reverse WebSocket: host:port Ania listens on, e.g. 127.0.0.1:8080")
    path: str = Field("/onebot/v11/ws", description="Reverse WebSocket: the URL path the implementation dials")
    access_token: str = Field(
        "", description="OneBot access token (Authorization: Bearer) in both directions",
        json_schema_extra={"sensitive": True},
    )
    api_timeout_sec: float = Field(30.0, gt=0, le=600, description="Deadline of one OneBot API call")
    reconnect_max_sec: float = Field(30.0, ge=1, le=600, description="Longest wait between forward reconnects")
    max_message_runes: int = Field(
        3000, ge=100, le=100_000, description="Longer replies are split on paragraph boundaries into several messages"
    )
    shutdown_grace_sec: float = Field(
        30.0, ge=0, le=600, description="On SIGINT/SIGTERM, how long running turns may finish before they are stopped"
    )


class WebSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    jina_api_key: str = Field("", description="Jina API key (optional; higher rate limits)",
                              json_schema_extra={"sensitive": True})
    search_url: str = Field("https://s.jina.ai/", description="webSearch endpoint (Jina search API or compatible)")
    reader_url: str = Field("https://r.jina.ai/", description="webExplore endpoint (Jina reader or a self-hosted one)")
    timeout_sec: float = Field(30.0, gt=0, le=300, description="Deadline of one web request")


class MemeSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    url: str = Field(
        "https://api.giphy.com/v1/stickers/search?api_key=${key}&q=${msg}&limit=${num}",
        description="Request URL template: ${msg} search words, ${num} count, ${key} the API key",
    )
    key: str = Field("", description="API key put into ${key} (GIPHY: a free key)",
                     json_schema_extra={"sensitive": True})
    list_path: str = Field("data", description="GJSON path of the result list in the response")
    img_field: str = Field("images.fixed_width.url", description="GJSON path of the image URL inside one result")
    timeout_sec: float = Field(20.0, gt=0, le=300, description="Deadline of the search and of each image download")


class FilesSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    allowed_dirs: list[str] = Field(
        default_factory=list,
        description="Directories send_file and local_image may read (empty = both tools off); nothing outside",
    )
    max_file_mb: float = Field(20.0, gt=0, le=1024, description="Largest file send_file sends")

class QuotaSettings(BaseModel):
    """Daily token quotas (Q1), counted per day in `timezone`; 0 = unlimited."""

    model_config = ConfigDict(frozen=True)

    session_daily_tokens: int = Field(0, ge=0, description="Tokens one session may spend per day; 0 = unlimited")
    global_daily_tokens: int = Field(
        0, ge=0, description="Tokens all sessions together may spend per day; 0 = unlimited"
    )
    timezone: str = Field("UTC", description="IANA time zone whose midnight starts a new quota day")
    admins_exempt: bool = Field(True, description="Messages from admins are not refused by a quota")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        try:
            zoneinfo.ZoneInfo(v)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {v!r} (an IANA name such as UTC or Asia/Shanghai)") from None
        return v


class LogsSettings(BaseModel):
    """The query log (Q3)."""

    model_config = ConfigDict(frozen=True)

    query_log: bool = Field(True, description="Write one query-log row per turn (ania logs queries)")
    input_chars: int = Field(500, ge=20, le=100_000, description="Characters of a message kept in its query-log row")


class Settings(BaseSettings):
    """All settings. Sections mirror `ania.toml` tables. Frozen once loaded: nothing changes them at run
    time (config_set writes the file; the new value takes effect at the next start)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore", case_sensitive=False, frozen=True
    )

    llm: LLMSettings = Field(default_factory=LLMSettings)
    bot: BotSettings = Field(default_factory=BotSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    bash: BashSettings = Field(default_factory=BashSettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)
    mcp_tool: ToggleSettings = Field(default_factory=ToggleSettings)
    subagent: SubagentSettings = Field(default_factory=SubagentSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    skill_tool: ToggleSettings = Field(default_factory=ToggleSettings)
    clock: ClockSettings = Field(default_factory=ClockSettings)
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    vision: VisionSettings = Field(default_factory=VisionSettings)
    onebot: OneBotSettings = Field(default_factory=OneBotSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    meme: MemeSettings = Field(default_factory=MemeSettings)
    files: FilesSettings = Field(default_factory=FilesSettings)
    quota: QuotaSettings = Field(default_factory=QuotaSettings)
    logs: LogsSettings = Field(default_factory=LogsSettings)

    #: The file `load_settings` read (or would have read: it may not exist); errors name it.
    config_file: ClassVar[Path | None] = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    def is_admin(self, user_id: str) -> bool:
        return bool(user_id) and user_id in self.bot.admins


@dataclass(frozen=True)
class Paths:
    config_dir: Path
    data_dir: Path

    @classmethod
    def from_env(cls, *, check: bool = False) -> Paths:
        """With `check`, an `ANIA_CONFIG_DIR` that does not exist is an error: a typo there would
        silently drop the admins, the approval list and every other setting of the file."""
        given = os.environ.get("ANIA_CONFIG_DIR")
        config_dir = Path(given or "./config").resolve()
        if check and given and not config_dir.is_dir():
            raise ConfigError(f"the config dir {config_dir} (ANIA_CONFIG_DIR={given}) does not exist or is not a "
                              "directory; create it, or unset ANIA_CONFIG_DIR to use ./config")
        return cls(config_dir=config_dir, data_dir=Path(os.environ.get("ANIA_DATA_DIR", "./data")).resolve())


@dataclass(frozen=True)
class KeyInfo:
    key: str
    env: str
    description: str
    sensitive: bool


def _sections() -> dict[str, type[BaseModel]]:
    out = {}
    for section, sfield in Settings.model_fields.items():
        model = sfield.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel), section
        out[section] = model
    return out


def registry() -> list[KeyInfo]:
    """Every registered key (sorted), derived from the settings model."""
    out: list[KeyInfo] = []
    for section, model in _sections().items():
        for name, f in model.model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            out.append(
                KeyInfo(
                    key=f"{section}.{name}",
                    env=env_name(f"{section}.{name}"),
                    description=f.description or "",
                    sensitive=bool(extra.get("sensitive")),
                )
            )
    return sorted(out, key=lambda k: k.key)


def env_name(key: str) -> str:
    section, _, name = key.partition(".")
    return f"{ENV_PREFIX}{section.upper()}__{name.upper()}"


def load_settings(config_dir: Path) -> Settings:
    """Read `ania.toml` (if present) and the environment. Raises ConfigError with one clear line;
    logs a warning for each unknown key, section or `ANIA_*` variable."""
    path = Path(config_dir) / CONFIG_FILE
    data, lines = _read_toml(path)
    env = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)}
    for warning in [*_unknown_in_file(data, lines, path), *_unknown_in_env(env)]:
        log.warning("%s", warning)
    _check_env_json(env, path)
    config = SettingsConfigDict(**{**Settings.model_config, "toml_file": path if path.exists() else None})
    cls = type("FileSettings", (Settings,), {"model_config": config, "config_file": path})
    try:
        return cls()
    except ValidationError as e:
        raise ConfigError(_invalid(e, data, lines, path, env)) from None
    except SettingsError as e:  # a source that could not be parsed at all (the JSON check catches the usual ones)
        raise ConfigError(f"invalid settings in the environment or {path}: {e}") from None


def require_llm(settings: Settings) -> None:
    """The model settings are checked when a run starts, not at import (Studio imports the graph)."""
    path = settings.config_file or Path(CONFIG_FILE)
    where = str(path) if path.exists() else f"{path} (not there yet: config.example/ania.toml is a commented start)"
    for key in ("base_url", "model"):
        if not getattr(settings.llm, key):
            raise ConfigError(
                f"missing setting llm.{key}: set it in {where} under [llm] or as {env_name('llm.' + key)}"
                " (or try `make demo`, an offline scripted model)"
            )


# --- what load_settings checks ---------------------------------------------------------------------
Lines = dict[tuple[str, ...], int]
_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_PART = r"""(?:"[^"]*"|'[^']*'|[A-Za-z0-9_\-]+)"""
_ASSIGN = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")


def _key_parts(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in re.findall(r'"[^"]*"|\'[^\']*\'|[^.]+', text))


def _read_toml(path: Path) -> tuple[dict[str, Any], Lines]:
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


def _all_keys() -> list[str]:
    return [f"{s}.{k}" for s, m in _sections().items() for k in m.model_fields]


def _unknown_in_file(data: dict[str, Any], lines: Lines, path: Path) -> list[str]:
    sections = _sections()
    out = []
    for section, value in data.items():
        if section not in sections:
            if isinstance(value, dict):
                hint = _closest(section, list(sections))
                suggestion = f"did you mean [{hint}]?" if hint else f"sections: {', '.join(sorted(sections))}"
                out.append(f"{_at(path, lines, section)}: unknown section [{section}] (ignored); {suggestion}")
            else:
                hint = next((k for k in _all_keys() if k.endswith("." + section)), None) or _closest(
                    section, _all_keys())
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
            elsewhere = [k for k in _all_keys() if k.endswith("." + key)]
            if hint:
                suggestion = f"did you mean {section}.{hint}?"
            elif elsewhere:
                suggestion = f"did you mean {elsewhere[0]}?"
            else:
                suggestion = f"keys of [{section}]: {', '.join(sorted(fields))}"
            out.append(f"{_at(path, lines, section, key)}: unknown key {section}.{key} (ignored); {suggestion}")
    return out


def _unknown_in_env(env: Mapping[str, str]) -> list[str]:
    known = {env_name(k) for k in _all_keys()} | {f"{ENV_PREFIX}{s.upper()}" for s in _sections()}
    out = []
    for name in sorted(env):
        if name in known or name in OTHER_ENV:
            continue
        hint = _closest(name, sorted(known), cutoff=0.85)  # the shared ANIA_ prefix makes anything look close
        if "__" in name or hint:
            suggestion = f"; did you mean {hint}?" if hint else ""
            out.append(f"environment variable {name} is not a setting (ignored){suggestion}")
    return out


def _is_json_field(section: str, key: str) -> bool:
    model = _sections().get(section)
    field = model.model_fields.get(key) if model else None
    if field is None:
        return False
    origin = typing.get_origin(field.annotation)
    return origin in (list, dict, tuple, set) or field.annotation in (list, dict)


def _check_env_json(env: Mapping[str, str], path: Path) -> None:
    """List settings come from the environment as JSON; pydantic-settings' own error names no key."""
    for key in _all_keys():
        section, _, name = key.partition(".")
        value = env.get(env_name(key))
        if value is None or not _is_json_field(section, name):
            continue
        try:
            json.loads(value)
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"invalid setting {key} from {env_name(key)} (overrides {path}): not valid JSON ({e.msg} at "
                f"column {e.colno} of {value[:60]!r}); give a JSON list such as '[\"a\", \"b\"]'"
            ) from None


def _invalid(e: ValidationError, data: dict[str, Any], lines: Lines, path: Path, env: Mapping[str, str]) -> str:
    err = e.errors()[0]
    loc = [str(p) for p in err["loc"]]
    key = ".".join(loc[:2])
    sensitive = next((k.sensitive for k in registry() if k.key == key), False)
    got = "" if sensitive or "input" not in err else f" (got {str(err['input'])[:60]!r})"
    more = f" ({len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    variable = env_name(key) if len(loc) > 1 else f"{ENV_PREFIX}{loc[0].upper()}"
    if variable in env:
        return f"invalid setting {key} from {variable} (overrides {path}): {err['msg']}{got}{more}"
    return f"invalid setting {key} in {_at(path, lines, *loc[:2])} (env {variable}): {err['msg']}{got}{more}"
