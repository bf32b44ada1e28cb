"""The `ania` command: `ania chat`, `ania serve`, `ania sessions list|show`, `ania fake-llm`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from services.config import Paths, load_settings
from services.errors import ConfigError
from services.processes import protect_process

LOCAL_USER = "local"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ania", description="Ania chat-bot AI engine")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level to stderr")
    sub = p.add_subparsers(dest="cmd", required=True)
    chat = sub.add_parser("chat", help="chat from the terminal")
    chat.add_argument("--session", default="f:local", help="session key, f:<user> or g:<group> (default f:local)")
    chat.add_argument("--user", default=None,
                      help="act as this user id with that user's real rights (an admin only when listed in "
                           "bot.admins); default: the local user 'local', who is always an admin")
    sub.add_parser("serve", help="run the chat bot on a OneBot v11 implementation (NapCat, Lagrange, LLOneBot): "
                                 "forward WebSocket onebot.ws_url or reverse onebot.listen")
    sessions = sub.add_parser("sessions", help="stored sessions")
    ssub = sessions.add_subparsers(dest="action", required=True)
    ssub.add_parser("list", help="list stored sessions")
    show = ssub.add_parser("show", help="print a session's messages")
    show.add_argument("key")
    fake = sub.add_parser("fake-llm", help="serve a scripted OpenAI-compatible model (echoes) on 127.0.0.1")
    fake.add_argument("--port", type=int, default=8765)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.cmd == "fake-llm":
            return _fake_llm(args.port)
        return asyncio.run(_run(args))
    except ConfigError as e:
        print(f"ania: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


async def _run(args: argparse.Namespace) -> int:
    from ania.engine import Engine
    from services.config import require_llm

    paths = Paths.from_env()
    settings = load_settings(paths.config_dir)
    if args.cmd in ("chat", "serve"):
        require_llm(settings)
        protect_process()
    local_admins: tuple[str, ...] = ()
    if args.cmd == "chat" and args.user is None:  # the person at the terminal runs the bot: an admin
        args.user = LOCAL_USER
        local_admins = (LOCAL_USER,)
    engine = await Engine.start(paths.config_dir, paths.data_dir, settings=settings, local_admins=local_admins)
    try:
        if args.cmd == "chat":
            from ania.platforms.terminal import run_terminal

            await run_terminal(engine, args.session, args.user)
        elif args.cmd == "serve":
            from ania.platforms.onebot import run_serve

            await run_serve(engine)
        elif args.action == "list":
            from langgraph.checkpoint.base import BaseCheckpointSaver

            from checkpoints.sessions import list_sessions

            saver = engine.graph.checkpointer
            assert isinstance(saver, BaseCheckpointSaver), "the engine's graph always has a checkpointer"
            for info in await list_sessions(saver):
                print(f"{info.key}\t{info.checkpoints} checkpoints")
        else:
            from checkpoints.sessions import render, session_messages

            messages = await session_messages(engine.graph, args.key)
            if not messages:
                print(f"ania: no session {args.key!r}", file=sys.stderr)
                return 1
            for m in messages:
                print(render(m))
    finally:
        await engine.close()
    return 0


def _fake_llm(port: int) -> int:
    import time

    from ania.fakes.openai_server import ScriptedOpenAI

    server = ScriptedOpenAI()
    server.port = port
    server.start()
    print(f"scripted model at {server.base_url} (model name: scripted-model); Ctrl-C to stop", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
