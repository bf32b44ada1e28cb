"""Helpers of the subagent and team tests: a responder that answers by who asks, and tools that record."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, Field

from ania.fakes.openai_server import Reply, Step
from core.tool import Tool

BRIEF_START = "You are a subagent:"


def text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def first_user(body: dict[str, Any]) -> str:
    return next((text(m) for m in body.get("messages", []) if m.get("role") == "user"), "")


def is_subagent(body: dict[str, Any]) -> bool:
    return first_user(body).startswith(BRIEF_START)


def last_user_index(body: dict[str, Any]) -> int:
    messages = body.get("messages", [])
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)


class Router:
    """Answers each request by a marker in the message that started the run (a subagent's task with its
    role, or the user's latest message in the main session) and by how many answers that run already has."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, list[Step]]] = []

    def on(self, marker: str, *steps: Step) -> Router:
        self.routes.append((marker, list(steps)))
        return self

    def __call__(self, body: dict[str, Any]) -> Step:
        start = last_user_index(body)
        messages = body.get("messages", [])
        first = text(messages[start]) if messages else ""
        answered = sum(1 for m in messages[start:] if m.get("role") == "assistant")
        for marker, steps in self.routes:
            if marker in first:
                return steps[min(answered, len(steps) - 1)]
        return Reply(f"no route for {first[:60]!r}")


def requests_of(server: Any, marker: str) -> list[Any]:
    return [r for r in server.requests if marker in first_user(r.body)]


def tool_results(request: Any, last_turn: bool = True) -> list[str]:
    """The tool results a request carries: of its latest turn only, or of the whole history."""
    start = last_user_index(request.body) if last_turn else 0
    return [text(m) for m in request.messages[start:] if m["role"] == "tool"]


class LabelParams(BaseModel):
    label: str = Field(description="a label")


class Sleepy(Tool[LabelParams]):
    """Sleeps, recording when each call started and ended, and which were cancelled."""

    name = "sleepy"
    description = "Sleeps a little and records when it ran."
    params = LabelParams

    def __init__(self, seconds: float = 0.3) -> None:
        self.seconds = seconds
        self.spans: dict[str, tuple[float, float]] = {}
        self.started: list[str] = []
        self.cancelled: list[str] = []

    async def execute(self, args: LabelParams, ctx: Any) -> str:
        start = time.monotonic()
        self.started.append(args.label)
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled.append(args.label)
            raise
        self.spans[args.label] = (start, time.monotonic())
        return f"slept {args.label}"


async def wait_for(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)
