"""The table a soak run prints (Markdown, so the README can carry it as it is)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.soak.checks import Check


def table(title: str, checks: list[Check], facts: list[tuple[str, str]], faults: list[tuple[str, int, str]]) -> str:
    lines = [f"### {title}", "", "| check | result | figure |", "|---|---|---|"]
    lines += [f"| {c.name} | {'pass' if c.passed else '**FAIL**'} | {c.figure} |" for c in checks]
    lines += ["", "| measure | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in facts]
    lines += ["", "| fault injected | count | how it was survived |", "|---|---|---|"]
    lines += [f"| {name} | {n} | {how} |" for name, n, how in faults]
    return "\n".join(lines)


def tally_text(tally: Counter[str] | dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def percentile_text(p: tuple[float, float, float]) -> str:
    return " / ".join(ms(x) for x in p)


def fault_rows(plan_faults: Counter[str], model_faults: dict[str, dict[str, int]], record: dict[str, Any],
               notes: dict[str, list[str]]) -> list[tuple[str, int, str]]:
    rows: list[tuple[str, int, str]] = []
    for kind, outcome in sorted(model_faults.items()):
        rows.append((f"model: {kind}", sum(outcome.values()), "its messages: " + tally_text(outcome)))
    link = record.get("link", {})
    rows.append(("OneBot link dropped by the implementation", link.get("drop", 0),
                 f"the bot dialled again ({record.get('connections', 0)} connections in all)"))
    rows.append(("OneBot implementation silent (no heartbeat)", link.get("silence", 0),
                 "the bot noticed the missing heartbeats and dialled again"))
    rows.append(("send_msg failed once", link.get("send_fail", 0), "retried by the bot"))
    for kind in ("kill9", "sqlite_lock", "writes_refused"):
        said = ", ".join(f"{text} (×{n})" for text, n in Counter(notes.get(kind, [])).most_common()) or "none"
        rows.append(({"kill9": "kill -9 of the bot, then a restart", "sqlite_lock": "a second process held a "
                      "write lock on the SQLite files", "writes_refused": "the data directory refused writes"}[kind],
                     plan_faults.get(kind, 0), said))
    return rows
