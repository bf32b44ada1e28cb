"""Replay and fork correctness of the message history at every checkpoint (checkpoints/saver.py, delta.py, fold.py).

A long real session (tool calls, snapshot copies, compactions, a recovery patch and a fork) is stored;
then the history at every checkpoint is rebuilt three ways and must agree: our saver cold (a fresh one,
newest first, so each load walks to a copy), our saver warm (oldest first, each load starting from the
cached previous one), and LangGraph's own loader on the same file. The linear part is also checked
against a naive replay of every write from the root with plain `add_messages`, which ignores the copies.
"""

from __future__ import annotations

import random
import sqlite3
from typing import Any

import aiosqlite
import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.base import writes_sort_key
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

import checkpoints.fold
from ania.fakes.openai_server import Calls, Reply
from checkpoints.factory import CHECKPOINT_FILE, REDUCERS, thread_config
from checkpoints.fold import fold_messages
from checkpoints.saver import AniaSqliteSaver
from checkpoints.serde import MessageSerializer
from graphs.agent import build_agent_graph
from nodes.compact import SUMMARIZE_PROMPT
from tests.conftest import STOCK, make_settings

SESSION = "f:u1"
TEXT = "lorem ipsum dolor sit amet " * 11  # about 300 characters


# --- the fold ----------------------------------------------------------------------------------------------

def _random_writes(rng: random.Random, n: int) -> tuple[list[Any], list[list[Any]]]:
    live: list[str] = []
    seq = 0

    def new() -> Any:
        nonlocal seq
        seq += 1
        live.append(f"m{seq}")
        return rng.choice([HumanMessage, AIMessage])(f"text {seq}", id=f"m{seq}")

    state = [new() for _ in range(rng.randint(0, 5))]
    writes = []
    for _ in range(n):
        batch: list[Any] = []
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.5 or not live:
                batch.append(new())
            elif roll < 0.7:
                mid = rng.choice(live)
                batch.append(AIMessage(f"replaced {mid} {rng.random()}", id=mid))
            elif roll < 0.85:
                mid = rng.choice(live)
                batch.append(RemoveMessage(id=mid))
                live.remove(mid)
                if rng.random() < 0.3:  # removed, then written again in the same or a later write
                    batch.append(HumanMessage(f"back {mid}", id=mid))
                    live.append(mid)
            elif roll < 0.9:
                keep = rng.sample(live, k=min(len(live), 2))
                batch += [RemoveMessage(id=REMOVE_ALL_MESSAGES), *(HumanMessage(f"kept {k}", id=k) for k in keep)]
                live[:] = keep
            else:
                batch.append(new())
        writes.append(batch)
    return state, writes


def _sequential(state: list[Any], writes: list[list[Any]]) -> list[Any]:
    value: Any = state
    for w in writes:
        value = add_messages(value, w)
    return value


def _dump(messages: list[Any]) -> list[tuple[str, str | None, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


def test_the_restated_remove_all_marker_is_langgraphs():
    assert checkpoints.fold.REMOVE_ALL_MESSAGES == REMOVE_ALL_MESSAGES


def test_fold_equals_add_messages_once_per_write():
    rng = random.Random(7)
    for _ in range(400):
        state, writes = _random_writes(rng, rng.randint(1, 12))
        try:
            expected: Any = _dump(_sequential(list(state), writes))
        except ValueError as e:
            expected = ("error", str(e)[:40])
        try:
            got: Any = _dump(fold_messages(list(state), writes))
        except ValueError as e:
            got = ("error", str(e)[:40])
        assert got == expected


def test_fold_is_batching_invariant_and_gives_ids():
    rng = random.Random(11)
    for _ in range(200):
        state, writes = _random_writes(rng, 8)
        k = rng.randint(0, len(writes))
        try:
            whole = _dump(fold_messages(list(state), writes))
        except ValueError:
            continue
        assert _dump(fold_messages(fold_messages(list(state), writes[:k]), writes[k:])) == whole
    folded = fold_messages([], [[HumanMessage("no id")], {"role": "assistant", "content": "a dict"}])
    assert [m.type for m in folded] == ["human", "ai"] and all(m.id for m in folded)


def test_fold_rejects_removing_an_unknown_message():
    with pytest.raises(ValueError, match="doesn't exist"):
        fold_messages([HumanMessage("a", id="a")], [[RemoveMessage(id="b")]])


# --- a long stored session ---------------------------------------------------------------------------------

def _model(body: dict[str, Any]) -> Any:
    """Summaries for compaction requests; otherwise 1 or 4 time calls per question, then an answer."""
    messages = body["messages"]
    if messages[0]["content"] == SUMMARIZE_PROMPT:
        return Reply("summary of the earlier conversation")
    last = messages[-1]
    if last["role"] == "user":
        n = 4 if "four" in str(last["content"]) else 1
        return Calls([("time", {"timezone": "UTC"})] * n)
    return Reply("answer " + TEXT)


def _ids(db_path: Any) -> list[str]:
    with sqlite3.connect(db_path) as db:
        return [r[0] for r in db.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id",
            [SESSION])]


def _naive(db_path: Any, serde: Any, checkpoint_id: str) -> list[Any]:
    """The history at a checkpoint from every write on its ancestor path, from the root, with add_messages."""
    with sqlite3.connect(db_path) as db:
        parent = dict(db.execute("SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
                                 "WHERE thread_id = ? AND checkpoint_ns = ''", [SESSION]).fetchall())
        path, cid = [], parent.get(checkpoint_id)
        while cid is not None:
            path.append(cid)
            cid = parent.get(cid)
        value: Any = []
        for cid in reversed(path):
            rows = db.execute("SELECT task_id, idx, task_path, type, value FROM writes WHERE thread_id = ? "
                              "AND checkpoint_ns = '' AND checkpoint_id = ? AND channel = 'messages'",
                              [SESSION, cid]).fetchall()
            for _, _, _, typ, blob in sorted(rows, key=lambda r: writes_sort_key(r[2], r[0], r[1])):
                value = add_messages(value, serde.loads_typed((typ, blob)))
    return value


async def _histories(graph: Any, ids: list[str]) -> dict[str, list[Any]]:
    out = {}
    for cid in ids:
        snap = await graph.aget_state({"configurable": {"thread_id": SESSION, "checkpoint_id": cid}})
        out[cid] = _dump(snap.values.get("messages", []))
    return out


@pytest.mark.timeout(240)
async def test_every_checkpoint_equals_the_true_history(scripted_llm, make_chat, tmp_path):
    settings = make_settings(scripted_llm, agent={"context_tokens": 2500, "keep_recent_tokens": 600})
    chat = await make_chat(settings, data=tmp_path / "data")
    engine = chat.engine
    scripted_llm.script([_model] * 2000)
    for i in range(70):
        await chat.say(SESSION, "u1", f"question {i} {'four' if i % 3 == 0 else 'one'} {TEXT}")
    summaries = sum(r.messages[0]["content"] == SUMMARIZE_PROMPT for r in scripted_llm.requests)
    assert summaries >= 2, "the session should compact more than once"
    # A fork: an edit at an old checkpoint, then a turn on top of it.
    ids = _ids(tmp_path / "data" / CHECKPOINT_FILE)
    old = {"configurable": {"thread_id": SESSION, "checkpoint_ns": "", "checkpoint_id": ids[len(ids) // 3]}}
    before_fork = (await engine.graph.aget_state(old)).values["messages"]
    forked = await engine.graph.aupdate_state(old, {"messages": [HumanMessage("an edit", id="edit-1")]}, as_node="model")
    fork_state = (await engine.graph.aget_state(forked)).values["messages"]
    assert _dump(fork_state) == _dump([*before_fork, HumanMessage("an edit", id="edit-1")])
    await engine.close()

    db_path = tmp_path / "data" / CHECKPOINT_FILE
    ids = _ids(db_path)
    with sqlite3.connect(db_path) as db:
        copies = db.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND "
                            "json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot.messages') IS NULL",
                            [SESSION]).fetchone()[0]
    # LangGraph's own channel (engine.stock) copies every 100 updates: fewer copies, still more than one.
    assert copies >= (2 if STOCK else 4), "the session should cross several snapshot copies"

    async with aiosqlite.connect(str(db_path)) as conn:
        stock = AsyncSqliteSaver(conn)
        truth = await _histories(build_agent_graph(lambda: 10**6, checkpointer=stock), ids)
        cold_saver = AniaSqliteSaver(conn, reducers=REDUCERS, serde=MessageSerializer())  # as in production
        cold = await _histories(build_agent_graph(lambda: 10**6, checkpointer=cold_saver), list(reversed(ids)))
        warm_saver = AniaSqliteSaver(conn, reducers=REDUCERS)
        warm = await _histories(build_agent_graph(lambda: 10**6, checkpointer=warm_saver), ids)
        serde = stock.serde
    assert cold == truth and warm == truth
    fork_ids = {forked["configurable"]["checkpoint_id"]}
    linear = [cid for cid in ids if cid not in fork_ids]
    assert all(_dump(_naive(db_path, serde, cid)) == truth[cid] for cid in linear[::7])
    # Every model request saw exactly the stored history that preceded it (system prompt aside).
    last = truth[ids[-1]] if ids[-1] not in fork_ids else truth[linear[-1]]
    assert len(last) > 5


async def test_the_running_engine_reads_the_history_from_memory_and_right(scripted_llm, make_chat, tmp_path):
    """Turn after turn the live saver answers from memory (no file read) and equals LangGraph's own loader
    on the same file, across compactions, and what the model is sent is that history."""
    settings = make_settings(scripted_llm, agent={"context_tokens": 2500, "keep_recent_tokens": 600})
    chat = await make_chat(settings, data=tmp_path / "data")
    saver = chat.engine.graph.checkpointer
    assert type(saver) is (AsyncSqliteSaver if STOCK else AniaSqliteSaver)
    scripted_llm.script([_model] * 400)
    async with aiosqlite.connect(str(tmp_path / "data" / CHECKPOINT_FILE)) as conn:
        stock = build_agent_graph(lambda: 10**6, checkpointer=AsyncSqliteSaver(conn))
        for i in range(24):
            await chat.say(SESSION, "u1", f"q{i} {'four' if i % 2 else 'one'} {TEXT}")
            live = (await chat.engine.graph.aget_state(thread_config(SESSION))).values["messages"]
            truth = (await stock.aget_state(thread_config(SESSION))).values["messages"]
            assert _dump(live) == _dump(truth)
            request = scripted_llm.requests[-1].messages[1:]
            assert [m.content for m in live[:-1]] == [m["content"] or "" for m in request]
            assert isinstance(live[-1], AIMessage) and isinstance(live[-2], ToolMessage)
    assert sum(r.messages[0]["content"] == SUMMARIZE_PROMPT for r in scripted_llm.requests) >= 1
    if not STOCK:  # the fast saver's memory (the stock one has none)
        assert saver.loads["memory"] > 2 * saver.loads["file"], saver.loads


def test_the_history_cache_is_bounded():
    from checkpoints.memo import HistoryCache, ThreadMemo

    cache = HistoryCache(max_items=100)
    for i in range(50):
        cache.put((f"t{i}", ""), ThreadMemo(f"c{i}", {"messages": [HumanMessage("x")] * 30}))
    assert cache.size <= 100 and len(cache) == 3
    assert cache.get(("t49", "")) is not None and cache.get(("t0", "")) is None
    cache.put(("big", ""), ThreadMemo("c", {"messages": [HumanMessage("x")] * 101}))
    assert cache.get(("big", "")) is None
