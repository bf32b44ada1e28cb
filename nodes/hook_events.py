"""The one place a hook event is built from a run: session and agent kind come from the run context."""

from __future__ import annotations

from typing import Any

from services.context import RunContext
from services.hooks import HookEvent, HookEventName


def hook_event(ctx: RunContext, name: HookEventName, **fields: Any) -> HookEvent:
    return HookEvent(name, session_id=ctx.session_key, agent_kind=ctx.agent_kind, **fields)
