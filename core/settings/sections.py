"""The sections of the settings, one pydantic model per `ania.toml` table (core/settings/__init__.py assembles
them into `Settings`). Each field's description and `sensitive` flag make the key registry that
`config_get`/`config_set` read."""

from __future__ import annotations

import zoneinfo
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


def iana_zone(name: str) -> str:
    """`name` when it is a time zone this machine knows (clock and quota days depend on it)."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as UTC or Asia/Shanghai)") from None
    return name


class LLMSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str = Field("", description="OpenAI-compatible endpoint, e.g. https://api.deepseek.com")
    api_key: str = Field("", description="API key of the endpoint", json_schema_extra={"sensitive": True})
    model: str = Field("", description="Model name, e.g. deepseek-chat")
    timeout_sec: float = Field(60.0, gt=0, description="Per-request timeout of the model endpoint")
    max_retries: int = Field(2, ge=0, le=10, description="Retries after an endpoint error or timeout")
    temperature: float | None = Field(None, description="Sampling temperature; unset = provider default")
    vision: bool = Field(False, description="The model accepts images: loaded images go to it as image parts")
    max_concurrent_calls: int = Field(
        8, ge=1, le=1024, description="Model calls in flight at once in the whole process, shared round robin by chat"
    )


class EngineSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    stock: bool = Field(
        False, description="Run on LangGraph's, langchain-openai's and pydantic's own code instead of Ania's faster "
                           "copies of their internals (services/versions.py); use it when a library upgrade is "
                           "outside the versions those copies were checked against. Stored sessions read either way")


class BotSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    admins: list[str] = Field(default_factory=list, description="User ids with admin rights")
    msg_event_timeout_sec: float = Field(300.0, gt=0, description="Time budget of one message")
    max_input_runes: int = Field(
        20_000, ge=100, le=1_000_000, description="An incoming message longer than this is cut (the model is told)"
    )
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
    max_processes: int = Field(64, ge=0, description="Processes (threads too) of one command; 0 = none")
    max_memory_mb: int = Field(512, ge=0, description="Memory of each process (and cgroup) of a command; 0 = none")
    max_file_mb: int = Field(64, ge=0, description="Largest file a command may write; 0 = no limit")
    max_cpu_sec: int = Field(30, ge=0, description="CPU seconds of each process of a command; 0 = no limit")


class ApprovalSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(True, description="Ask a human before tools in approval.tools run")
    tools: list[str] = Field(default_factory=list, description="Tool names that need approval")
    timeout_sec: float = Field(120.0, description="Approval wait, clamped to 10-240 s; timeout denies")
    self_approve_in_groups: bool = Field(
        False, description="In a group, a non-admin may approve their own call (else only admins can)"
    )
    self_approve_in_private: bool = Field(
        False, description="In a private chat, a non-admin may approve their own call (else an admin is asked)"
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
    max_calls_per_round: int = Field(
        4, ge=0, le=100, description="subagent_run and team_run calls run from one model reply; later ones are refused"
    )
    max_calls_per_message: int = Field(
        8, ge=0, le=1000, description="subagent_run and team_run calls run for one message (or clock run) in all"
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
        return iana_zone(v) if v else v  # empty: the machine's


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
    allow_private_hosts: bool = Field(
        False, description="skill_install may download from loopback and private-network addresses (a LAN server)")


class KnowledgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: bool = Field(True, description="Offer the knowledge base and long-term memory tools (kb_*, memory_*)")
    chroma_url: str = Field(
        "", description="Chroma server URL (e.g. http://127.0.0.1:8000, http://user:pw@host/?database=bot1); "
        "empty = embedded store in <data dir>/chroma"
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
        return iana_zone(v)


class LogsSettings(BaseModel):
    """The query log (Q3)."""

    model_config = ConfigDict(frozen=True)

    query_log: bool = Field(True, description="Write one query-log row per turn (ania logs queries)")
    input_chars: int = Field(500, ge=20, le=100_000, description="Characters of a message kept in its query-log row")
    stats_sec: float = Field(
        0.0, ge=0, description="Every this many seconds log one line of process figures (asyncio tasks, threads, "
        "open files), as the soak harness reads them; 0 = off")
