"""`ania migrate --to URL`: copy a single-process data directory's state into Postgres (ania/migrate.py),
then point `cluster.postgres_url` at it. Refused while a bot runs on the directory."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    m = sub.add_parser(
        "migrate", help="copy this data directory's state into a Postgres database (then set cluster.postgres_url)",
        description="Copy every table of <data dir>/ania.db (quotas and usage, the query and operation logs, "
                    "started calls, scheduled tasks and their runs, teams, the inbox) into an empty Postgres "
                    "database, creating its tables first. No bot may run on the data directory meanwhile. The "
                    "URL's password is never printed. Conversations (checkpoints.db) are not copied by this "
                    "version. See docs/DEPLOY.md.")
    m.add_argument("--to", required=True, metavar="URL",
                   help="postgresql://user:password@host:5432/database (an empty database)")


def run(args: argparse.Namespace) -> int:
    from urllib.parse import urlsplit

    from ania.migrate import migrate
    from core.errors import RunError
    from core.settings import Paths
    from core.settings.cluster import SCHEMES, redact_url
    from services.datadir import BOT_LOCK, make_private
    from services.files import OwnerLock

    try:
        scheme = urlsplit(args.to).scheme
    except ValueError:
        scheme = ""
    if scheme not in SCHEMES:
        raise RunError("--to must be a postgresql://user:password@host:port/database URL")
    paths = Paths.from_env(check=True)
    db = paths.data_dir / "ania.db"
    if not db.exists():
        print(f"ania: nothing to copy: {db} does not exist", file=sys.stderr)
        return 1
    make_private(paths.data_dir, create=False)
    lock = OwnerLock(paths.data_dir / BOT_LOCK)
    if (holder := lock.acquire()) is not None:
        raise RunError(f"a bot (process {holder}) runs on the data directory {paths.data_dir}: stop it first; "
                       "nothing was copied")
    try:
        rows = migrate(paths.data_dir, args.to, lambda line: print(line, flush=True))
    finally:
        lock.release()
    print(f"done: {rows:,} rows copied into {redact_url(args.to)}. Set cluster.postgres_url to this URL "
          "(or ANIA_CLUSTER__POSTGRES_URL) and start the bot; data/ania.db is left as it was.")
    return 0
