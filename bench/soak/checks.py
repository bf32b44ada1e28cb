"""The invariants of a soak run, each a `Check` (name, passed, figure) computed from the fakes' own records,
the bot's SQLite files and the samples.

A message the bot received is its responsibility: it has exactly one outcome, a reply naming its marker or a
query-log row saying why not (stopped, error, timeout, interrupted, quota). A message sent less than
`IN_FLIGHT_SEC` before a kill -9 may not have reached the bot: it is counted apart ("in flight at a kill"),
never as answered. So is one that arrived while another process held the SQLite files' lock, when the kill
came before the bot could catch up (`LOCK_CATCH_UP_SEC` after the lock's end): no write, its inbox row
included, can land while the lock is held, so the bot had no record of it yet.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ania.engine import TURN_FAILED
from ania.flow.flow import QUEUE_FULL, RATE_LIMITED
from bench.soak.bot import BotProcess, Sample, run_cli
from bench.soak.ledger import marker_by_id, row_markers
from bench.soak.model import markers_of

IN_FLIGHT_SEC = 1.0
LOCK_CATCH_UP_SEC = 3.0
#: A query-log row saying why a message got no answer of its own: the turn's end, or (issue 23's flow) the
#: message refused at the door or dropped by /stop while it waited.
SETTLED = {"error", "timeout", "stopped", "interrupted", "quota", "rate_limited", "queue_full"}
EVERY = re.compile(r"@every (\d+)s")
MISSED_RUNS = re.compile(r"(\d+) run\(s\) due while the bot was down")
NOTICE = TURN_FAILED.split(" ({")[0]  # "Sorry, something went wrong on my side"
REFUSAL_NOTICES = (RATE_LIMITED.split("{")[0], QUEUE_FULL.split("}")[1].split("{")[0])


@dataclass
class Check:
    name: str
    passed: bool
    figure: str


def in_flight(sent: float, kills: list[float], closes: list[float]) -> bool:
    """Sent up to IN_FLIGHT_SEC before a kill -9, or between the kill and the moment the fake saw the link
    close: the bot may never have read it."""
    for k in kills:
        closed = min((c for c in closes if c >= k - IN_FLIGHT_SEC), default=k + 2.0)
        if k - IN_FLIGHT_SEC <= sent <= max(k, closed):
            return True
    return False


def unrecorded_at_kill(sent: float, kills: list[float], locked: list[tuple[float, float]]) -> bool:
    """Sent while another process held the lock (or after it), with a kill -9 at most LOCK_CATCH_UP_SEC after
    the lock's end: the bot's write of it was waiting for the lock or its backlog when the kill came."""
    return any(a <= sent <= k and b <= k <= b + LOCK_CATCH_UP_SEC for a, b in locked for k in kills)


def reply_times(record: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[
        dict[str, list[float]], dict[str, list[str]], set[int], set[str]]:
    """marker → when the chat received an answer to it (its marker in a reply: a batch's answer names every
    marker of the batch; or its row's reply, such as a notice, reaching the chat); marker → the statuses of
    the query-log rows that account for it (ledger.row_markers: by `message_ids`, or its input); the replies
    so claimed; the markers whose answer is their row's notice."""
    replies: dict[str, list[float]] = {}
    claimed: set[int] = set()
    for i, r in enumerate(record["replies"]):
        for marker in set(markers_of(r["text"])):
            replies.setdefault(marker, []).append(r["at"])
            claimed.add(i)
    statuses: dict[str, list[str]] = {}
    noticed: set[str] = set()
    by_id = marker_by_id(record)
    for row in rows:
        markers = row_markers(row, by_id)
        for marker in markers:
            statuses.setdefault(marker, []).append(row["status"])
        notice = (row["reply"] or "")[:200]
        waiting = [m for m in markers if m not in replies]  # a batch's notice answers each of its messages
        if notice and waiting:
            got = [i for i, r in enumerate(record["replies"]) if i not in claimed and r["chat"] == row["session"]
                   and r["at"] >= row["started"] and r["text"].startswith(notice)]
            if got:
                claimed.add(got[0])
                for marker in waiting:
                    replies[marker] = [record["replies"][got[0]]["at"]]
                    noticed.add(marker)
    return replies, statuses, claimed, noticed


def unlogged_notice(record: dict[str, Any], m: dict[str, Any], claimed: set[int]) -> bool:
    """A failure notice in the message's chat that no row or marker claims: the answer of a turn that ran while
    the data directory refused writes, so it has no row. Claimed here, once."""
    for i, r in enumerate(record["replies"]):
        if i not in claimed and r["chat"] == m["chat"] and r["at"] >= m["at"] and r["text"].startswith(NOTICE):
            claimed.add(i)
            return True
    return False


def unlogged_refusal(record: dict[str, Any], m: dict[str, Any], claimed: set[int]) -> bool:
    """A rate-limit or full-queue notice quoting the message, that no row claims: it was refused while the
    data directory refused writes (the notice goes out, its row cannot be written). Claimed here, once."""
    for i, r in enumerate(record["replies"]):
        if (i not in claimed and m.get("mid") and r.get("quote") == m["mid"]
                and any(part in r["text"] for part in REFUSAL_NOTICES)):
            claimed.add(i)
            return True
    return False


def _without_answer(record: dict[str, Any], unanswered: list[dict[str, Any]], claimed: set[int],
                    batch: dict[str, set[str]], statuses: dict[str, list[str]], category: dict[str, str]) -> list[str]:
    """The outcome of each message nothing answered by marker or row: a failure or refusal notice no row
    claims (written while the data directory refused writes), else lost (returned, oldest first).

    A notice without a row answers the newest message before it that nothing else answered: one stopped while
    it waited has no answer later, so the oldest is not the one whose turn failed. A turn whose closing write
    was refused keeps its row `running` and quotes its batch's last message in its notice: that notice
    answers every message of the batch."""
    lost: list[str] = []
    waiting = {m["marker"] for m in unanswered}
    for m in sorted(unanswered, key=lambda m: m["at"], reverse=True):
        marker = m["marker"]
        if marker in category:
            continue
        if unlogged_notice(record, m, claimed):
            for one in {marker} | (batch.get(marker, set()) & waiting):
                category.setdefault(one, "failure notice, no row (writes refused)")
        elif unlogged_refusal(record, m, claimed):
            category[marker] = "refusal notice, no row (writes refused)"
        else:
            category[marker] = "lost"
            lost.append(f"{marker} ({m['kind']} in {m['chat']} at {m['at']:.1f}, rows: {statuses.get(marker, [])})")
    return lost[::-1]


def outcomes(record: dict[str, Any], rows: list[dict[str, Any]], kills: list[float],
             locked: list[tuple[float, float]] | None = None) -> dict[str, Any]:
    """Each marked message's outcome: replied, settled (a row says why not: its notice, when one is due, is
    claimed too), in flight at a kill (or unrecorded, the store locked), or lost."""
    replies, statuses, claimed, noticed = reply_times(record, rows)
    by_id = marker_by_id(record)
    batch = {m: row_markers(r, by_id) for r in rows for m in row_markers(r, by_id)}
    doubled, latency = [], {}
    category: dict[str, str] = {}
    unanswered = []
    for m in record["messages"]:
        marker = m["marker"]
        if not marker:
            continue
        got = replies.get(marker, [])
        if len(got) > 1:
            doubled.append(marker)
        settled = SETTLED & set(statuses.get(marker, []))
        if not m["delivered"]:
            category[marker] = "not delivered (link down)"
        elif got and not (marker in noticed and settled):
            category[marker] = "replied"
            latency[marker] = min(got) - m["at"]
        elif settled:
            category[marker] = "settled: " + "/".join(sorted(settled))
        elif in_flight(m["at"], kills, record.get("closes", [])):
            category[marker] = "in flight at a kill -9"
        elif unrecorded_at_kill(m["at"], kills, locked or []):
            category[marker] = "unrecorded at a kill -9 (store locked)"
        else:
            unanswered.append(m)
    lost = _without_answer(record, unanswered, claimed, batch, statuses, category)
    tally = Counter(category.values())
    return {"tally": tally, "lost": lost, "doubled": doubled, "latency": latency, "category": category}


def clock_check(data: Path, until: float, refused: list[tuple[float, float]]) -> tuple[Check, Check, dict[str, int]]:
    """No due time ran twice; between the first and the last run of a task, every due time has a row (but
    while the data directory refused writes, when no row can be written: those are counted apart)."""
    with sqlite3.connect(data / "ania.db") as db:
        runs = db.execute("SELECT task_id, scheduled, status FROM clock_runs ORDER BY task_id, scheduled").fetchall()
        covered = db.execute("SELECT task_id, scheduled, detail FROM clock_runs WHERE status = 'missed'").fetchall()
        tasks = dict(db.execute("SELECT id, schedule FROM clock_tasks").fetchall())
    statuses = Counter(status for _, _, status in runs)
    twice = Counter((t, round(s, 3)) for t, s, _ in runs)
    doubled = [k for k, n in twice.items() if n > 1]
    gaps = excused = 0
    by_task: dict[int, list[float]] = {}
    for t, s, _ in runs:
        if s <= until:
            by_task.setdefault(t, []).append(s)
    for t, times in by_task.items():
        every = EVERY.search(tasks.get(t, ""))
        if every is None:
            continue
        step = float(every.group(1))
        for task, first, detail in covered:  # one `missed` row stands for every fire due while the bot was down
            said = MISSED_RUNS.match(detail or "")
            if task == t and said:
                times += [first + k * step for k in range(1, int(said.group(1)))]
        unique = sorted(set(times))
        for a, b in itertools.pairwise(unique):
            if b - a > step * 1.5:
                n = round((b - a) / step) - 1
                if any(lo - step <= b and a <= hi + step for lo, hi in refused):
                    excused += n
                else:
                    gaps += n
    fired = Check("clock: no due time ran twice", not doubled, f"{len(runs)} runs of {len(tasks)} tasks, "
                  f"{len(doubled)} doubled")
    kept = Check("clock: every due time ran or is logged missed", gaps == 0, f"{gaps} due time(s) with no row; {excused} while writes were refused")
    return fired, kept, dict(statuses)


def integrity(data: Path) -> Check:
    bad = []
    files = sorted(data.glob("*.db"))
    for path in files:
        with sqlite3.connect(path) as db:
            result = db.execute("PRAGMA integrity_check").fetchone()[0]
        if result != "ok":
            bad.append(f"{path.name}: {result}")
    return Check("state: PRAGMA integrity_check", not bad, f"{len(files)} file(s) ok" if not bad else "; ".join(bad))


def sessions_check(bot: BotProcess, chats: list[str]) -> list[Check]:
    """Every chat session loads (`show`), lists its checkpoints (`history`) and replays its last checkpoint."""
    code, listing = run_cli(bot, "sessions", "list")
    known = [c for c in chats if c in listing]
    failed: dict[str, list[str]] = {"show": [], "history": [], "replay": []}
    for key in known:
        newest = ""
        for action in ("show", "history", "replay"):
            args = ("--at", newest, "--message", "soak replay") if action == "replay" else ()
            c, out = run_cli(bot, "sessions", action, key, *args)
            if action == "history" and out.strip():
                newest = out.split()[0]  # newest first: the last checkpoint
            if c != 0 or "Traceback" in out:
                failed[action].append(f"{key}: {out.strip().splitlines()[-1:] if out.strip() else c}")
    found = [Check("state: sessions list", code == 0, f"{len(known)} chat session(s) stored")]
    for action, bad in failed.items():
        found.append(Check(f"state: sessions {action} of each", not bad, "; ".join(bad) or f"{len(known)} ok"))
    return found


def slope_mb_per_min(samples: list[Sample]) -> float:
    if len(samples) < 3:
        return 0.0
    xs = [(s.at - samples[0].at) / 60 for s in samples]
    return statistics.linear_regression(xs, [s.rss_mb for s in samples]).slope


def resources(samples: list[Sample], last_start: float) -> tuple[list[Check], dict[str, Any]]:
    """Over the samples since the last (re)start, after a 20 s warm-up: resident memory's slope over the last
    half, and no growth of the floor of open files, threads and asyncio tasks from the middle to the last third
    (the first third is warm-up: the knowledge store, the sandbox and MCP open their files at first use)."""
    run = [s for s in samples if s.at >= last_start + 20]
    if len(run) < 9:
        return [Check("resources: enough samples", False, f"{len(run)} samples since the last restart")], {}
    half = run[len(run) // 2:]
    slope = slope_mb_per_min(half)
    minutes = (half[-1].at - half[0].at) / 60
    noise = statistics.pstdev(s.rss_mb for s in half)
    grown = slope * minutes
    third = len(run) // 3
    first, last = run[third:2 * third], run[-third:]  # the first third warms up: Chroma, bash, MCP start lazily
    figures: dict[str, Any] = {"rss_first_mb": run[0].rss_mb, "rss_last_mb": run[-1].rss_mb, "rss_peak_mb": max(s.rss_mb for s in run),
               "slope": slope, "minutes": minutes, "samples": len(samples)}
    out = [Check("resources: resident memory flat over the last half", grown <= max(8.0, 3 * noise),
                 f"slope {slope:+.2f} MB/min over {minutes:.1f} min ({grown:+.1f} MB; noise {noise:.1f} MB)")]
    for name, slack in (("fds", 6), ("threads", 4), ("tasks", 8)):
        a, b = min(getattr(s, name) for s in first), min(getattr(s, name) for s in last)
        figures[name] = (a, b, max(getattr(s, name) for s in run))
        out.append(Check(f"resources: no growth of {name}", b <= a + slack and b >= 0,
                         f"floor {a} → {b}, peak {figures[name][2]}"))
    return out, figures


def percentiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (0.0, 0.0, 0.0)
    if len(values) == 1:
        return (values[0], values[0], values[0])
    q = statistics.quantiles(values, n=100, method="inclusive")
    return q[49], q[94], q[98]
