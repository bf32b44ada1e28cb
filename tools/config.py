"""Configuration tools (T8, G3): config_get / config_set, config_file_get / config_file_set.

config_set and config_file_set change the configuration: they always need an admin other than the
requester, whatever `approval.enable` says (`changes_config`), and plan mode blocks them. The reads need
no approval: config_get masks sensitive values (and shows the values of services/config.py's
`ADMINS_ONLY_KEYS`, such as bot.admins, to admins only), and config_file_get (whole files, which may hold commands
and credentials) answers only when an admin asked. The work is in services/config_edit.py.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from services.config_edit import masked_set_args
from services.config_files import masked_file_args
from services.context import RunContext
from services.errors import ToolError
from tools.base import Tool

FileName = Literal["commands_json", "hooks_json", "mcp_json", "prompt_json"]

GET_DESCRIPTION = (
    "Show settings: one key (e.g. bot.msg_event_timeout_sec) or, without a key, every key with its running "
    "value and description. Sensitive values are masked; some are shown to admins only."
)
SET_DESCRIPTION = (
    "Change a setting in config/ania.toml (only keys config_get lists; the value is checked against the key's "
    "type). Needs another admin's approval; takes effect after an admin sends /reboot."
)
FILE_GET_DESCRIPTION = (
    "Read a config file: mcp_json (MCP servers), hooks_json (hooks), commands_json (custom slash commands), "
    "prompt_json (persona and system prompt). Only when an admin asks."
)
FILE_SET_DESCRIPTION = (
    "Replace a config file with `content` (the whole file). It is validated first; a file that does not "
    "validate is refused and the old one kept. Needs another admin's approval. hooks and commands take "
    "effect within 5 s, mcp and prompt after /reboot."
)
ADMINS_ONLY = "only an admin can read configuration files (they may hold commands and credentials)"


class GetParams(BaseModel):
    key: str | None = Field(None, description="section.key, e.g. llm.model; omit to list every key")


class ConfigGet(Tool[GetParams]):
    name = "config_get"
    description = GET_DESCRIPTION
    params = GetParams

    async def execute(self, args: GetParams, ctx: RunContext) -> str:
        return ctx.services.config.describe(args.key, admin=ctx.is_admin())


class SetParams(BaseModel):
    key: str = Field(description="section.key, e.g. bot.msg_event_timeout_sec")
    value: str = Field(description='The new value: JSON (120, true, ["a", "b"], null) or plain text for a text setting')


class ConfigSet(Tool[SetParams]):
    name = "config_set"
    description = SET_DESCRIPTION
    params = SetParams
    side_effect = True
    changes_config = True

    def shown_args(self, raw: dict[str, Any]) -> dict[str, Any]:
        return masked_set_args(raw)

    async def execute(self, args: SetParams, ctx: RunContext) -> str:
        return await ctx.services.config.set(args.key, args.value, session=ctx.session_key, actor=ctx.requester,
                                             approved_by=ctx.approved_by)


class FileParams(BaseModel):
    name: FileName = Field(description="Which file")


class ConfigFileGet(Tool[FileParams]):
    name = "config_file_get"
    description = FILE_GET_DESCRIPTION
    params = FileParams

    async def execute(self, args: FileParams, ctx: RunContext) -> str:
        if not ctx.is_admin():
            raise ToolError(ADMINS_ONLY)
        return ctx.services.config.read_file(args.name)


class FileSetParams(BaseModel):
    name: FileName = Field(description="Which file")
    content: str = Field(description="The whole new file (JSON)")


class ConfigFileSet(Tool[FileSetParams]):
    name = "config_file_set"
    description = FILE_SET_DESCRIPTION
    params = FileSetParams
    side_effect = True
    changes_config = True

    def shown_args(self, raw: dict[str, Any]) -> dict[str, Any]:
        return masked_file_args(raw)

    async def execute(self, args: FileSetParams, ctx: RunContext) -> str:
        return await ctx.services.config.write_file(args.name, args.content, session=ctx.session_key,
                                                    actor=ctx.requester, approved_by=ctx.approved_by)


def config_tools() -> list[Tool[Any]]:
    return [ConfigFileGet(), ConfigFileSet(), ConfigGet(), ConfigSet()]
