"""The `ania` command: `ania chat`, `demo`, `serve`, `panel`, `sessions ...`, `logs ...`, `kb ...`, `fake-llm`.

Start-up order matters to a person waiting at the terminal: the arguments are parsed with nothing but
argparse loaded (`ania --help` and `--version` import no project module), then the settings are read
and checked (pydantic only), and only then are the engine, LangGraph and the model client imported.
A mistake in the settings is reported in a fraction of a second, as one line. Commands that only read
stored data (`sessions`) open the checkpointer directly and start nothing else: no MCP server, no
services.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ania import logs_cli, migrate_cli, panel_cli, sessions_cli

if TYPE_CHECKING:
    from core.settings import Paths, Settings

LOCAL_USER = "local"
SESSION_KEY = re.compile(r"^[fg]:\S+$")
CHAT_KEYS = """\
Settings: config/ania.toml (the directory is ANIA_CONFIG_DIR; config.example/ holds commented
examples), every key also as ANIA_<SECTION>__<KEY>; data: ANIA_DATA_DIR (default ./data).

In the chat: /stop stops the running turn, /plan on|off toggles plan mode (admins), an approval is
answered with "allow <id>" or "deny <id>", /quit or /exit (or Ctrl-D) quits, Ctrl-C interrupts.
With stdin from a pipe or a file each line is a message, sent when the previous turn has finished
(or is waiting for an approval, so a later line can answer it); the exit status is 1 when a message
failed. Colour at a terminal unless NO_COLOR is set.
"""


def session_key(text: str) -> str:
    """argparse type of --session: `f:<user id>` (a private chat) or `g:<group id>` (a group)."""
    if not SESSION_KEY.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a session key: use f:<user id> or g:<group id>, "
                                         "e.g. f:local or g:team")
    return text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ania-engine")
    except PackageNotFoundError:
        return "unknown (not installed; run `make setup`)"


def _chat_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", type=session_key, default="f:local", metavar="KEY",
                   help="the conversation: f:<user id> (private) or g:<group id> (group); default f:local")
    p.add_argument("--user", default=None, metavar="ID",
                   help="act as this user id with that user's real rights (an admin only when listed in "
                        "bot.admins); default: the local user 'local', who is always an admin")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (public: the tests read its commands and help)."""
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="ania", description="Ania: the AI engine of a chat bot, on LangGraph.",
                                epilog="Start with `ania demo` (offline), then configure a model in "
                                       "config/ania.toml and run `ania chat`. `ania COMMAND --help` for more.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log at INFO level to stderr (one line per turn), and each step of a turn")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    chat = sub.add_parser("chat", help="chat with the bot from this terminal", formatter_class=raw,
                          description="Chat with the bot from this terminal.", epilog=CHAT_KEYS)
    _chat_options(chat)
    demo = sub.add_parser("demo", help="chat with an offline scripted model (no API key needed)",
                          formatter_class=raw, epilog=CHAT_KEYS,
                          description="Chat with a scripted OpenAI-compatible model served in this process on "
                                      "127.0.0.1 (it echoes, or follows --script). Your config is used, except "
                                      "the [llm] endpoint.")
    demo.add_argument("--script", metavar="FILE",
                      help="JSON list of scripted steps (replies, tool calls), e.g. config.example/demo-script.json")
    _chat_options(demo)
    serve = sub.add_parser(
        "serve", help="run the chat bot on a OneBot v11 implementation (NapCat, Lagrange, LLOneBot)",
        formatter_class=ServeHelp,
        description="Serve every group and private chat through a OneBot v11 implementation: forward\n"
                    "WebSocket (onebot.ws_url: Ania dials it) or reverse WebSocket (onebot.listen: it\n"
                    "dials Ania). Logs its start-up, connections and one line per message at INFO\n"
                    "(-v: each step of a turn too).")
    serve.add_argument("--role", choices=("all", "gateway", "worker"), default="all",
                       help="all (default): one process does everything. In a cluster on cluster.postgres_url "
                            "(docs/DEPLOY.md): gateway holds the OneBot link and queues messages; worker runs "
                            "the turns (start as many as you like)")
    sessions = sub.add_parser("sessions", help="list, show, history, fork, replay, export or prune stored "
                                               "conversations",
                              description="Stored conversations in <data dir>/checkpoints.db (one LangGraph "
                                          "thread per session). list, show, history and export only read; "
                                          "none starts an MCP server.")
    ssub = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    ssub.add_parser("list", help="list stored sessions with their number of checkpoints",
                    description="List stored sessions (key, number of checkpoints), sorted by key.")
    show = ssub.add_parser("show", help="print a session's messages",
                           description="Print a stored session's messages, one per line.")
    show.add_argument("key", type=session_key, help="the session key, e.g. f:local or g:team")
    sessions_cli.add_actions(ssub, session_key)
    logs_cli.add_parser(sub)
    kb_parser(sub)
    panel_cli.add_parser(sub)
    migrate_cli.add_parser(sub)
    fake = sub.add_parser("fake-llm", help="serve a scripted OpenAI-compatible model on 127.0.0.1",
                          description="Serve a scripted OpenAI-compatible model on 127.0.0.1 until Ctrl-C; point "
                                      "llm.base_url at the printed URL (model name: scripted-model).")
    fake.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    fake.add_argument("--script", metavar="FILE",
                      help="JSON list of scripted steps (replies, tool calls); afterwards it echoes")
    return p


class ServeHelp(argparse.RawDescriptionHelpFormatter):
    """`serve --help` ends with the [onebot] settings, written from their descriptions in
    core/settings/platform.py (imported only when this help is printed, so `--help` stays light)."""

    def format_help(self) -> str:
        from core.settings.check import section_help
        from core.settings.platform import OneBotSettings

        return super().format_help() + "\n" + section_help("onebot", OneBotSettings) + "\n"

#: Loggers whose INFO lines `ania serve` shows without -v (ours: start-up, connections, one line per message);
#: libraries stay at WARNING.
OWN_LOGGERS = ("ania", "services", "nodes", "tools", "graphs", "checkpoints")


def kb_parser(sub: Any) -> None:
    """`ania kb ...` (ania/kb_cli.py runs it; defined here so `--help` imports nothing heavy)."""
    kb = sub.add_parser("kb", help="manage the knowledge base (the global one by default)")
    ksub = kb.add_subparsers(dest="action", required=True)
    add = ksub.add_parser("add", help="add text or Markdown files")
    add.add_argument("files", nargs="+", metavar="FILE")
    add.add_argument("--scope", default="global", help="global (default), g:<group id> or f:<user id>")
    add.add_argument("--title", default=None, help="the title (one file only; default: the file name)")
    listing = ksub.add_parser("list", help="list documents")
    listing.add_argument("--scope", default="global")
    listing.add_argument("--limit", type=int, default=100)
    search = ksub.add_parser("search", help="search as a session would (its own base and the global one)")
    search.add_argument("query")
    search.add_argument("--scope", default="global")
    search.add_argument("--top-k", type=int, default=5)
    delete = ksub.add_parser("delete", help="delete a document by id")
    delete.add_argument("doc_id")


def main(argv: Sequence[str] | None = None) -> int:
    """A reader that stops early (`ania sessions export KEY | head`) ends the command quietly, as SIGPIPE ends
    other Unix tools (exit status 141), instead of a BrokenPipeError traceback."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at interpreter exit, where the error could only be printed
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing left to flush into the closed pipe at exit
        os.close(devnull)
        return 128 + 13  # SIGPIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 0
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A shell starts a background job (`ania fake-llm &`, a script run with `&`) with SIGINT ignored,
        # and Python then never raises KeyboardInterrupt: `kill -INT` and Ctrl-C must still stop us cleanly.
        signal.signal(signal.SIGINT, signal.default_int_handler)

    from core.errors import RunError

    _logging(args)
    try:
        return _command(args)
    except RunError as e:  # a bad setting or file (ConfigError), another bot on the data directory
        print(f"ania: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ania: interrupted", file=sys.stderr)
        return 130


def _logging(args: argparse.Namespace) -> None:
    import logging

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="ania: %(levelname)s %(name)s: %(message)s")
    if args.cmd == "serve" and not args.verbose:  # a server's log: its own normal lines, libraries' warnings
        for name in OWN_LOGGERS:
            logging.getLogger(name).setLevel(logging.INFO)
    if args.verbose:
        logging.getLogger("ania.turn").setLevel(logging.DEBUG)  # each step of a turn, besides its one INFO line


def _command(args: argparse.Namespace) -> int:
    """Run the subcommand; its exit status."""
    import asyncio

    if args.cmd == "fake-llm":
        return _fake_llm(args.port, args.script)
    if args.cmd in ("logs", "sessions", "kb", "panel"):  # they may write the stores: private, like the bot's files
        from core.settings import Paths
        from services.datadir import make_private

        make_private(Paths.from_env().data_dir, create=False)
    if args.cmd == "logs":
        return logs_cli.run(args)
    if args.cmd == "sessions" and args.action not in ("list", "show"):
        from core.settings import Paths

        return asyncio.run(sessions_cli.run(args, Paths.from_env(check=True)))
    if args.cmd == "sessions":
        return asyncio.run(_sessions(args))
    if args.cmd == "kb":
        from ania import kb_cli

        return asyncio.run(kb_cli.run(args))
    if args.cmd == "panel":
        return panel_cli.run(args)
    if args.cmd == "migrate":
        return migrate_cli.run(args)
    return _chat(args)


def _chat(args: argparse.Namespace) -> int:
    """Settings first (one line and exit 2 when wrong), then the heavy imports and the engine."""
    from core.settings import Paths, load_settings, require_llm

    paths = Paths.from_env(check=True)
    settings = load_settings(paths.config_dir)
    server = None
    if args.cmd == "demo":
        from ania.fakes.openai_server import ScriptedOpenAI, load_script

        steps = load_script(args.script) if args.script else []
        server = ScriptedOpenAI().script(steps).start()
        llm = settings.llm.model_copy(update={"base_url": server.base_url, "model": server.model, "max_retries": 0})
        settings = settings.model_copy(update={"llm": llm})
    try:
        require_llm(settings)
        if server is None:  # the demo's endpoint is its own
            from core.settings.check import check_llm_endpoint

            check_llm_endpoint(settings.llm.base_url, settings.llm.api_key,
                               settings.config_file or paths.config_dir / "ania.toml", os.environ)
        from services.processes import protect_process

        protect_process()
        from ania.loop import run

        return run(_chat_engine(args, paths, settings, demo=server is not None))
    finally:
        if server is not None:
            server.stop()


async def _chat_engine(args: argparse.Namespace, paths: Paths, settings: Settings, *, demo: bool) -> int:
    from ania.engine import Engine
    from ania.loop import settle_heap

    local_admins: tuple[str, ...] = ()
    user: str = getattr(args, "user", None) or LOCAL_USER
    if args.cmd != "serve" and getattr(args, "user", None) is None:  # the person at the terminal runs the bot
        local_admins = (LOCAL_USER,)  # ... and is an admin
    role = getattr(args, "role", "all")
    engine = await Engine.start(paths.config_dir, paths.data_dir, settings=settings, local_admins=local_admins,
                                role=role)
    settle_heap()
    panel = None
    try:
        from ania.panel.server import PanelServer, wanted
        from core.errors import RunError

        if wanted(settings.panel, args.cmd) and role != "worker":
            panel = PanelServer(engine, settings.panel, mode="serve" if args.cmd == "serve" else "chat",
                                say=lambda line: print(line, file=sys.stderr, flush=True))
            try:
                await panel.start()
            except RunError as e:  # panel.enable "auto" never keeps the bot from starting; "on" does
                if settings.panel.enable == "on":
                    raise
                print(f"ania: {e}; the bot runs without its panel", file=sys.stderr)
                panel = None
        ready = panel.attach if panel is not None else None
        if args.cmd == "serve" and role != "all":
            from ania.cluster.serve import run_role

            await run_role(engine, role, ready=ready)
        elif args.cmd == "serve":
            from ania.platforms.onebot import run_serve

            await run_serve(engine, ready=ready)
        else:
            from ania.platforms.terminal import run_terminal

            note = "offline scripted model (it echoes; --script FILE scripts it)" if demo else ""
            outcome = await run_terminal(engine, args.session, user, note=note, local=bool(local_admins),
                                         ready=ready)
            if outcome.failed and not sys.stdin.isatty():  # a script reads the exit status, a person the replies
                print(f"ania: {outcome.failed} of {outcome.turns} message(s) failed", file=sys.stderr)
                return 1
    finally:
        if panel is not None:
            await panel.stop()
        await engine.close()
    return 0


async def _sessions(args: argparse.Namespace) -> int:
    """Reads the checkpointer and nothing else: no settings, no services, no MCP server."""
    from core.settings import Paths

    paths = Paths.from_env(check=True)
    from ania.state_url import state_url
    from checkpoints.factory import CHECKPOINT_FILE

    db, url = paths.data_dir / CHECKPOINT_FILE, state_url(paths.config_dir)
    if not url and not db.exists():
        if args.action == "show":
            print(f"ania: no session {args.key!r} (nothing is stored yet: {db} does not exist)", file=sys.stderr)
            return 1
        print(f"ania: no stored sessions yet ({db} does not exist)", file=sys.stderr)
        return 0
    from ania.engine_mode import stock_mode
    from checkpoints.factory import open_checkpointer
    from checkpoints.sessions import list_sessions, render, session_messages

    async with open_checkpointer(paths.data_dir, url or None, stock=stock_mode(paths.config_dir)) as saver:
        if args.action == "list":
            for info in await list_sessions(saver):
                print(f"{info.key}\t{info.checkpoints} checkpoint{'' if info.checkpoints == 1 else 's'}")
            return 0
        messages = await session_messages(saver, args.key)  # read from the saver: no graph, no services
    if not messages:
        print(f"ania: no session {args.key!r}", file=sys.stderr)
        return 1
    for m in messages:
        print(render(m))
    return 0


def _fake_llm(port: int, script: str | None) -> int:
    import threading

    from ania.fakes.openai_server import ScriptedOpenAI, load_script

    steps = load_script(script) if script else []
    server = ScriptedOpenAI().script(steps)
    server.port = port
    try:
        server.start()
    except OSError as e:
        print(f"ania: cannot serve on 127.0.0.1:{port}: {e.strerror or e} (is another `ania fake-llm` running? "
              "--port 0 picks a free port)", file=sys.stderr)
        return 1
    scripted = f"{len(steps)} scripted steps, then it echoes" if steps else "it echoes"
    print(f"scripted model at {server.base_url} (model name: {server.model}; {scripted}); Ctrl-C to stop",
          flush=True)
    try:
        threading.Event().wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
