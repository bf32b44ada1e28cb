"""One message waiting in its chat's queue (F1), from its arrival to the turn that answers it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ania.engine import TurnResult
from services.context import CallbackBridge
from services.usage import Batch


@dataclass(eq=False)
class Waiting:
    session_key: str
    user_id: str
    #: What the model reads of it (cut at bot.max_input_runes).
    body: str
    #: The message's own bridge (it knows what to quote); a batch answers through its last message's.
    bridge: CallbackBridge
    trigger: str
    #: The platform's id of the message ("" when it has none: the terminal).
    message_id: str
    #: time.time() at arrival (the model reads it), and the flow clock's reading (the settle window).
    received: float
    arrived: float
    inbox_id: int
    #: Resolved with the result of the turn that answers it; cancelled when it is stopped.
    future: asyncio.Future[TurnResult]

    @property
    def shown_id(self) -> str:
        return self.message_id or f"#{self.inbox_id}"

    def resolve(self, turn: asyncio.Task[TurnResult]) -> None:
        """Take the turn's outcome (once)."""
        if self.future.done():
            return
        if turn.cancelled():
            self.future.cancel()
        elif (error := turn.exception()) is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(turn.result())


def batch_of(messages: list[Waiting]) -> Batch:
    """What the query log records of the messages one row accounts for."""
    return Batch(tuple(m.shown_id for m in messages), tuple(m.user_id for m in messages),
                 tuple(m.inbox_id for m in messages if m.inbox_id))
