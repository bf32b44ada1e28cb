"""How the scripted model answers in a soak run: by the words of the message it reads (see `traffic`).

The reply names every marker of the last user message, so the harness finds each message's answer among
what the OneBot fake received. `do=<tool>` plays that tool's rounds, then answers; `fault=<kind>` fails the
first request of the message (the first two with `x2`); `slow=<s>` answers after that many seconds. Requests
without markers (a subagent, a team member, a scheduled task's run, a summary) get a short plain answer.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ania.fakes.faults import malformed, rate_limited
from ania.fakes.script import Calls, Fail, Reply, Stall, Step, last_content

MARKER = re.compile(r"#m\d+")
DO = re.compile(r"\bdo=(\w+)")
FAULT = re.compile(r"\bfault=(\w+)")
SLOW = re.compile(r"\bslow=(\d+(?:\.\d+)?)")
EVERY = re.compile(r"\bevery=(\d+s)")

QUOTE = re.compile(r"\[replying to .*?\]", re.DOTALL)


def markers_of(text: str) -> list[str]:
    """The markers of a message, those of a message it quotes left out."""
    return MARKER.findall(QUOTE.sub("", text))


TEAM = {"name": "soakteam", "purpose": "answer together",
        "members": [{"name": "first", "role": "Answer ok."}, {"name": "second", "role": "Answer ok too."}]}
#: The tool rounds each `do=` word plays, one list of (tool, args) per round.
ROUNDS: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {
    "bash": [[("bash", {"command": "echo soak"})]],
    "bash_ask": [[("bash", {"command": "ls /"})]],
    "kb": [[("kb_add", {"title": "soak note", "content": "The soak harness wrote this note."})],
           [("kb_search", {"query": "soak note"})]],
    "memory": [[("memory_save", {"content": "The soak user likes tea."})], [("memory_search", {"query": "tea"})]],
    "mcp": [[("mcp__demo__echo", {"text": "soak"})]],
    "mcp_crash": [[("mcp__demo__crash", {})]],
    "mcp_hang": [[("mcp__demo__slow", {"seconds": 600})]],
    "subagent": [[("subagent_run", {"task": "soak subagent: answer ok", "timeout_sec": 40})]],
    "team": [[("team_save", TEAM)], [("team_run", {"name": "soakteam", "task": "soak team: answer ok"})]],
    "time": [[("time", {})]],
}


@dataclass
class SoakModel:
    """The responder of the model process; `log` gets one dict per request (what the harness reads)."""

    hang_sec: float
    seen: dict[str, int] = field(default_factory=dict)  # marker → first-round requests so far
    log: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Step:
        user = last_content(body, "user") or ""
        markers = markers_of(user)
        step = self._step(body, user, markers)
        delay = step.delay if isinstance(step, (Reply, Calls)) else 0.0
        with self.lock:
            self.log.append({"markers": markers, "step": type(step).__name__, "delay": delay,
                             "fault": "" if isinstance(step, (Reply, Calls)) else type(step).__name__})
        return step

    def _step(self, body: dict[str, Any], user: str, markers: list[str]) -> Step:
        if not markers or not body.get("tools"):
            return Reply("ok", delay=0.05)
        rounds_done = _rounds_since_user(body)
        key = markers[0]
        if rounds_done == 0:
            with self.lock:
                attempt = self.seen[key] = self.seen.get(key, 0) + 1
            fault = FAULT.search(user)
            if fault and attempt <= (2 if fault.group(1).endswith("x2") else 1):
                return self._fault(fault.group(1).removesuffix("x2"))
        delay = 0.05 + (int(key[2:]) % 7) * 0.04  # the model's own time, the same for a seed
        slow = SLOW.search(user)
        if slow and rounds_done == 0:
            delay = float(slow.group(1))
        do = DO.search(user)
        plays = _rounds_of(do.group(1), user) if do else []
        if rounds_done < len(plays):
            return Calls(list(plays[rounds_done]), delay=delay)
        return Reply(f"ok {' '.join(markers)}", delay=delay)

    def _fault(self, kind: str) -> Step:
        if kind == "500":
            return Fail(500, "soak: scripted server error")
        if kind == "429":
            return rate_limited(1)
        if kind == "hang":
            return Stall(self.hang_sec)
        if kind == "badjson":
            return malformed()
        return Reply("")  # "empty"


def _rounds_of(word: str, user: str) -> list[list[tuple[str, dict[str, Any]]]]:
    if word == "clock":
        every = EVERY.search(user)
        schedule = f"@every {every.group(1) if every else '5s'}"
        return [[("clock_create", {"schedule": schedule, "prompt": "soak tick: answer tick",
                                   "name": f"soak tick {schedule}"})]]
    return ROUNDS.get(word, [])


def _rounds_since_user(body: dict[str, Any]) -> int:
    """Assistant turns with tool calls after the last user message: the tool rounds already played."""
    n = 0
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            break
        if m.get("role") == "assistant" and m.get("tool_calls"):
            n += 1
    return n
