"""One limit on the model calls in flight for the whole process, shared fairly between chats.

Every chat-model request (a turn's, a subagent's, a team member's, a clock run's, a compaction, the vision
describer) holds a slot of the `CallLimiter` while its request is out, and only then: a parent waiting for
its subagents holds none, so a chat can never deadlock on its own calls.

When slots are short, waiting calls are served round robin by chat (the top-level session key, which a
chat's subagents, team members and clock runs share), not first come first served: a chat whose one
message asked for forty subagents gets one slot in turn with every other waiting chat, so a second chat
is answered while the first one floods.

Uncontended, taking a slot is a counter decrement (no future, no lock, no task). A waiter that is
cancelled (/stop, a deadline) leaves the queue; one cancelled just after it was handed a slot passes it on.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from types import TracebackType


class CallLimiter:
    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self._free = self.limit
        #: Chats with waiting calls, in the order they are served next; each chat's calls in arrival order.
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        #: The most calls that were in flight at once (for tests and logs).
        self.peak = 0

    @property
    def in_flight(self) -> int:
        return self.limit - self._free

    def waiting(self, chat: str | None = None) -> int:
        """Calls waiting for a slot (of one chat, or of all)."""
        queues = self._waiting.values() if chat is None else [self._waiting.get(chat, deque())]
        return sum(1 for q in queues for f in q if not f.done())

    def slot(self, chat: str) -> _Slot:
        """`async with limiter.slot(chat):` holds one slot for the body (the model request), released however
        the body ends (a plain class, not a generator: about 1 µs uncontended)."""
        return _Slot(self, chat)

    async def _acquire(self, chat: str) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            if self.limit - self._free > self.peak:
                self.peak = self.limit - self._free
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(chat, deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed a slot as it was cancelled: pass it on
                self._release()
            else:
                self._forget(chat, future)
            raise

    def _release(self) -> None:
        """Hand the slot to the next waiting chat (which goes to the back of the round), else free it."""
        while self._waiting:
            chat, queue = next(iter(self._waiting.items()))
            future = queue.popleft()
            if queue:
                self._waiting.move_to_end(chat)
            else:
                del self._waiting[chat]
            if not future.done():
                future.set_result(None)
                return
        self._free += 1

    def _forget(self, chat: str, future: asyncio.Future[None]) -> None:
        queue = self._waiting.get(chat)
        if queue is None:
            return
        try:
            queue.remove(future)
        except ValueError:
            return
        if not queue:
            del self._waiting[chat]


class _Slot:
    __slots__ = ("_chat", "_limiter")

    def __init__(self, limiter: CallLimiter, chat: str) -> None:
        self._limiter = limiter
        self._chat = chat

    async def __aenter__(self) -> None:
        await self._limiter._acquire(self._chat)

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._limiter._release()
