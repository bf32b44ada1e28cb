"""The one retry policy (services/retry.py): attempts, waits (recorded by an injected sleep, never waited
for), what is tried again, what is logged, and the last error raised unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.retry import EMBEDDING, MCP_CALL, ONEBOT_SEND, RetryPolicy


class Flaky:
    """Fails with the given errors in turn, then answers "ok"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def recording(waits: list[float]) -> RetryPolicy:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(attempts=4, wait_sec=0.5, max_wait_sec=1.5, sleep=sleep)


async def test_tries_again_with_doubling_capped_waits_until_it_answers():
    waits: list[float] = []
    fn = Flaky(OSError("a"), OSError("b"), OSError("c"))
    seen: list[str] = []
    assert await recording(waits).call(fn, lambda e: isinstance(e, OSError), lambda e: seen.append(str(e))) == "ok"
    assert fn.calls == 4 and waits == [0.5, 1.0, 1.5] and seen == ["a", "b", "c"]


async def test_the_last_error_is_raised_unchanged_when_attempts_run_out():
    waits: list[float] = []
    last = OSError("third")
    fn = Flaky(OSError("1"), OSError("2"), OSError("3"), last)
    with pytest.raises(OSError) as raised:
        await recording(waits).call(fn, lambda e: True)
    assert raised.value is last and fn.calls == 4 and len(waits) == 3


async def test_an_error_the_caller_does_not_retry_is_raised_at_once():
    waits: list[float] = []
    fn = Flaky(ValueError("no"))
    with pytest.raises(ValueError, match="no"):
        await recording(waits).call(fn, lambda e: isinstance(e, OSError))
    assert fn.calls == 1 and waits == []


async def test_the_named_policies():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    for policy, pause in ((ONEBOT_SEND, 0.0), (MCP_CALL, 0.0), (EMBEDDING, 0.5)):
        fn = Flaky(OSError("x"), OSError("y"))
        with pytest.raises(OSError, match="y"):
            await replace(policy, sleep=sleep).call(fn, lambda e: True)
        assert fn.calls == 2 and waits.pop() == pause and not waits


async def test_a_lambda_returning_a_coroutine_is_awaited():
    fn = Flaky(OSError("once"))
    assert await recording([]).call(lambda: fn(), lambda e: True) == "ok"  # noqa: PLW0108 - the point
    assert fn.calls == 2
