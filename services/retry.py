"""One retry policy, through `tenacity`, for calls to services that fail now and then: an MCP tool call, an
embedding batch, a OneBot send or upload.

How many attempts and how long to wait between them is named here, once per use. What counts as worth
another attempt stays with the caller (a predicate on the exception), because only it knows whether a
failed request may already have run. The last failure is raised as it was. Tests give a policy a `sleep`
that returns at once (`dataclasses.replace(policy, sleep=...)`), so no test waits for a retry in real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` in all; before each further one a wait of `wait_sec`, doubling up to `max_wait_sec`."""

    attempts: int
    wait_sec: float = 0.0
    max_wait_sec: float = 0.0
    sleep: Sleep = asyncio.sleep

    async def call(self, fn: Callable[[], Awaitable[T]], retry_on: Callable[[BaseException], bool],
                   on_retry: Callable[[BaseException], None] | None = None) -> T:
        """`fn()`, again while `retry_on(error)` holds and attempts are left; `on_retry(error)` before each
        further attempt (to log it). Raises the last error unchanged."""

        async def attempt() -> T:  # tenacity awaits only what it sees is a coroutine function (not a lambda's)
            return await fn()

        def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            if on_retry is not None and error is not None:
                on_retry(error)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.wait_sec, max=max(self.wait_sec, self.max_wait_sec)),
            retry=retry_if_exception(retry_on),
            before_sleep=before_sleep,
            sleep=self.sleep,
            reraise=True,
        )
        return cast(T, await retrying(attempt))


#: A OneBot send or upload: once more at once (the second call waits for the link like the first).
ONEBOT_SEND = RetryPolicy(attempts=2)
#: An MCP tool call that never reached the server, or a read-only one whose connection dropped: once more at
#: once, on a fresh connection (the connection's own `retry_backoff_sec` guards against a server that is down).
MCP_CALL = RetryPolicy(attempts=2)
#: An embedding batch whose connection failed: once more after a short pause, then the embedder backs off.
EMBEDDING = RetryPolicy(attempts=2, wait_sec=0.5)
#: Opening the data directory's stores at start while it refuses writes (a full disk, a lock another process
#: holds past the busy timeout, a file made immutable): 1, 2, 4 and 8 s apart, then the start fails with one
#: line. A bot restarted by its supervisor into a brief refusal comes up instead of dying (found by the soak).
STORE_OPEN = RetryPolicy(attempts=5, wait_sec=1.0, max_wait_sec=8.0)
