"""What the query log says about each message (issue 23's flow): a turn may answer several messages, and a
message may be settled without a turn (`rate_limited`, `queue_full`, `stopped` while it waited).

Each row names the platform ids of the messages it accounts for (`message_ids`) and their senders; the
OneBot fake records the id it gave each message it sent, and the message a reply quotes. So the harness
attributes a row to every message of its batch (not only to the markers the model copied), finds a message
that two rows account for (answered or settled twice), checks that a batch's answer quotes the batch's last
message, and that a member over the rate limit (or facing a full queue) is told at most once per window.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from bench.soak.model import markers_of

REFUSED = ("rate_limited", "queue_full")


def query_rows(data: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(data / "ania.db") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT id, session, sender, trigger, input, status, started, reply, "
                                            "message_ids, senders FROM query_log ORDER BY id")]
    for r in rows:
        r["message_ids"] = json.loads(r.get("message_ids") or "[]")
        r["senders"] = json.loads(r.get("senders") or "[]")
    return rows


def marker_by_id(record: dict[str, Any]) -> dict[str, str]:
    """The fake's message id → the marker of the message it carried."""
    return {str(m["mid"]): m["marker"] for m in record["messages"] if m.get("mid") and m["marker"]}


def row_markers(row: dict[str, Any], by_id: dict[str, str]) -> set[str]:
    """The messages a row accounts for: those its `message_ids` name, and the markers its input carries (a
    message recovered after a restart keeps its id; a row of a terminal message has none)."""
    return set(markers_of(row.get("input") or "")) | {by_id[i] for i in row.get("message_ids", []) if i in by_id}


def twice_in_log(rows: list[dict[str, Any]], by_id: dict[str, str]) -> list[str]:
    """Markers of messages that two query-log rows account for: answered (or settled) twice."""
    seen = Counter(m for r in rows for m in {by_id[i] for i in r.get("message_ids", []) if i in by_id})
    return sorted((m for m, n in seen.items() if n > 1), key=lambda m: int(m[2:]))


def quotes(record: dict[str, Any]) -> tuple[Counter[str], list[str]]:
    """How each answer naming markers quoted: the batch's last message ("last"), no quote ("none": a message
    recovered after a restart has no message to quote), or another message ("wrong", listed)."""
    sent_at = {m["marker"]: m["at"] for m in record["messages"] if m["marker"]}
    by_id = marker_by_id(record)
    tally: Counter[str] = Counter()
    wrong: list[str] = []
    for r in record["replies"]:
        named = [m for m in set(markers_of(r["text"])) if m in sent_at]
        if not named:
            continue
        last = max(named, key=lambda m: sent_at[m])
        quoted = by_id.get(r.get("quote") or "")
        if not r.get("quote"):
            tally["none"] += 1
        elif quoted == last:
            tally["batch of one" if len(named) == 1 else "batch of several"] += 1
        else:
            tally["wrong"] += 1
            wrong.append(f"{' '.join(sorted(named))} quoted {quoted or r.get('quote')}")
    return tally, wrong


def notices_per_window(rows: list[dict[str, Any]], window: float, kills: list[float]) -> tuple[int, int, list[str]]:
    """(refusals, notices sent, members told twice within one window). A restart forgets when each member was
    last told (the window is the process's), so two notices with a kill -9 between them are not counted."""
    refusals = [r for r in rows if r["status"] in REFUSED]
    told: dict[tuple[str, str], list[float]] = {}
    for r in refusals:
        if r.get("reply"):
            told.setdefault((r["session"], r["sender"]), []).append(r["started"])
    twice = [f"{who} in {chat}" for (chat, who), times in told.items()
             if any(b - a < window - 0.5 and not any(a <= k <= b for k in kills)
                    for a, b in itertools.pairwise(times))]
    return len(refusals), sum(len(t) for t in told.values()), twice
