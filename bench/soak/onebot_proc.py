"""The OneBot fake as a process of its own, playing the plan's messages and link faults:
`python -m bench.soak.onebot_proc PLAN_FILE PORT START_EPOCH RECORD_FILE`.

It serves the forward WebSocket on PORT (the bot dials it, and dials again after a drop or a restart), sends
each message of the plan at its time once the bot is connected, answers approval prompts the plan says to
answer, drops the link, goes silent (no heartbeats: the bot must notice and redial) and fails one send when
told. On SIGTERM it writes its own record (what it sent, when, and everything the bot sent back) and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bench.soak.traffic import ADMIN, BOT, Fault, Message, Plan
from tests.onebot_fake import FakeOneBot, at, image, reply, text

ALLOW = re.compile(r'"allow ([0-9a-f]{4})"')
CONNECT_WAIT_SEC = 180.0  # a restart of the bot takes a few seconds; traffic waits for it


class Player:
    def __init__(self, plan: Plan, start: float) -> None:
        self.plan = plan
        self.start = start
        self.fake = FakeOneBot(self_id=BOT, heartbeat_ms=1000)
        self.offset = time.time() - time.monotonic()  # sent_at is monotonic; the record is in epoch seconds
        self.sent_msgs: list[dict[str, Any]] = []
        self.link: dict[str, int] = {"drop": 0, "silence": 0, "send_fail": 0}
        self.approvals: dict[str, int] = {"answered": 0, "prompt_missing": 0}
        self._tasks: set[asyncio.Task[None]] = set()
        self.closes: list[float] = []  # when a connection to the bot ended (a kill -9 shows here)

    async def watch(self) -> None:
        """Note when each connection ends."""
        current = None
        while True:
            if self.fake.ws is not current:
                if current is not None:
                    self.closes.append(time.time())
                current = self.fake.ws
            await asyncio.sleep(0.02)

    async def play(self) -> None:
        events: list[Message | Fault] = [*self.plan.messages,
                                         *(f for f in self.plan.faults if f.kind in self.link)]
        events.sort(key=lambda e: e.at)
        for event in events:
            await asyncio.sleep(max(0.0, self.start + event.at - time.time()))
            if isinstance(event, Fault):
                await self.fault(event.kind)
            else:
                await self.send(event)

    async def fault(self, kind: str) -> None:
        self.link[kind] += 1
        if kind == "drop":
            await self.fake.drop()
        elif kind == "silence":
            self.fake.silence()
        else:
            self.fake.fail["send_group_msg"] = self.fake.fail["send_private_msg"] = 1

    async def send(self, m: Message) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.fake.connected.wait(), CONNECT_WAIT_SEC)
        before = len(self.fake.sent)
        record = {"marker": m.marker, "chat": m.chat, "kind": m.kind, "user": m.user, "at": time.time(),
                  "delivered": self.fake.ws is not None}
        self.sent_msgs.append(record)
        if not record["delivered"]:
            return
        group = m.chat.startswith("g:")
        peer = int(m.chat[2:])
        if not group:
            record["mid"] = str(await self.fake.private_message(peer, m.text))
        else:
            record["mid"] = str(await self.fake.group_message(peer, m.user, self._segments(m, peer)))
        if m.kind == "approve":
            self._spawn(self.answer_approval(m.chat, peer, before))

    def _segments(self, m: Message, group: int) -> list[dict[str, Any]] | str:
        if m.kind in ("plain", "command", "stop"):
            return m.text
        if m.kind == "reply":
            ours = [mid for mid, msg in self.fake.messages.items()
                    if msg["user_id"] == BOT and msg.get("group_id") == group]
            if ours:
                return [reply(ours[-1]), text(m.text)]
        segs = [at(BOT), text(" " + m.text)]
        return [*segs, image("http://127.0.0.1:9/soak.png", "soak.png")] if m.kind == "image" else segs

    async def answer_approval(self, chat: str, group: int, after: int) -> None:
        """An admin allows the request once its prompt reaches the group."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for s in self.fake.sent[after:]:
                if f"g:{s.get('group_id')}" != chat:
                    continue
                found = ALLOW.search("".join(seg["data"].get("text", "") for seg in s["message"]
                                             if seg["type"] == "text"))
                if found:
                    await asyncio.sleep(0.5)
                    if self.fake.ws is not None:
                        await self.fake.group_message(group, ADMIN, f"allow {found.group(1)}")
                        self.approvals["answered"] += 1
                    return
            await asyncio.sleep(0.1)
        self.approvals["prompt_missing"] += 1

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def record(self) -> dict[str, Any]:
        out = []
        for s, at_mono in zip(self.fake.sent, self.fake.sent_at, strict=False):
            chat = f"g:{s['group_id']}" if s["action"] == "send_group_msg" else f"f:{s['user_id']}"
            body = "".join(seg["data"].get("text", "") for seg in s["message"] if seg["type"] == "text")
            quote = next((str(seg["data"].get("id", "")) for seg in s["message"] if seg["type"] == "reply"), "")
            out.append({"chat": chat, "text": body, "at": at_mono + self.offset, "quote": quote})
        calls: dict[str, int] = {}
        for action, _ in self.fake.calls:
            calls[action] = calls.get(action, 0) + 1
        return {"messages": self.sent_msgs, "replies": out, "connections": self.fake.connections,
                "link": self.link, "approvals": self.approvals, "calls": calls, "closes": self.closes}


async def main(plan_file: str, port: str, start: str, record_file: str) -> None:
    plan = Plan.from_json(json.loads(Path(plan_file).read_text()))
    player = Player(plan, float(start))
    await player.fake.serve(int(port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    playing = asyncio.create_task(player.play())
    watching = asyncio.create_task(player.watch())
    await stop.wait()
    for task in (playing, watching):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    Path(record_file).write_text(json.dumps(player.record(), ensure_ascii=False))
    await player.fake.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
