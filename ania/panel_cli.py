"""`ania panel`: the web panel alone on a data directory where no bot runs, or its login management:
`--set-password` (then the login link no longer logs in), `--link` (print the login link again),
`--new-token` (a new token: the old link and bearer stop working)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `ania --help` imports no project module: the rest is imported when `ania panel` runs
    from core.settings import Paths


def add_parser(sub: Any) -> None:
    panel = sub.add_parser(
        "panel", help="the web panel alone (no bot running on the data directory), or its login",
        description="Serve the web panel on panel.listen (default 127.0.0.1:6190) for the data directory, "
                    "while no bot runs there (the bot's lock is held meanwhile: a bot started then is refused). "
                    "`ania serve` starts the panel itself (panel.enable).")
    what = panel.add_mutually_exclusive_group()
    what.add_argument("--set-password", action="store_true",
                      help="set the login password (read from the terminal, or one line of stdin); needed to "
                           "listen beyond 127.0.0.1; the login link then no longer logs in")
    what.add_argument("--link", action="store_true", help="print the login link (makes the token if needed)")
    what.add_argument("--new-token", action="store_true",
                      help="make a new token and print its link; the old link and bearer token stop working")


def _read_password() -> str:
    import getpass

    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("New panel password: ")
    if getpass.getpass("Again: ") != first:
        raise SystemExit("ania: the two passwords differ; nothing was changed")
    return first


def run(args: argparse.Namespace) -> int:
    from ania.panel.auth import PanelAuth
    from ania.panel.listen import login_link
    from core.settings import Paths, load_settings

    paths = Paths.from_env(check=True)
    settings = load_settings(paths.config_dir)
    auth = PanelAuth(paths.data_dir, settings.panel)
    if args.set_password:
        try:
            auth.set_password(_read_password())
        except ValueError as e:
            print(f"ania: {e}; nothing was changed", file=sys.stderr)
            return 2
        print(f"Password set ({auth.password_path}). The login link no longer logs in; the token stays the API's "
              "bearer. A running panel uses the new password at the next login.")
        return 0
    if args.link or args.new_token:
        token = auth.new_token() if args.new_token else auth.ensure_token()[0]
        print(login_link(settings.panel, token))
        return 0
    from ania.loop import run as run_loop

    return run_loop(_alone(paths))


async def _alone(paths: Paths) -> int:
    import asyncio
    import contextlib
    import signal

    from ania.panel.server import run_alone

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    await run_alone(paths, stop, say=lambda line: print(line, file=sys.stderr, flush=True))
    return 0
