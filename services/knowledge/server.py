"""Where a Chroma server is (`knowledge.chroma_url`), read once: its address, the credentials it wants and
the namespace (Chroma's tenant and database) that holds this bot's collections.

    http://127.0.0.1:8000                          the server's default database
    https://user:secret@chroma.lan/?database=bot1   Basic credentials (a proxy in front), database `bot1`
    http://:token@127.0.0.1:8000                    a bearer token (`Authorization: Bearer token`)

A database named in the URL is made on first use when the server lacks it, so several bots (or tests) on
one server each get an empty knowledge base of their own by naming one. The credentials go into request
headers only: `label` (what errors and logs show) is the URL without them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from core.errors import ToolError

DEFAULT_TENANT = "default_tenant"
DEFAULT_DATABASE = "default_database"
BAD_URL = ("knowledge.chroma_url {label} is not a Chroma server address ({why}); use "
           "http(s)://[user:password@]host[:port][/?tenant=T&database=D].")


@dataclass(frozen=True)
class ChromaServer:
    host: str
    port: int
    ssl: bool
    label: str
    tenant: str = DEFAULT_TENANT
    database: str = DEFAULT_DATABASE
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, url: str) -> ChromaServer:
        """The server of `url`; a ToolError (naming the URL without its credentials) when it is not one."""
        try:
            u = urlsplit(url.strip())
            port = u.port
        except ValueError as e:
            raise ToolError(BAD_URL.format(label=redact(url), why=str(e))) from None
        label = redact(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ToolError(BAD_URL.format(label=label, why="it needs http:// or https:// and a host"))
        if u.path not in ("", "/"):
            raise ToolError(BAD_URL.format(label=label, why=f"a path ({u.path}) is not supported"))
        query = {k: v[-1] for k, v in parse_qs(u.query).items()}
        unknown = sorted(set(query) - {"tenant", "database"})
        if unknown:
            raise ToolError(BAD_URL.format(label=label, why=f"unknown parameter {', '.join(unknown)}"))
        headers = {}
        if u.password is not None:
            user, secret = unquote(u.username or ""), unquote(u.password)
            headers["Authorization"] = (f"Basic {base64.b64encode(f'{user}:{secret}'.encode()).decode()}" if user
                                        else f"Bearer {secret}")
        return cls(host=u.hostname, port=port or (443 if u.scheme == "https" else 8000), ssl=u.scheme == "https",
                   label=label, tenant=query.get("tenant") or DEFAULT_TENANT,
                   database=query.get("database") or DEFAULT_DATABASE, headers=headers)

    def client(self, settings: Any) -> Any:
        """A Chroma `HttpClient` on this server's namespace, made first when the server lacks it."""
        import chromadb
        from chromadb.errors import NotFoundError

        if (self.tenant, self.database) != (DEFAULT_TENANT, DEFAULT_DATABASE):
            admin = chromadb.AdminClient(chromadb.config.Settings(
                chroma_api_impl="chromadb.api.fastapi.FastAPI", chroma_server_host=self.host,
                chroma_server_http_port=self.port, chroma_server_ssl_enabled=self.ssl,
                chroma_server_headers=self.headers or None, anonymized_telemetry=False))
            try:
                admin.get_tenant(self.tenant)
            except NotFoundError:
                admin.create_tenant(self.tenant)
            try:
                admin.get_database(self.database, tenant=self.tenant)
            except NotFoundError:
                admin.create_database(self.database, tenant=self.tenant)
        return chromadb.HttpClient(host=self.host, port=self.port, ssl=self.ssl, headers=self.headers or None,
                                   settings=settings, tenant=self.tenant, database=self.database)


def redact(url: str) -> str:
    """`url` without the user and password it may carry (what a log or an error may show)."""
    try:
        u = urlsplit(url.strip())
        if u.username is None and u.password is None:
            return url.strip()
        host = u.netloc.rsplit("@", 1)[1]
    except (ValueError, IndexError):
        return "(an unreadable URL)"
    return u._replace(netloc=f"***@{host}").geturl()
