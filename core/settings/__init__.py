"""Typed settings: `ania.toml` in the config dir, every key overridable by `ANIA_<SECTION>__<KEY>`.

The settings model is also the key registry: each field carries a description and, through
`json_schema_extra={"sensitive": True}`, a sensitive flag. `config_get`/`config_set`
(services/configure/edit.py) read that registry instead of keeping a second list of keys.

Loading is strict where a mistake would silently change behaviour: an invalid value (in the file or
the environment, JSON lists included) is one ConfigError line naming the key, its environment
variable and the file; unknown keys, misspelled sections and `ANIA_*` variables that are no setting
are warned about with the file, the line and the closest key (they would otherwise be ignored).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError

from core.errors import ConfigError, DeveloperError
from core.settings.check import (
    ENV_PREFIX,
    OTHER_ENV,
    check_env_json,
    env_name,
    invalid,
    read_toml,
    unknown_in_env,
    unknown_in_file,
)
from core.settings.cluster import ClusterSettings
from core.settings.flow import FlowSettings
from core.settings.panel import PanelSettings
from core.settings.platform import FilesSettings, MemeSettings, OneBotSettings, WebSettings
from core.settings.recall import RecallSettings
from core.settings.sections import (
    AgentSettings,
    ApprovalSettings,
    BashSettings,
    BotSettings,
    ClockSettings,
    EmbeddingSettings,
    EngineSettings,
    KnowledgeSettings,
    LLMSettings,
    LogsSettings,
    MCPSettings,
    QuotaSettings,
    SkillsSettings,
    SubagentSettings,
    ToggleSettings,
    VisionSettings,
)

log = logging.getLogger(__name__)

CONFIG_FILE = "ania.toml"


#: The section models live in core/settings/sections.py; they are part of this module's API.
__all__ = [
    "CONFIG_FILE",
    "ENV_PREFIX",
    "OTHER_ENV",
    "AgentSettings",
    "ApprovalSettings",
    "BashSettings",
    "BotSettings",
    "ClockSettings",
    "ClusterSettings",
    "EmbeddingSettings",
    "EngineSettings",
    "FilesSettings",
    "FlowSettings",
    "KeyInfo",
    "KnowledgeSettings",
    "LLMSettings",
    "LogsSettings",
    "MCPSettings",
    "MemeSettings",
    "OneBotSettings",
    "PanelSettings",
    "Paths",
    "QuotaSettings",
    "RecallSettings",
    "Settings",
    "SkillsSettings",
    "SubagentSettings",
    "ToggleSettings",
    "VisionSettings",
    "WebSettings",
    "env_name",
    "load_settings",
    "registry",
    "require_llm",
]


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
    recall: RecallSettings = Field(default_factory=RecallSettings)
    vision: VisionSettings = Field(default_factory=VisionSettings)
    onebot: OneBotSettings = Field(default_factory=OneBotSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    meme: MemeSettings = Field(default_factory=MemeSettings)
    files: FilesSettings = Field(default_factory=FilesSettings)
    quota: QuotaSettings = Field(default_factory=QuotaSettings)
    logs: LogsSettings = Field(default_factory=LogsSettings)
    engine: EngineSettings = Field(default_factory=EngineSettings)
    panel: PanelSettings = Field(default_factory=PanelSettings)
    flow: FlowSettings = Field(default_factory=FlowSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)

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


#: Keys whose values config_get shows to admins only (a member, or a prompt injection in a member's
#: message, reads the key's name and description): who the admins are and who is let in or kept out,
#: the bash filters and the paths a tool may read (what to get around), the prompt, and the addresses of
#: the model, the stores and the platform (often hosts on the operator's own network).
ADMINS_ONLY_KEYS = frozenset({
    "bot.admins", "bot.users", "bot.blocked_users", "bot.groups", "bot.system_prompt",
    "bash.blacklist", "bash.whitelist", "bash.workdir", "files.allowed_dirs",
    "llm.base_url", "embedding.base_url", "vision.base_url", "knowledge.chroma_url",
    "onebot.ws_url", "onebot.listen", "onebot.path", "panel.listen", "panel.public_url", "web.search_url",
    "web.reader_url", "meme.url", "cluster.postgres_url", "cluster.relay_listen", "cluster.relay_url",
    "cluster.relay_token",
})


@dataclass(frozen=True)
class KeyInfo:
    key: str
    env: str
    description: str
    sensitive: bool
    admins_only: bool = False


def _sections() -> dict[str, type[BaseModel]]:
    out = {}
    for section, sfield in Settings.model_fields.items():
        model = sfield.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise DeveloperError(f"Settings.{section} is not a settings model")
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
                    admins_only=f"{section}.{name}" in ADMINS_ONLY_KEYS,
                )
            )
    return sorted(out, key=lambda k: k.key)


def load_settings(config_dir: Path) -> Settings:
    """Read `ania.toml` (if present) and the environment. Raises ConfigError with one clear line;
    logs a warning for each unknown key, section or `ANIA_*` variable."""
    path = Path(config_dir) / CONFIG_FILE
    data, lines = read_toml(path)
    env = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)}
    sections = _sections()
    for warning in [*unknown_in_file(data, lines, path, sections), *unknown_in_env(env, sections)]:
        log.warning("%s", warning)
    check_env_json(env, path, sections)
    config = SettingsConfigDict(**{**Settings.model_config, "toml_file": path if path.exists() else None})
    cls = type("FileSettings", (Settings,), {"model_config": config, "config_file": path})
    try:
        settings: Settings = cls()
        return settings
    except ValidationError as e:
        raise ConfigError(invalid(e, data, lines, path, env, sections)) from None
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
