"""One line per checkpoint for `ania sessions history`: what produced it, in words.

Built from the tables (checkpoints/sessions.py `session_history`) plus the message writes, deserialized
one by one; the history itself is never rebuilt, so a 1,000-turn session lists in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from checkpoints.fold import REMOVE_ALL_MESSAGES
from checkpoints.sessions import StepInfo, session_history
from checkpoints.tables import Query, dialect, fetch

WRITES_SQL = Query(
    "SELECT checkpoint_id, channel, type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = '' "
    "AND channel IN ('messages', '__interrupt__') ORDER BY checkpoint_id, task_path, task_id, idx",
    "SELECT checkpoint_id, channel, type, blob FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = '' "
    'AND channel IN (\'messages\', \'__interrupt__\') '
    'ORDER BY checkpoint_id COLLATE "C", task_path COLLATE "C", task_id COLLATE "C", idx')


@dataclass(frozen=True)
class HistoryLine:
    step: StepInfo
    #: The nodes that ran from the parent checkpoint to this one, and what they wrote, in words.
    node: str
    summary: str


def _cut(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def describe(value: object) -> list[str]:
    """Phrases for one write of the messages channel."""
    out = []
    for m in value if isinstance(value, list) else [value]:
        if isinstance(m, RemoveMessage):
            if m.id == REMOVE_ALL_MESSAGES:
                out.append("history compacted")
        elif isinstance(m, AIMessage) and m.tool_calls:
            out.append("model called " + ", ".join(sorted({c["name"] for c in m.tool_calls})))
        elif isinstance(m, AIMessage):
            out.append(f"model replied: {_cut(m.text if isinstance(m.text, str) else str(m.content))}")
        elif isinstance(m, ToolMessage):
            status = m.response_metadata.get("ania_status") or m.status
            out.append(f"{m.name or 'tool'} {status}")
        elif isinstance(m, HumanMessage):
            content = m.content if isinstance(m.content, str) else "[message with attachments]"
            out.append(f"user: {_cut(content)}")
    return out


async def history_lines(saver: BaseCheckpointSaver[str], session_key: str) -> list[HistoryLine]:
    """The session's checkpoints, newest first, each with the node(s) and a summary of the step behind it."""
    steps = await session_history(saver, session_key)
    said: dict[str, list[str]] = {}
    paused: set[str] = set()
    if dialect(saver):
        for cid, channel, typ, blob in await fetch(saver, WRITES_SQL, (session_key,)):
            if channel == "__interrupt__":
                paused.add(cid)
            else:
                said.setdefault(cid, []).extend(describe(saver.serde.loads_typed((typ, bytes(blob)))))
    by_id = {s.checkpoint_id: s for s in steps}
    out = []
    for step in reversed(steps):
        parent = by_id.get(step.parent_id or "")
        ran = sorted({"tool_call" if n == "send" else n for n in parent.ran}) if parent else []
        node = ", ".join(ran) or ("input" if step.step < 0 else "-")
        if step.source == "update":
            node = "update (recovery or a fork's edit)"
        parts = said.get(step.parent_id or "", []) if parent else []
        if step.checkpoint_id in paused:
            parts = [*parts, "approval pending"]
        elif not step.ran and step.step >= 0:
            parts = [*parts, "end of turn"]
        summary = "; ".join(dict.fromkeys(parts))
        out.append(HistoryLine(step, node, summary or "-"))
    return out
