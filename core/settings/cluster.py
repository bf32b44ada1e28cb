"""`[cluster]`: where the state lives when several processes share it. Today: the app store's tables and the
conversations' checkpoints on Postgres (`postgres_url`; services/store_pg.py, checkpoints/pg.py). Empty keeps
everything in the data directory's SQLite files.

The URL may carry a password, so it is a secret: masked wherever settings are shown (`sensitive`), kept
from child processes with every `ANIA_*` variable (services/processes.py), and printed only through
`redact_url`, which puts `***` where the password was.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

SETTING = "cluster.postgres_url"
SCHEMES = ("postgresql", "postgres")
HIDDEN = "***"


class ClusterSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    postgres_url: str = Field(
        "", description="postgresql://user:password@host:5432/database holding the app store's tables (quotas, "
                        "query and operation logs, scheduled tasks, teams...) and the conversations instead of "
                        "data/ania.db and data/checkpoints.db; empty: SQLite (`ania migrate --to URL` copies a "
                        "data directory's state there first)",
        json_schema_extra={"sensitive": True})
    relay_listen: str = Field(
        "127.0.0.1:8091", description="`ania serve --role gateway`: host:port where the workers connect to reach "
                                      "the OneBot implementation through the gateway (ws://host:port/relay)")
    relay_url: str = Field(
        "ws://127.0.0.1:8091/relay", description="`ania serve --role worker`: the gateway's relay, through which "
                                                 "the worker sends replies and reads chat history, images and files")
    relay_token: str = Field(
        "", description="the token workers present to the gateway's relay (required when relay_listen is not "
                        "loopback: whoever holds the relay speaks for the bot)",
        json_schema_extra={"sensitive": True})
    worker_chats: int = Field(
        16, ge=1, le=1000, description="`--role worker`: how many chats one worker serves at once (each chat's "
                                       "turns run one at a time, on one worker)")
    stall_sec: float = Field(
        6.0, ge=2.0, le=600.0, description="a worker that has not beaten its heartbeat for this long is taken "
                                           "for dead: its chats go to another worker and its running turn is "
                                           "settled as interrupted (heartbeats every stall_sec / 3)")

    @field_validator("postgres_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if value and urlsplit(value).scheme not in SCHEMES:  # the message never repeats the value: a secret
            raise ValueError("must be empty or a postgresql://user:password@host:port/database URL")
        return value


def password_of(url: str) -> str:
    """The password the URL carries ("" when none): before the host, or as `?password=`."""
    try:
        parts = urlsplit(url)
        return parts.password or dict(parse_qsl(parts.query)).get("password", "")
    except ValueError:
        return ""


def redact_url(url: str) -> str:
    """The URL to show: its password (before the host or as `?password=`) replaced by `***`; one that does not
    parse is not shown at all."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a URL that does not parse)"
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = f"{userinfo.partition(':')[0]}:{HIDDEN}@{hostport}" if at and ":" in userinfo else parts.netloc
    query = urlencode([(k, HIDDEN if k == "password" else v) for k, v in parse_qsl(parts.query)], safe="*")
    shown = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    secret = password_of(url)
    return shown.replace(secret, HIDDEN) if secret else shown  # nowhere else either (a value repeated by mistake)


def scrub(text: str, url: str) -> str:
    """`text` (a driver's message) on one line, with the URL and its password replaced: some messages quote
    the conninfo."""
    text = text.replace(url, redact_url(url))
    for secret in {password_of(url), unquote(password_of(url))}:
        if secret:
            text = text.replace(secret, HIDDEN)
    return " ".join(text.split())
