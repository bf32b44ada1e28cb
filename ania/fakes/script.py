"""What the scripted model is told to do: the step types, and scripts read from a JSON file.

Split from `openai_server.py` so the script vocabulary (`Reply`, `Calls`, `Fail`, `Stall`, `Dims`) and the
file format `ania fake-llm --script FILE` / `ania demo --script FILE` read can be read apart from the HTTP
server that plays them. `openai_server` re-exports every name here.

A script file is a list of steps, each `{"reply": "text"}`, `{"calls": [{"name": "time", "args": {...}}],
"text": ""}`, `{"fail": 500}` or `{"stall": seconds}`, with an optional `"delay"` and a `"note"` that is
ignored. In a reply, `{user}` is the last user message and `{tool_result}` the last tool result, so a script
can show what a tool returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ania.fakes.faults import Raw
from core.errors import ConfigError


@dataclass
class Reply:
    """A plain assistant answer."""

    text: str
    delay: float = 0.0


@dataclass
class Calls:
    """An assistant turn that calls tools: `(name, args)`; args as a dict, or a raw string (bad JSON)."""

    calls: list[tuple[str, dict[str, Any] | str]]
    text: str = ""
    delay: float = 0.0


@dataclass
class Fail:
    """An HTTP error from the endpoint."""

    status: int = 500
    message: str = "scripted failure"


@dataclass
class Stall:
    """Answer only after `seconds` (to trip the client's timeout)."""

    seconds: float
    then: Step | None = None


Step = Reply | Calls | Fail | Stall | Raw | Callable[[dict[str, Any]], "Step"]


@dataclass
class Dims:
    """An embeddings answer with vectors of `n` numbers (a wrong size, for tests)."""

    n: int


EmbedStep = Fail | Stall | Dims


def last_content(body: dict[str, Any], role: str) -> str | None:
    """The text of the last message with `role` in a chat request body (None: there is none)."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == role:
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return None


def echo(body: dict[str, Any]) -> str:
    """The answer when nothing is scripted: the last user message, echoed."""
    user = last_content(body, "user")
    return "echo: (nothing)" if user is None else f"echo: {user}"


# --- scripts from a file -------------------------------------------------------------------------
STEP_KEYS = ("reply", "calls", "fail", "stall")


def load_script(path: str | Path) -> list[Step]:
    """The steps of a JSON script file; a ConfigError names the file and the step that is wrong."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read script {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"script {path} is not valid JSON: {e}") from None
    if not isinstance(raw, list):
        raise ConfigError(f"script {path}: expected a JSON list of steps")
    steps = []
    for number, item in enumerate(raw, 1):
        try:
            steps.append(_step(item))
        except (TypeError, ValueError, KeyError) as e:
            raise ConfigError(f"script {path}, step {number}: {e}") from None
    return steps


def _step(item: Any) -> Step:
    if not isinstance(item, dict):
        raise TypeError(f"a step is an object with one of {', '.join(STEP_KEYS)}")
    kinds = [k for k in STEP_KEYS if k in item]
    unknown = sorted(set(item) - {*STEP_KEYS, "text", "delay", "note", "message"})
    if len(kinds) != 1 or unknown:
        raise ValueError(f"give exactly one of {', '.join(STEP_KEYS)}" + (f" (unknown: {', '.join(unknown)})"
                                                                            if unknown else ""))
    delay = float(item.get("delay", 0))
    if "reply" in item:
        text = str(item["reply"])
        return (lambda body: Reply(_fill(text, body), delay)) if "{" in text else Reply(text, delay)
    if "calls" in item:
        calls = item["calls"]
        if not isinstance(calls, list) or not calls:
            raise TypeError('"calls" is a non-empty list of {"name": ..., "args": {...}}')
        pairs: list[tuple[str, dict[str, Any] | str]] = []
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise TypeError('each call is {"name": "tool", "args": {...}}')
            args = call.get("args", {})
            if not isinstance(args, (dict, str)):
                raise TypeError(f'the args of "{call["name"]}" must be an object (or a raw JSON string)')
            pairs.append((call["name"], args))
        return Calls(pairs, text=str(item.get("text", "")), delay=delay)
    if "fail" in item:
        return Fail(int(item["fail"]), str(item.get("message", "scripted failure")))
    return Stall(float(item["stall"]))


def _fill(text: str, body: dict[str, Any]) -> str:
    return (text.replace("{user}", last_content(body, "user") or "")
            .replace("{tool_result}", last_content(body, "tool") or ""))
