"""Approvals and /stop across processes (services/cluster/signals.py, services/gates/approvals_shared.py)
against the same hand-off in one process.

Two sets of services stand for two processes on one Postgres (a throwaway server from Debian's package on
loopback, default durability); the peer is one process on SQLite, where the hand-off is a future. Each
round, in the same loop:
- answer: a question asked on A (`Approvals.ask`, a group chat, "time") is answered by `take_reply` on B;
  the time from the answer to A's wait returning. One process: A answers itself. "poll" closes A's
  signals first, so only A's 2 s poll brings the verdict (the lost-notification path);
- request: `Signals.request` from B answered by a handler on A (what /stop does when the chat runs
  elsewhere), against calling the handler in this process;
- take_reply: what the message entry pays for each incoming message when nothing is pending: an ordinary
  message, and a message that reads like an answer ("yes"), which on Postgres reads the table once.
Medians in milliseconds (microseconds for take_reply), and the ratio to the one-process peer.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import throwaway_postgres
from core.settings import Settings
from services.cluster import LocalSignals, Payload, PgSignals, Signals
from services.gates.admins import Admins
from services.gates.approval_types import ApprovalRequest
from services.gates.approvals import Approvals
from services.gates.approvals_shared import SharedQuestions
from services.store import AppStore, open_store

REQUEST: ApprovalRequest = {"type": "tool_approval", "kind": "human", "tool": "time", "args": {}, "call_id": "c1",
                            "reason": "bench", "session": "g:1", "requester": "u1", "prompt": "time?"}


def approvals(settings: Settings, shared: SharedQuestions | None) -> Approvals:
    async def notify(place: str, text: str) -> bool:
        return True

    return Approvals(settings, Admins(settings, ()), notify, timeout_sec=30, shared=shared)


async def answer_ms(asker: Approvals, answerer: Approvals) -> float:
    """One question asked on `asker`, answered on `answerer`: ms from the answer to the wait's end."""
    wait = asyncio.create_task(asker.ask(REQUEST))
    while not answerer.pending_ids("g:1"):  # noqa: ASYNC110 - polls another process's rows, as a gateway would read them
        await asyncio.sleep(0.001)
    t0 = time.perf_counter()
    assert answerer.take_reply("g:1", "admin", "allow") is not None
    await wait
    return (time.perf_counter() - t0) * 1000


async def request_ms(asker: Signals, handler_of: Signals) -> float:
    t0 = time.perf_counter()
    if asker.shared:
        answer = await asker.request("ping", {"n": 1}, wait_sec=5)
    else:
        answer = await _pong({"n": 1})
    assert answer == {"n": 2}
    return (time.perf_counter() - t0) * 1000


async def _pong(payload: Payload) -> Payload | None:
    return {"n": int(payload["n"]) + 1}


def take_reply_us(a: Approvals, text: str, n: int = 200) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        a.take_reply("g:9", "u1", text)
    return (time.perf_counter() - t0) / n * 1e6


async def run(tmp: Path, url: str, rounds: int, poll_rounds: int) -> dict[str, list[float]]:
    settings = Settings(bot={"admins": ["admin"]})
    local_store = AppStore(tmp / "ania.db")
    stores = [open_store(tmp, url), open_store(tmp, url)]
    signals = [PgSignals(url, s) for s in stores]
    local = LocalSignals()
    for s in signals:
        await s.start()
    shared = [SharedQuestions(st, sg) for st, sg in zip(stores, signals, strict=True)]
    a, b = (approvals(settings, q) for q in shared)
    one = approvals(settings, None)
    signals[0].subscribe("ping", _pong)
    got: dict[str, list[float]] = {k: [] for k in ("answer one", "answer two", "answer poll", "request one",
                                                   "request two", "ordinary one", "ordinary two", "yes one",
                                                   "yes two")}
    try:
        for _ in range(rounds):
            got["answer one"].append(await answer_ms(one, one))
            got["answer two"].append(await answer_ms(a, b))
            got["request one"].append(await request_ms(local, local))
            got["request two"].append(await request_ms(signals[1], signals[0]))
            got["ordinary one"].append(take_reply_us(one, "hello there"))
            got["ordinary two"].append(take_reply_us(b, "hello there"))
            got["yes one"].append(take_reply_us(one, "yes"))
            got["yes two"].append(take_reply_us(b, "yes"))
        await signals[0].aclose()  # A hears nothing now: only its poll brings the verdicts
        for _ in range(poll_rounds):
            got["answer poll"].append(await answer_ms(a, b))
    finally:
        for q in shared:
            await q.aclose()
        for s in signals:
            await s.aclose()
        for st in [*stores, local_store]:
            st.close()
    return got


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_signals", description=__doc__.splitlines()[0])
    p.add_argument("--signal-rounds", type=int, default=100)
    p.add_argument("--poll-rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    args, _ = p.parse_known_args(argv)
    rounds, poll_rounds = (20, 2) if args.quick else (args.signal_rounds, args.poll_rounds)
    with throwaway_postgres() as found:
        if found is None:
            return
        server, tmp = found
        got = asyncio.run(run(tmp, server.url, rounds, poll_rounds))
    med: dict[str, Any] = {k: statistics.median(v) for k, v in got.items()}
    print(f"{rounds} rounds ({poll_rounds} by the poll); medians")
    print(f"{'':28}{'one process':>14}{'two on Postgres':>18}{'ratio':>9}")
    for label, key, unit in (("answer -> wait ends", "answer", "ms"), ("request -> answer", "request", "ms"),
                             ("take_reply, ordinary text", "ordinary", "us"), ("take_reply, 'yes'", "yes", "us")):
        one, two = med[f"{key} one"], med[f"{key} two"]
        print(f"{label:28}{one:>11.3f} {unit}{two:>15.3f} {unit}{two / one if one else float('inf'):>8.1f}x")
    print(f"{'answer -> wait ends, poll':28}{'':>14}{med['answer poll']:>15.1f} ms   (signal lost; poll every 2 s)")


if __name__ == "__main__":
    main()
