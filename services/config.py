"""Typed settings: `ania.toml` in the config dir, every key overridable by `ANIA_<SECTION>__<KEY>`.

The settings model is also the key registry: each field carries a description and, through
`json_schema_extra={"sensitive": True}`, a sensitive flag. `config_get`/`config_set` (a later
issue) read that registry instead of keeping a second list of keys.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from services.errors import ConfigError

ENV_PREFIX = "ANIA_"
CONFIG_FILE = "ania.toml"


class LLMSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str = Field("", description="OpenAI-compatible endpoint, e.g. https://api.deepseek.com")
    api_key: str = Field("", description="API key of the endpoint", json_schema_extra={"sensitive": True})
    model: str = Field("", description="Model name, e.g. deepseek-chat")
    timeout_sec: float = Field(60.0, gt=0, description="Per-request timeout of the model endpoint")
    max_retries: int = Field(2, ge=0, le=10, description="Retries after an endpoint error or timeout")
    temperature: float | None = Field(None, description="Sampling temperature; unset = provider default")


class BotSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    admins: list[str] = Field(default_factory=list, description="User ids with admin rights")
    msg_event_timeout_sec: float = Field(300.0, gt=0, description="Time budget of one message")
    system_prompt: str = Field(
        "You are Ania, a helpful assistant in a chat. Answer concisely.",
        description="System prompt; must not change per turn (keeps the provider cache warm)",
    )

    @field_validator("admins", mode="before")
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
    clock: ClockSettings = Field(default_factory=ClockSettings)

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
    def from_env(cls) -> Paths:
        return cls(
            config_dir=Path(os.environ.get("ANIA_CONFIG_DIR", "./config")).resolve(),
            data_dir=Path(os.environ.get("ANIA_DATA_DIR", "./data")).resolve(),
        )


@dataclass(frozen=True)
class KeyInfo:
    key: str
    env: str
    description: str
    sensitive: bool


def registry() -> list[KeyInfo]:
    """Every registered key (sorted), derived from the settings model."""
    out: list[KeyInfo] = []
    for section, sfield in Settings.model_fields.items():
        model = sfield.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel), section
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
    """Read `ania.toml` (if present) and the environment. Raises ConfigError with one clear line."""
    path = config_dir / CONFIG_FILE
    if path.exists():
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
    config = SettingsConfigDict(**{**Settings.model_config, "toml_file": path if path.exists() else None})
    cls = type("FileSettings", (Settings,), {"model_config": config})
    try:
        return cls()
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ConfigError(
            f"invalid setting {key} ({env_name(key)}): {err['msg']}"
            + (f" ({len(e.errors()) - 1} more)" if len(e.errors()) > 1 else "")
        ) from None


def require_llm(settings: Settings) -> None:
    """The model settings are checked when a run starts, not at import (Studio imports the graph)."""
    for key in ("base_url", "model"):
        if not getattr(settings.llm, key):
            raise ConfigError(
                f"missing setting llm.{key}: set it in {CONFIG_FILE} under [llm] or as {env_name('llm.' + key)}"
                " (or try `make demo`, an offline scripted model)"
            )
