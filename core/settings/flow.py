"""The `[flow]` section: how a chat's messages become turns (F1 batching, F2 flood limits).

Messages that arrive while a chat's turn runs are answered together by its next turn (bounded by
`max_batch_messages` and `max_batch_runes`); each member of a chat has a token bucket (admins are
exempt), and each chat's queue has a bound. ania/flow/ applies them; services/flow/ holds the parts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FlowSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    settle_sec: float = Field(
        0.0, ge=0, le=30,
        description="After a chat's first waiting message, wait this long for more before the turn starts "
                    "(0: start at once; the terminal always uses 0)")
    max_batch_messages: int = Field(20, ge=1, le=500, description="Most messages one turn answers together")
    max_batch_runes: int = Field(
        16_000, ge=100, le=1_000_000,
        description="Most runes of the messages one turn answers together (the first message always fits)")
    max_queue: int = Field(
        50, ge=1, le=10_000,
        description="Most messages waiting in one chat; more are not answered (status queue_full, one notice)")
    member_rate_per_min: float = Field(
        20.0, ge=0, le=100_000,
        description="Messages per minute one member's token bucket refills in each chat (0: no rate limit)")
    member_burst: int = Field(
        5, ge=1, le=10_000, description="Size of each member's token bucket: messages taken at once before the rate")
    notice_window_sec: float = Field(
        60.0, ge=1, le=86_400,
        description="A member over the rate limit or facing a full queue is told once per this many seconds")
