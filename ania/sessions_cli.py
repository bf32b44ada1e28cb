"""`ania sessions history|fork|replay|export|prune` (D5 and retention); `list` and `show` are in cli.py.

history, fork, export and prune open the checkpointer (and prune the app store) and start nothing else.
replay starts the engine (the model and the tools as they are configured now) on a scratch copy of the
session, in plan mode unless `--side-effects` is given, with approvals denied at once, and prints what
happens; the original session is never written.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ania.logs_cli import duration

if TYPE_CHECKING:

    from core.settings import Paths

DEFAULT_STUDIO = "http://127.0.0.1:2024"


def add_actions(ssub: Any, session_key: Any) -> None:
    history = ssub.add_parser("history", help="a session's checkpoints, newest first",
                              description="One line per checkpoint, newest first: id, time, step, the node that "
                                          "produced it and what it did (\"model called bash\", \"approval pending\").")
    history.add_argument("key", type=session_key, help="the session key, e.g. g:team")
    history.add_argument("-n", type=int, default=0, metavar="N", help="only the newest N checkpoints")
    fork = ssub.add_parser("fork", help="copy a session up to a checkpoint into a new session",
                           description="A new session that continues from the checkpoint; the original is never "
                                       "touched. Chat in it with `ania chat --session NEWKEY`.")
    fork.add_argument("key", type=session_key)
    fork.add_argument("--at", required=True, metavar="CHECKPOINT", help="a checkpoint id from `sessions history`")
    fork.add_argument("--to", type=session_key, metavar="NEWKEY", help="the new session (default KEY-fork-<random>)")
    replay = ssub.add_parser("replay", help="run a session again from a checkpoint, against today's model and tools",
                             description="Forks to a scratch session and runs it from the checkpoint: the pending "
                                         "step, or --message, or else the message that followed the checkpoint. "
                                         "Plan mode is on (side-effect tools are blocked) unless --side-effects; "
                                         "approvals are denied.")
    replay.add_argument("key", type=session_key)
    replay.add_argument("--at", required=True, metavar="CHECKPOINT")
    replay.add_argument("--message", metavar="TEXT", help="send this message instead")
    replay.add_argument("--side-effects", action="store_true", help="let side-effect tools run (plan mode off)")
    export = ssub.add_parser("export", help="a session's messages as JSON or Markdown (secrets redacted)")
    export.add_argument("key", type=session_key)
    export.add_argument("--format", choices=("json", "md"), default="json")
    export.add_argument("--full", action="store_true",
                        help="the whole conversation from the checkpoints, each compaction summary where it "
                             "happened (default: the history since the last compaction, as the model sees it)")
    studio = ssub.add_parser("studio", help="open a session in LangGraph Studio (`make studio` first)",
                             description="Copies the session to a Studio thread (a UUID derived from the key; "
                                         "Studio accepts no other thread ids) in data/checkpoints.db, which "
                                         "`make studio` serves, and registers it with the running server. Runs "
                                         "there act as the session; the bot's own thread is not touched.")
    studio.add_argument("key", type=session_key)
    where = studio.add_mutually_exclusive_group()
    where.add_argument("--url", help="the Studio server (default: the one `make studio` runs on this data "
                                     f"directory, found in <data dir>/studio.json; else {DEFAULT_STUDIO})")
    where.add_argument("--port", type=int, help="the Studio server's port on 127.0.0.1")
    studio.add_argument("--refresh", action="store_true", help="copy the session again over an earlier copy")
    prune = ssub.add_parser("prune", help="delete checkpoints and query rows older than a duration",
                            description="Retention: sessions idle for longer are deleted; in the others, the "
                                        "checkpoints before the newest full copy of the history older than the "
                                        "cut-off go. Query rows older than it go too (running ones stay).")
    prune.add_argument("--older-than", type=duration, required=True, metavar="AGE", help="e.g. 30d, 12h")
    prune.add_argument("--dry-run", action="store_true", help="only count what would be deleted")


async def run(args: argparse.Namespace, paths: Paths) -> int:
    from ania.engine_mode import stock_mode
    from ania.state_url import state_url
    from checkpoints.factory import CHECKPOINT_FILE, open_checkpointer
    from checkpoints.maintenance import ForkError

    url = state_url(paths.config_dir) or None
    if not url and not (paths.data_dir / CHECKPOINT_FILE).exists():
        print(f"ania: no stored sessions yet ({paths.data_dir / CHECKPOINT_FILE} does not exist)", file=sys.stderr)
        return 0 if args.action == "prune" else 1
    try:
        if args.action == "replay":
            return await _replay(args, paths)
        async with open_checkpointer(paths.data_dir, url, stock=stock_mode(paths.config_dir)) as saver:
            if args.action == "history":
                return await _history(saver, args)
            if args.action == "fork":
                from checkpoints.maintenance import fork_thread

                target = args.to or f"{args.key}-fork-{secrets.token_hex(3)}"
                n = await fork_thread(saver, args.key, args.at, target)
                print(f"forked {args.key} at {args.at} to {target} ({n} checkpoint{'' if n == 1 else 's'}); "
                      f"continue it with: ania chat --session {target}")
                return 0
            if args.action == "export":
                return await _export(saver, args, paths)
            if args.action == "studio":
                return await _studio(saver, args, paths)
            return await _prune(saver, args, paths)
    except ForkError as e:
        print(f"ania: {e}", file=sys.stderr)
        return 1


async def _history(saver: Any, args: argparse.Namespace) -> int:
    from checkpoints.history import history_lines

    lines = await history_lines(saver, args.key)
    if not lines:
        print(f"ania: no session {args.key!r}", file=sys.stderr)
        return 1
    for line in lines[: args.n or None]:
        at = line.step.at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if line.step.at else "?"
        print(f"{line.step.checkpoint_id}  {at}  step {line.step.step:>4}  {line.node:<12} {line.summary}")
    return 0


async def _export(saver: Any, args: argparse.Namespace, paths: Paths) -> int:
    from ania.transcripts import export_text
    from checkpoints.sessions import session_messages
    from checkpoints.transcript import full_transcript

    if args.full:
        entries = await full_transcript(saver, args.key)
        found = bool(entries)
    else:
        messages = await session_messages(saver, args.key)
        found = bool(messages)
    if not found:
        print(f"ania: no session {args.key!r}", file=sys.stderr)
        return 1
    print(export_text(args.key, args.format, paths, **({"entries": entries} if args.full else {"messages": messages})))
    return 0


async def _prune(saver: Any, args: argparse.Namespace, paths: Paths) -> int:
    from ania.retention import prune_stored
    from core.settings import load_settings
    from services.store import open_store
    from services.usage import QueryLog

    before = datetime.now(UTC) - timedelta(seconds=args.older_than)
    settings = load_settings(paths.config_dir)
    url = settings.cluster.postgres_url
    store = open_store(paths.data_dir, url) if url or (paths.data_dir / "ania.db").exists() else None
    try:
        queries = QueryLog(store, settings.logs) if store is not None else None
        done = await prune_stored(saver, store, queries, before, dry_run=args.dry_run)
    finally:
        if store is not None:
            store.close()
    report = done.report
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb}: {len(report.sessions_deleted)} idle session(s), {report.checkpoints} checkpoint(s), "
          f"{report.writes} write(s), {done.query_rows} query row(s) older than {before.astimezone():%Y-%m-%d %H:%M}")
    for key in report.sessions_deleted:
        print(f"  session {key}")
    if not done.vacuumed:
        print("note: the file was not compacted (in use); the space is reused by new checkpoints")
    return 0


async def _replay(args: argparse.Namespace, paths: Paths) -> int:
    from ania.replay import replay

    return await replay(args.key, args.at, paths, message=args.message, side_effects=args.side_effects,
                        out=sys.stdout.write)


async def _studio(saver: Any, args: argparse.Namespace, paths: Paths) -> int:
    import httpx

    from ania.studio_checkpointer import studio_thread_id
    from ania.studio_threads import copy_session, running_url

    url = studio_url(args, paths)
    done = await copy_session(saver, paths.data_dir, args.key, refresh=args.refresh)
    if done is None:
        print(f"ania: no session {args.key!r}", file=sys.stderr)
        return 1
    thread = studio_thread_id(args.key)
    body = {"thread_id": thread, "metadata": {"session": args.key, "graph_id": "agent"}, "if_exists": "do_nothing"}
    try:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            answer = await http.post("/threads", json=body)
            answer.raise_for_status()
            (await http.post("/ania/threads/sync", json={"thread_id": thread})).raise_for_status()
    except httpx.HTTPError as e:
        found = "" if args.url or args.port or running_url(paths.data_dir) else (
            f"; no running Studio server recorded in {paths.data_dir}")
        print(f"ania: copied {args.key} to the Studio thread {thread}, but the Studio server at {url} did not "
              f"take it ({type(e).__name__}){found}; start it with `make studio` (or name it with --url/--port) "
              "and run this again", file=sys.stderr)
        return 1
    state = "kept the earlier copy (--refresh copies again)" if done == "kept" else "copied"
    print(f"{args.key} is the Studio thread {thread} ({state}); open "
          f"https://smith.langchain.com/studio/thread/{thread}?baseUrl={url}")
    return 0


def studio_url(args: argparse.Namespace, paths: Paths) -> str:
    """--url, else --port on 127.0.0.1, else the server `make studio` recorded in the data directory, else 2024."""
    from ania.studio_threads import running_url

    if args.url:
        return str(args.url).rstrip("/")
    if args.port:
        return f"http://127.0.0.1:{args.port}"
    return (running_url(paths.data_dir) or DEFAULT_STUDIO).rstrip("/")
