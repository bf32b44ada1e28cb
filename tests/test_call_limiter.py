"""The process-wide limit on model calls in flight (services/llm/limiter.py): round robin by chat, and a
slot is never lost to a cancelled waiter or a failed call; /stop through the engine leaves no slot held."""

from __future__ import annotations

import asyncio

import pytest

from ania.fakes.openai_server import Calls, Reply
from services.llm import CallLimiter
from tests.conftest import make_settings
from tests.subagent_helpers import Router, wait_for


async def _hold(limiter: CallLimiter, chat: str, order: list[str], gate: asyncio.Event) -> None:
    async with limiter.slot(chat):
        order.append(chat)
        await gate.wait()


async def test_waiting_chats_are_served_round_robin_not_in_arrival_order():
    limiter = CallLimiter(1)
    order: list[str] = []
    gate = asyncio.Event()
    first = asyncio.create_task(_hold(limiter, "g:busy", order, gate))
    await wait_for(lambda: order == ["g:busy"])
    flood = [asyncio.create_task(_hold(limiter, "g:busy", order, gate)) for _ in range(4)]
    await wait_for(lambda: limiter.waiting("g:busy") == 4)
    late = [asyncio.create_task(_hold(limiter, chat, order, gate)) for chat in ("g:a", "g:b")]
    await wait_for(lambda: limiter.waiting() == 6)
    gate.set()
    await asyncio.gather(first, *flood, *late)
    assert order == ["g:busy", "g:busy", "g:a", "g:b", "g:busy", "g:busy", "g:busy"]
    assert limiter.in_flight == 0 and limiter.peak == 1


async def test_a_cancelled_waiter_and_a_failed_call_give_their_slot_back():
    limiter = CallLimiter(1)
    order: list[str] = []
    gate = asyncio.Event()
    holder = asyncio.create_task(_hold(limiter, "g:1", order, gate))
    await wait_for(lambda: limiter.in_flight == 1)
    waiter = asyncio.create_task(_hold(limiter, "g:2", order, gate))
    await wait_for(lambda: limiter.waiting("g:2") == 1)
    waiter.cancel()  # /stop while it waits: it leaves the queue
    await asyncio.gather(waiter, return_exceptions=True)
    assert limiter.waiting() == 0
    # Handed the slot and cancelled before it ran: the slot goes on to the next waiter.
    handed = asyncio.create_task(_hold(limiter, "g:3", order, gate))
    after = asyncio.create_task(_hold(limiter, "g:4", order, gate))
    await wait_for(lambda: limiter.waiting() == 2)
    gate.set()
    await holder
    handed.cancel()
    await asyncio.gather(handed, after, return_exceptions=True)
    assert "g:4" in order and limiter.in_flight == 0

    with pytest.raises(RuntimeError):
        async with limiter.slot("g:5"):
            raise RuntimeError("the endpoint failed")
    assert limiter.in_flight == 0 and limiter.waiting() == 0


async def test_stop_during_a_flood_leaves_no_slot_held_and_the_chat_is_served_again(scripted_llm, make_chat):
    settings = make_settings(scripted_llm, llm={"max_concurrent_calls": 1},
                             subagent={"max_calls_per_round": 6, "max_calls_per_message": 6})
    chat = await make_chat(settings)
    limiter = chat.engine.services.limiter
    scripted_llm.respond_with(Router()
        .on("flood please", Calls([("subagent_run", {"task": f"SUB-{i}"}) for i in range(6)]), Reply("never"))
        .on("SUB-", Calls([("time", {})]), Reply("slow answer", delay=5))
        .on("after the stop", Reply("served again")))
    task = await chat.entry.submit("g:club", "admin", "flood please")

    def answered() -> list[int]:
        return [r.usage["total_tokens"] for r in scripted_llm.requests if r.usage]

    # Every subagent made its first call; one second call is out (it holds the one slot), five wait for it.
    await wait_for(lambda: len(scripted_llm.requests) == 8 and limiter.waiting("g:club") == 5)
    assert len(answered()) == 7
    await chat.say("g:club", "admin", "/stop")
    await asyncio.gather(task, return_exceptions=True)
    assert limiter.in_flight == 0 and limiter.waiting() == 0  # the waiters left, the one in flight released
    # What the cut message spent counts once, its subagents' answered calls included; nothing stays in flight.
    quota = chat.engine.services.quota
    assert quota.used("g:club").session == sum(answered()) and quota.in_flight() == 0
    assert await chat.say("g:club", "admin", "after the stop") == ["served again"]

