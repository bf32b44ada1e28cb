"""The seeded plan of a soak run: every message and fault with its time, written before the run starts, so a
seed names the same run again.

Each message a chat receives carries a marker `#m<N>` the scripted model copies into its reply; what a
message asks the model to do (`do=...`) and how the model fails it (`fault=...`) are words in the message,
so the model's process needs no channel to the harness.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

BOT = 10000
ADMIN = 900
#: What a message asks of the model: the tool rounds of `model.ROUNDS` (empty: a plain answer).
TOOLS = ("bash", "kb", "memory", "mcp", "mcp_crash", "mcp_hang", "subagent", "team", "time")
#: Model faults (`model.fault_step`): "x2" fails the retry too, so the turn ends in an error notice.
MODEL_FAULTS = ("500", "429", "hang", "badjson", "empty", "500x2", "hangx2")
#: Faults the OneBot fake plays (`onebot_proc`), and those the harness does (`faults`).
LINK_FAULTS = ("drop", "silence", "send_fail")
PROCESS_FAULTS = ("kill9", "sqlite_lock", "writes_refused")


@dataclass
class Message:
    at: float  # seconds after the start
    chat: str  # g:<group> or f:<user>
    user: int
    kind: str  # mention, reply, plain, private, long, image, command, stop, approve, approve_timeout, clock
    text: str
    marker: str = ""  # "" for messages with no outcome of their own (/stop, plain group chatter)


@dataclass
class Fault:
    at: float
    kind: str


@dataclass
class Plan:
    seed: int
    seconds: float
    messages: list[Message] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Plan:
        return cls(raw["seed"], raw["seconds"], [Message(**m) for m in raw["messages"]],
                   [Fault(**f) for f in raw["faults"]])


def make_plan(seed: int, seconds: float, groups: int, privates: int, rate: float = 1.0) -> Plan:
    """About `rate` messages a second over `groups` group chats and `privates` private chats, bursts
    included, the tool rounds and model faults mixed in, and the faults spread over the run."""
    rng = random.Random(seed)
    plan = Plan(seed, seconds)
    chats = [f"g:{500 + i}" for i in range(groups)] + [f"f:{300 + i}" for i in range(privates)]
    counter = iter(range(1, 1_000_000))

    def add(at: float, chat: str, kind: str, words: str = "", *, user: int | None = None) -> None:
        n = next(counter)
        who = user if user is not None else (int(chat[2:]) if chat.startswith("f:") else rng.randint(40, 60))
        marker = "" if kind in ("stop", "plain") else f"#m{n}"
        typed = " ".join(x for x in ("/soak" if kind == "command" else "", marker, words) if x)
        plan.messages.append(Message(round(at, 3), chat, who, kind, typed, marker))

    # Scheduled tasks: made early, each fires every few seconds for the rest of the run.
    for i, chat in enumerate(chats[:3]):
        add(2.0 + i, chat, "clock", f"do=clock every={4 + i}s")
    t = 6.0
    end = seconds - 25.0  # the last messages leave time to be answered before the checks
    while t < end:
        t += rng.expovariate(rate)
        _one(add, rng, t, rng.choice(chats))
    plan.messages.sort(key=lambda m: m.at)
    _spread_faults(plan, rng, end)
    return plan


def _one(add: Any, rng: random.Random, t: float, chat: str) -> None:
    """One draw of traffic at `t` in `chat`: a burst, a long message, an image, a custom command, a slow answer
    and its /stop, an approval, group chatter, a tool round, a model fault, or a plain message."""
    roll = rng.random()
    group = chat.startswith("g:")
    addressed = "mention" if group else "private"
    if roll < 0.06:  # a burst: one user, five messages within a second
        user = rng.randint(40, 60) if group else int(chat[2:])
        for k in range(5):
            add(t + k * 0.15, chat, addressed, f"burst {k}", user=user)
    elif roll < 0.12:
        add(t, chat, "long", "long " + "lorem ipsum dolor " * rng.randint(100, 400))
    elif roll < 0.17:
        add(t, chat, "image", "what is in this picture")
    elif roll < 0.21:
        add(t, chat, "command", "a custom command")
    elif roll < 0.25:  # a slow answer, and its sender says /stop a moment later
        user = rng.randint(40, 60) if group else int(chat[2:])
        add(t, chat, addressed, "slow=6", user=user)
        add(t + rng.uniform(0.5, 3.0), chat, "stop", "/stop", user=user)
    elif roll < 0.30 and group:
        add(t, chat, "approve" if rng.random() < 0.6 else "approve_timeout", "do=bash_ask")
    elif roll < 0.36 and group:
        add(t, chat, "plain", "just chatting, not for the bot")
    elif roll < 0.56:
        add(t, chat, addressed, f"do={rng.choice(TOOLS)}")
    elif roll < 0.66:
        add(t, chat, addressed, f"fault={rng.choice(MODEL_FAULTS)}")
    else:
        add(t, chat, rng.choice(("mention", "reply")) if group else "private", "hello")


def _spread_faults(plan: Plan, rng: random.Random, end: float) -> None:
    """Each fault at least once; a kill -9 every four minutes or so, the others about once a minute."""
    minutes = max(1.0, plan.seconds / 60)
    counts = {"kill9": max(1, round(minutes / 4)), "sqlite_lock": max(1, round(minutes / 1.5)),
              "writes_refused": max(1, round(minutes / 2)), "drop": max(1, round(minutes / 1.5)),
              "silence": max(1, round(minutes / 2.5)), "send_fail": max(2, round(minutes))}
    for kind, n in counts.items():
        # kill -9 in the first 45 %: the last half of the run is one process, whose memory slope is measured
        last = plan.seconds * 0.45 if kind == "kill9" else end - 10.0
        for _ in range(n):
            plan.faults.append(Fault(round(rng.uniform(15.0, max(16.0, last)), 3), kind))
    plan.faults.sort(key=lambda f: f.at)
