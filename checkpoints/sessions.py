"""Listing and showing stored sessions (one checkpoint thread per session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from checkpoints.factory import thread_config


@dataclass(frozen=True)
class SessionInfo:
    key: str
    checkpoints: int


async def list_sessions(saver: BaseCheckpointSaver) -> list[SessionInfo]:
    """Every stored session, sorted by key."""
    counts: dict[str, int] = {}
    async for item in saver.alist(None):
        if item.config["configurable"].get("checkpoint_ns", "") == "":
            key = item.config["configurable"]["thread_id"]
            counts[key] = counts.get(key, 0) + 1
    return [SessionInfo(k, counts[k]) for k in sorted(counts)]


async def session_messages(graph: Any, session_key: str) -> list[AnyMessage]:
    snapshot = await graph.aget_state(thread_config(session_key))
    return list(snapshot.values.get("messages", []))


def render(message: AnyMessage) -> str:
    text = message.content if isinstance(message.content, str) else str(message.content)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
        text = (text + " " if text else "") + f"[calls {calls}]"
    role = f"tool {message.name}" if isinstance(message, ToolMessage) else message.type
    return f"{role}: {text}"
