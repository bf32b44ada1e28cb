"""`ania logs`: the query log and the operation log (Q3, R3), read from <data dir>/ania.db.

A readable table at a terminal; JSON Lines when the output is piped or with `--json`. It opens the app
store only: no settings beyond the paths, no engine, no MCP server.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from ania.when import parse_duration, parse_when


def duration(text: str) -> float:
    """argparse type: `90s`, `30m`, `2h`, `7d`, `2w` → seconds."""
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def since(text: str) -> float:
    """argparse type: a duration back from now (`2h`) or a local date/time (`2026-11-30`, `2026-11-30T14:00`)."""
    try:
        return parse_when(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: Any) -> None:
    logs = sub.add_parser("logs", help="the query log and the operation log (reads data/ania.db)",
                          description="What the bot did: one query row per message that reached the model "
                                      "(`queries`, `show ID`), and the operation log of approvals, config, skill "
                                      "and MCP changes (`ops`). A table at a terminal, JSON Lines when piped.")
    lsub = logs.add_subparsers(dest="action", metavar="ACTION", required=True)
    queries = lsub.add_parser("queries", help="list query rows, newest first")
    queries.add_argument("--session", metavar="KEY", help="only this session, e.g. g:123")
    queries.add_argument("--status", help="running, success, stopped, timeout, error, quota or interrupted")
    queries.add_argument("--tool", metavar="NAME", help="only turns that called this tool")
    ops = lsub.add_parser("ops", help="list operation-log rows, newest first")
    ops.add_argument("--session", metavar="KEY", help="only this session")
    ops.add_argument("--kind", help="e.g. tool_approval, config_set, skill_manage, mcp_manage, reboot")
    for p in (queries, ops):
        p.add_argument("--since", type=since, metavar="WHEN",
                       help="2h, 30m, 7d or a date/time such as 2026-11-30T14:00")
        p.add_argument("-n", type=int, default=50, metavar="N", help="at most N rows (default 50)")
        p.add_argument("--json", action="store_true", help="JSON Lines even at a terminal")
    show = lsub.add_parser("show", help="one query row in full, with its tool calls")
    show.add_argument("id", type=int, help="the query id (first column of `ania logs queries`)")
    show.add_argument("--json", action="store_true", help="JSON even at a terminal")


def run(args: argparse.Namespace) -> int:
    from core.settings import Paths, load_settings
    from services.store import open_store
    from services.usage import STATUSES, QueryFilter, QueryLog, read_ops

    paths = Paths.from_env(check=True)
    settings = load_settings(paths.config_dir)
    db = paths.data_dir / "ania.db"
    if not settings.cluster.postgres_url and not db.exists():
        print(f"ania: no logs yet ({db} does not exist)", file=sys.stderr)
        return 1 if args.action == "show" else 0
    if getattr(args, "status", None) and args.status not in STATUSES:
        print(f"ania: unknown status {args.status!r}; one of: {', '.join(STATUSES)}", file=sys.stderr)
        return 2
    store = open_store(paths.data_dir, settings.cluster.postgres_url)
    try:
        as_json = args.json or not sys.stdout.isatty()
        if args.action == "ops":
            rows = read_ops(store, session=args.session, kind=args.kind, since=args.since, limit=args.n)
            _print(rows, as_json, _op_line)
            return 0
        log = QueryLog(store, settings.logs)
        if args.action == "queries":
            rows = log.rows(QueryFilter(args.session, args.status, args.since, args.tool, args.n))
            _print(rows, as_json, query_line)
            return 0
        row = log.get(args.id)
        if row is None:
            print(f"ania: no query {args.id} (`ania logs queries` lists them)", file=sys.stderr)
            return 1
        print(json.dumps(row, ensure_ascii=False, indent=None if not sys.stdout.isatty() else 2)
              if as_json else query_full(row))
        return 0
    finally:
        store.close()


def _print(rows: list[dict[str, Any]], as_json: bool, line: Any) -> None:
    if as_json:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False, sort_keys=True))
        return
    if not rows:
        print("(no rows)")
    for r in rows:
        print(line(r))


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"


def query_line(r: dict[str, Any]) -> str:
    """A query log row as one line of `ania logs queries` at a terminal."""
    text = " ".join(str(r["input"] or "").split())
    text = text if len(text) <= 50 else text[:49] + "…"
    return (f"{r['id']:>6}  {_when(r['started'])}  {r['session']:<14} {r['sender'] or '-':<10} {r['status']:<11} "
            f"{r['total_tokens'] or 0:>7} tok {r['duration_ms'] or 0:>7} ms {r['call_count'] or 0:>3} calls  {text}")


def _op_line(r: dict[str, Any]) -> str:
    detail = json.dumps(r["detail"], ensure_ascii=False, sort_keys=True)
    detail = detail if len(detail) <= 80 else detail[:79] + "…"
    return f"{r['id']:>6}  {_when(r['ts'])}  {r['kind']:<14} {r['session'] or '-':<14} {r['actor'] or '-':<10} {detail}"


def recalled_line(p: dict[str, Any]) -> str:
    """One passage recalled into a turn (F3): its source, id, title, base, score and size."""
    title = f" {json.dumps(p['title'], ensure_ascii=False)}" if p.get("title") else ""
    return f"{p['source']} {p['id']}{title} in {p['scope']}, score {p['score']:.2f}, {p['runes']} characters"


def _messages(r: dict[str, Any]) -> str:
    """The messages the row accounts for (a batch: several), as `id (sender)`."""
    pairs = zip(r.get("message_ids") or [], r.get("senders") or [], strict=False)
    return ", ".join(f"{mid} ({who})" for mid, who in pairs) or "-"


def query_full(r: dict[str, Any]) -> str:
    """A query log row in full (`ania logs show ID` at a terminal)."""
    lines = [f"query {r['id']}: {r['status']}", f"session   {r['session']} (thread {r['thread'] or '-'})",
             f"sender    {r['sender'] or '-'} ({r['trigger']})",
             f"messages  {_messages(r)}",
             f"started   {_when(r['started'])}, took {r['duration_ms'] or 0} ms",
             f"from      checkpoint {r['checkpoint'] or '(new session)'}",
             f"tokens    {json.dumps(r['tokens'], sort_keys=True)}",
             f"input     {r['input']}", f"reply     {r['reply'] or '-'}",
             f"tool calls ({r['call_count'] or 0}, the first {len(r['calls'])} shown):"]
    lines += [f"  {c['name']}({c['args']}) → {c['status']}" for c in r["calls"]]
    recalled = r.get("recalled") or []
    lines.append(f"recalled ({len(recalled)}):" if recalled else "recalled  -")
    lines += [f"  [{n}] {recalled_line(p)}" for n, p in enumerate(recalled, 1)]
    if r["checkpoint"]:
        lines.append(f"replay: ania sessions replay {r['session']} --at {r['checkpoint']}")
    return "\n".join(lines)
