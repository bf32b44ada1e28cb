"""One model request as every step makes it (the turn's model step, compaction, the vision describer):
under the process-wide limiter (services/llm/limiter.py), refused before it is sent when the message's
quota is reached (the check runs once the slot is ours, so calls that waited see the spend of those that
went first), and its tokens added to the message's in-flight tally when it returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from langchain_core.messages import BaseMessage

from nodes.state import usage_of
from services.context import RunContext

T = TypeVar("T")


class QuotaReached(Exception):
    """The request was not sent: the daily quota is reached. `refusal` is the chat's quota reply."""

    def __init__(self, refusal: str) -> None:
        super().__init__(refusal)
        self.refusal = refusal


async def metered(ctx: RunContext, request: Callable[[], Awaitable[T]],
                  reply_of: Callable[[T], BaseMessage]) -> T:
    """`await request()` holding a slot for the chat; its reply's tokens (`reply_of` finds the message that
    carries them) counted against the message's quota. Raises QuotaReached instead of sending it."""
    services = ctx.services
    async with services.limiter.slot(ctx.session_key):  # held during the request only
        if (refusal := services.quota.call_refusal(ctx.limits)) is not None:
            raise QuotaReached(refusal)
        result = await request()
    services.quota.spent(ctx.limits, usage_of(reply_of(result)).get("total_tokens", 0))
    return result
