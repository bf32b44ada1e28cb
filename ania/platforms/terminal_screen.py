"""What `ania chat` draws at a terminal: the `you> ` prompt, the `ania> ` label of replies, the status line
at the bottom (what the bot is doing now), and colour.

Why a prompt: without one, a person cannot tell whether the bot waits for them, and the status line (redrawn
in place every tick) overwrote what they were typing. So the prompt is shown exactly when the bot waits for
input (no turn running, or a turn waiting for an approval), and the status line is cleared before it and is
not drawn while it is shown.

Colour only at a terminal, and never when `NO_COLOR` is set to anything non-empty (https://no-color.org) or
`TERM` is `dumb`: a pipe or a file gets plain text.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from typing import TextIO

FRAMES = "|/-\\"
TICK_SEC = 0.1
#: After this long on one model call, the status line also names the endpoint it waits for.
SLOW_SEC = 5.0
PROMPT = "you> "
LABEL = "ania> "
CLEAR = "\r\x1b[K"
#: SGR codes: the prompt bold green, the reply label bold cyan, the status line and notes dim.
PROMPT_SGR, LABEL_SGR, DIM_SGR = "1;32", "1;36", "2"


def colour_wanted(out: TextIO, env: Mapping[str, str] = os.environ) -> bool:
    return out.isatty() and not env.get("NO_COLOR") and env.get("TERM", "") != "dumb"


class Style:
    """Wraps text in an SGR colour when `on`; leaves it alone otherwise."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, sgr: str, text: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.on and text else text


class StatusLine:
    """The one line at the bottom of a TTY that says what the bot is doing; redrawn in place."""

    def __init__(self, out: TextIO, endpoint: str, style: Style) -> None:
        self.out = out
        self.endpoint = endpoint
        self.style = style
        self.step = "thinking"
        self.step_since = time.monotonic()
        self._frame = 0
        self._started = 0.0
        self._shown = False
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        if self._task is None:
            self._started = self.step_since = time.monotonic()
            self.step = "thinking"
            self._task = asyncio.create_task(self._spin())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.clear()

    def set(self, step: str) -> None:
        if step != self.step:
            self.step, self.step_since = step, time.monotonic()
            self.draw()

    def clear(self) -> None:
        if self._shown:
            self.out.write(CLEAR)
            self.out.flush()
            self._shown = False

    def draw(self) -> None:
        if self._task is None:
            return
        now = time.monotonic()
        step = self.step
        if step == "thinking" and now - self.step_since > SLOW_SEC:
            step += f", waiting for {self.endpoint}"
        text = f"{FRAMES[self._frame % len(FRAMES)]} {step} ({now - self._started:.0f} s)"
        self.out.write(CLEAR + self.style(DIM_SGR, text))
        self.out.flush()
        self._shown = True

    async def _spin(self) -> None:
        while True:
            self.draw()
            await asyncio.sleep(TICK_SEC)
            self._frame += 1


class Screen:
    """The terminal's output: replies, notes, the status line (stdout a TTY) and the prompt (stdin a TTY too)."""

    def __init__(self, out: TextIO, endpoint: str, *, tty_in: bool, env: Mapping[str, str] = os.environ) -> None:
        self.out = out
        self.tty_in = tty_in
        self.style = Style(colour_wanted(out, env))
        self.status = StatusLine(out, endpoint, self.style) if out.isatty() else None
        self.prompts = tty_in and self.status is not None
        self._prompted = False

    def line(self, text: str, *, reply: bool = False) -> None:
        """A line of output; at a prompt it goes above it and the prompt comes back."""
        prompted = self.drop_prompt()
        if self.status is not None:
            self.status.clear()
        label = self.style(LABEL_SGR, LABEL) if reply and self.tty_in else ""
        self.out.write(label + text + "\n")
        if prompted:
            self.prompt()
        self.out.flush()

    def note(self, text: str) -> None:
        """A step worth a line at a terminal (a finished tool call); nothing in a pipe."""
        if self.status is not None:
            self.line(self.style(DIM_SGR, text))

    def prompt(self) -> None:
        """Show `you> ` once, on a clean line (the status line is stopped first by the caller)."""
        if self.prompts and not self._prompted:
            if self.status is not None:
                self.status.clear()
            self.out.write(self.style(PROMPT_SGR, PROMPT))
            self.out.flush()
            self._prompted = True

    def typed(self) -> None:
        """The person pressed Enter: the terminal moved to a new line after the prompt."""
        self._prompted = False

    def drop_prompt(self) -> bool:
        """Erase a shown prompt (what was typed after it stays in the terminal's line buffer)."""
        if not self._prompted:
            return False
        self.out.write(CLEAR)
        self._prompted = False
        return True
