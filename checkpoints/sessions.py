"""Listing and showing stored sessions (one checkpoint thread per session), without rebuilding histories.

`list_sessions` is one query over the checkpoint table (SQLite or Postgres, checkpoints/tables.py): 1,000
sessions in a few milliseconds,
where listing every checkpoint through the saver deserialized each one. `session_history` lists one
session's checkpoints (ids, times, what each step ran) from the tables alone, never the messages.
`session_messages` rebuilds the latest history only. Other savers go through the saver API.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver

from checkpoints.factory import REDUCERS, thread_config
from checkpoints.tables import Query, dialect, fetch, portable


@dataclass(frozen=True)
class SessionInfo:
    key: str
    checkpoints: int


@dataclass(frozen=True)
class StepInfo:
    """One checkpoint of a session: when, which step, what ran from it, how many messages it wrote."""

    checkpoint_id: str
    parent_id: str | None
    at: datetime | None
    step: int
    source: str
    ran: tuple[str, ...] = field(default=())
    messages_written: int = 0


LIST_SQL = Query("SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = '' "
                 "GROUP BY thread_id ORDER BY thread_id",
                 "SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = '' "
                 'GROUP BY thread_id ORDER BY thread_id COLLATE "C"')
HISTORY_SQL = Query(
    "SELECT checkpoint_id, parent_checkpoint_id, "
    "json_extract(CAST(metadata AS TEXT), '$.step'), json_extract(CAST(metadata AS TEXT), '$.source') "
    "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id",
    "SELECT checkpoint_id, parent_checkpoint_id, (metadata ->> 'step')::int, metadata ->> 'source' "
    'FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = \'\' ORDER BY checkpoint_id COLLATE "C"')
TASKS_SQL = Query(
    "SELECT checkpoint_id, task_path, SUM(channel = 'messages') FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = '' GROUP BY checkpoint_id, task_id ORDER BY checkpoint_id",
    "SELECT checkpoint_id, task_path, SUM((channel = 'messages')::int) FROM checkpoint_writes "
    "WHERE thread_id = %s AND checkpoint_ns = '' GROUP BY checkpoint_id, task_id, task_path "
    'ORDER BY checkpoint_id COLLATE "C", task_id COLLATE "C"')


async def list_sessions(saver: BaseCheckpointSaver[str]) -> list[SessionInfo]:
    """Every stored session, sorted by key, with its number of checkpoints."""
    if dialect(saver):
        return [SessionInfo(str(key), int(n)) for key, n in await fetch(saver, LIST_SQL)]
    counts: dict[str, int] = {}
    async for item in saver.alist(None):
        if item.config["configurable"].get("checkpoint_ns", "") == "":
            key = item.config["configurable"]["thread_id"]
            counts[key] = counts.get(key, 0) + 1
    return [SessionInfo(k, counts[k]) for k in sorted(counts)]


@dataclass(frozen=True)
class SessionRow:
    """A session as a list shows it: key, checkpoints, its newest checkpoint and when that was written."""

    key: str
    checkpoints: int
    newest: str
    at: datetime | None


#: One page of sessions, newest first, and on each row how many match. The sessions are walked one index
#: seek each (a skip scan: the next thread id after the last), and each one's newest checkpoint is one more
#: seek, so the cost grows with the number of sessions, not of checkpoints (a pass over the checkpoint index
#: took 1.8x as long at 15 checkpoints a session, and grows with every turn). `{where}`: the key filter
#: (SQLite's LIKE ignores the case of ASCII letters, Postgres' ILIKE of all).
PAGE_SQL = (
    "WITH RECURSIVE t(id) AS (SELECT (SELECT MIN(thread_id{c}) FROM checkpoints) UNION ALL "
    "SELECT (SELECT MIN(thread_id{c}) FROM checkpoints WHERE thread_id{c} > t.id) FROM t WHERE t.id IS NOT NULL), "
    "s(id, newest) AS (SELECT id, (SELECT MAX(checkpoint_id{c}) FROM checkpoints WHERE thread_id = t.id "
    "AND checkpoint_ns = '') FROM t WHERE id IS NOT NULL {where}) "
    "SELECT id, newest, COUNT(*) OVER () FROM s WHERE newest IS NOT NULL ORDER BY newest DESC, id LIMIT ? OFFSET ?")
COUNT_SQL = "SELECT COUNT(DISTINCT thread_id) FROM checkpoints WHERE checkpoint_ns = '' {where}"
STEPS_SQL = Query("SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = '' "
                  "AND thread_id IN (SELECT value FROM json_each(?)) GROUP BY thread_id",
                  "SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = '' "
                  "AND thread_id = ANY(%s) GROUP BY thread_id")
_COLLATE = ' COLLATE "C"'


def _page_queries(search: bool) -> tuple[Query, Query]:
    like = {"sqlite": "LIKE ? ESCAPE '\\'", "postgres": "ILIKE ? ESCAPE '\\'"}
    page = [PAGE_SQL.format(c=c, where=f"AND id {like[d]}" if search else "")
            for d, c in (("sqlite", ""), ("postgres", _COLLATE))]
    count = [COUNT_SQL.format(where=f"AND thread_id {like[d]}" if search else "") for d in ("sqlite", "postgres")]
    return Query(page[0], page[1].replace("?", "%s")), Query(count[0], count[1].replace("?", "%s"))


async def page_sessions(saver: BaseCheckpointSaver[str], search: str = "", offset: int = 0,
                        limit: int = 50) -> tuple[list[SessionRow], int]:
    """Sessions whose key contains `search` (case-insensitive), most recently written first: one page, and
    how many match. SQLite and Postgres page in SQL; another saver lists them all first."""
    if not dialect(saver):
        rows = [SessionRow(i.key, i.checkpoints, "", None) for i in await list_sessions(saver)
                if search.lower() in i.key.lower()]
        return rows[offset:offset + limit], len(rows)
    args: list[str] = []
    if search:
        escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        args = [f"%{escaped}%"]
    page, count = _page_queries(bool(search))
    found = await fetch(saver, page, (*args, limit, offset))
    if found:
        total = int(found[0][2])
        keys = [str(r[0]) for r in found]
        listed: Any = keys if dialect(saver) == "postgres" else json.dumps(keys)
        steps: dict[str, int] = {str(k): int(n) for k, n in await fetch(saver, STEPS_SQL, (listed,))}
    else:  # a page past the end: count apart
        counted = await fetch(saver, count, tuple(args))
        total, steps = (int(counted[0][0]) if counted else 0), {}
    return [SessionRow(str(k), int(steps.get(k, 0)), str(newest), checkpoint_time(str(newest)))
            for k, newest, _ in found], total


RECENT_SQL = Query("SELECT thread_id, MAX(checkpoint_id) AS newest FROM checkpoints WHERE checkpoint_ns = '' "
                   "GROUP BY thread_id ORDER BY newest DESC",
                   'SELECT thread_id, MAX(checkpoint_id COLLATE "C") AS newest FROM checkpoints '
                   "WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY newest DESC")
#: A chat's own session (`f:<user>`, `g:<group>`): not a subagent, replay or clock thread, nor a Studio copy.
CHAT_SESSION = re.compile(r"^[fg]:[^/\s]+$")


async def recent_sessions(saver: BaseCheckpointSaver[str], n: int) -> list[str]:
    """The n chat sessions written to most recently, newest first (checkpoint ids are time-ordered)."""
    if dialect(saver):
        keys = [str(key) for key, _ in await fetch(saver, RECENT_SQL)]
    else:
        newest: dict[str, str] = {}
        async for item in saver.alist(None):
            c = item.config["configurable"]
            if c.get("checkpoint_ns", "") == "":
                newest[c["thread_id"]] = max(newest.get(c["thread_id"], ""), c["checkpoint_id"])
        keys = sorted(newest, key=newest.__getitem__, reverse=True)
    return [k for k in keys if CHAT_SESSION.match(k)][:n]


async def session_history(saver: BaseCheckpointSaver[str], session_key: str) -> list[StepInfo]:
    """The session's checkpoints, oldest first, from the checkpoint and write tables (no history rebuilt)."""
    if not dialect(saver):
        out = []
        async for item in saver.alist(thread_config(session_key)):
            meta: Mapping[str, Any] = item.metadata or {}
            cid = str(item.config["configurable"]["checkpoint_id"])
            parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config else None
            step, source = int(meta.get("step", 0)), str(meta.get("source", ""))
            out.append(StepInfo(cid, parent, checkpoint_time(cid), step, source))
        return sorted(out, key=lambda s: s.checkpoint_id)
    rows = await fetch(saver, HISTORY_SQL, (session_key,))
    tasks = await fetch(saver, TASKS_SQL, (session_key,))
    ran: dict[str, list[str]] = {}
    written: dict[str, int] = {}
    for cid, path, n in tasks:
        ran.setdefault(cid, []).append(_node_of(str(path)))
        written[cid] = written.get(cid, 0) + int(n or 0)
    return [StepInfo(cid, parent, checkpoint_time(cid), int(step if step is not None else 0), str(source or ""),
                     tuple(ran.get(cid, ())), written.get(cid, 0))
            for cid, parent, step, source in rows]


async def session_messages(source: BaseCheckpointSaver[str] | Any, session_key: str) -> list[AnyMessage]:
    """The session's latest history. `source` is a saver (as `open_checkpointer` yields) or a compiled graph."""
    if not isinstance(source, BaseCheckpointSaver):
        snapshot = await source.aget_state(thread_config(session_key))
        return list(snapshot.values.get("messages", []))
    found = await source.aget_tuple(thread_config(session_key))
    if found is None or "messages" not in found.checkpoint["channel_versions"]:
        return []
    channel: DeltaChannel[Any] = DeltaChannel(REDUCERS["messages"])
    channel.key = "messages"
    stored = found.checkpoint["channel_values"].get("messages")
    if stored is not None:  # a full copy stored at this checkpoint
        return list(channel.from_checkpoint(stored).value)
    history = await source.aget_delta_channel_history(config=found.config, channels=["messages"])
    entry = history.get("messages", {"writes": []})
    channel = channel.from_checkpoint(entry.get("seed"))
    channel.replay_writes(entry["writes"])
    return list(channel.value)


def render(message: AnyMessage) -> str:
    text = message.content if isinstance(message.content, str) else str(message.content)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
        text = (text + " " if text else "") + f"[calls {calls}]"
    role = f"tool {message.name}" if isinstance(message, ToolMessage) else message.type
    return f"{role}: {text}"


def render_step(step: StepInfo) -> str:
    at = step.at.isoformat(timespec="milliseconds") if step.at else "?"
    ran = ", ".join(step.ran) or "-"
    return (f"{step.checkpoint_id}\t{at}\tstep {step.step} ({step.source})\tran: {ran}\t"
            f"+{step.messages_written} messages")


def _node_of(task_path: str) -> str:
    """`~__pregel_pull, model` → model; a `Send` branch (push) has no node name in its path."""
    parts = [p.strip() for p in task_path.split(",")]
    if parts and parts[0] == "~__pregel_pull" and len(parts) > 1:
        return parts[1]
    return "send" if parts and parts[0] == "~__pregel_push" else json.dumps(task_path)


_UUID_EPOCH = datetime(1582, 10, 15, tzinfo=UTC)


def checkpoint_time(checkpoint_id: str) -> datetime | None:
    """LangGraph's checkpoint ids are UUIDv6: time-ordered, with the creation time in their top 60 bits."""
    try:
        u = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if u.version != 6:
        return None
    ticks = ((u.int >> 80) << 12) | ((u.int >> 64) & 0x0FFF)  # time_high+mid (48 bits), time_low (12 bits)
    return _UUID_EPOCH + timedelta(microseconds=ticks // 10)


LATEST_SQL = portable("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                      "ORDER BY checkpoint_id DESC LIMIT 1")


async def latest_checkpoint(saver: BaseCheckpointSaver[str] | None, session_key: str) -> str:
    """The id of the session's newest checkpoint ("" for a new session): where a turn starts (the query log).
    Our savers remember the ones they wrote (no read); otherwise one indexed query."""
    newest = getattr(saver, "newest", None)
    if isinstance(newest, dict) and session_key in newest:
        return str(newest[session_key])
    if saver is None:
        return ""
    if dialect(saver):
        row = await fetch(saver, LATEST_SQL, (session_key,))
        return str(row[0][0]) if row else ""
    found = await saver.aget_tuple(thread_config(session_key))
    return str(found.config["configurable"]["checkpoint_id"]) if found else ""
