"""Per-session state stays bounded with thousands of sessions: it is released when idle and rebuilt on demand."""

from __future__ import annotations

import asyncio

from ania.fakes.openai_server import Reply
from core.registry import SharedExecutor
from services.lru import LRU
from services.mcp.loads import CACHED_SESSIONS
from services.sessions import MAX_SESSIONS, SessionRegistry
from tests.conftest import make_settings


async def test_five_thousand_sessions_leave_bounded_maps(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    services, entry = chat.engine.services, chat.entry
    for i in range(5000):
        key = f"g:{i}"
        services.sessions.state(key)  # what a turn touches first
        services.mcp.loads.handles(key)
        assert await entry.submit(key, f"u{i}", "/stop") is None  # approval check + command path
    assert len(services.sessions) == MAX_SESSIONS
    assert services.mcp.loads.cached() == CACHED_SESSIONS
    assert entry.held() == 0
    assert services.approvals.held() == 0


async def test_real_turns_in_many_sessions_leave_nothing_behind(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("ok")] * 60)
    tasks = [await chat.entry.submit(f"f:{i}", str(i), "hi") for i in range(60)]
    await asyncio.gather(*[t for t in tasks if t is not None])
    assert chat.entry.held() == 0
    assert all(chat.engine.services.sessions.state(f"f:{i}").clean for i in range(60))


def test_an_evicted_session_is_rebuilt_with_its_restored_tools():
    restored: list[str] = []
    registry = SessionRegistry(SharedExecutor(), max_sessions=2)
    registry.add_restorer(lambda key, ex: restored.append(key))
    first = registry.executor("g:a")
    assert registry.first_turn("g:a") and not registry.first_turn("g:a")
    registry.executor("g:b")
    registry.executor("g:c")  # g:a is the least recently used: released
    assert len(registry) == 2
    again = registry.executor("g:a")
    assert again is not first and again.owner == "g:a" and restored == ["g:a", "g:b", "g:c", "g:a"]
    assert registry.first_turn("g:a")  # a re-created session gets its SessionStart again


def test_lru_keeps_the_most_recently_used():
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3)
    assert "b" not in lru and lru.get("a") == 1 and lru.get("c") == 3
