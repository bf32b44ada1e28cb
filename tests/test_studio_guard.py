"""Who may call the `langgraph dev` server: a web page from another origin (or a DNS name rebound to 127.0.0.1)
is refused before anything runs; Studio's web app, local pages and clients without an Origin are served. The
server: tests/studio_helpers.py.
"""

from __future__ import annotations

import json

from ania.fakes.openai_server import Reply, ScriptedOpenAI
from tests.studio_helpers import (
    ROOT,
    STUDIO_MODULE,
    Studio,
    last,
    studio_llm,  # noqa: F401  (the fixture `llm`)
)

pytestmark = STUDIO_MODULE

#: A simple request a web page may send without a preflight: `text/plain`, and the body is still JSON.
SIMPLE = {"Content-Type": "text/plain"}
EVIL = "https://evil.example"



def test_a_foreign_web_page_cannot_drive_studio(studio: Studio, llm: ScriptedOpenAI) -> None:
    """Studio runs as the local admin: a page from another origin is refused (403) before anything runs, its
    preflight too, with no CORS or private-network grant; Studio's web app, local pages and clients without an
    Origin still work. A page that rebinds its own DNS name to 127.0.0.1 (Host: its name) is refused as well."""
    llm.script([Reply("admin answer")] * 5)
    run = json.dumps({"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "bot.admins?"}]}})
    thread = studio.thread()
    for path in ("/runs/wait", f"/threads/{thread}/runs/wait", "/runs"):
        r = studio.http.post(path, content=run, headers={**SIMPLE, "Origin": EVIL})
        assert r.status_code == 403 and EVIL in r.json()["detail"], (path, r.status_code, r.text)
        assert "access-control-allow-origin" not in r.headers
    for origin in (EVIL, "null", "http://localhost.evil.example:2024", "http://127.0.0.1.nip.io"):
        r = studio.http.request("OPTIONS", "/runs/wait", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type", "Access-Control-Request-Private-Network": "true"})
        assert r.status_code == 403, origin
        assert not {"access-control-allow-origin", "access-control-allow-private-network"} & set(r.headers), origin
    r = studio.http.get(f"/threads/{thread}", headers={"Host": f"rebound.evil.example:{studio.http.base_url.port}"})
    assert r.status_code == 403
    assert llm.requests == [], "no run may have started"
    assert studio.state(thread)["values"] == {}
    for origin in ("https://smith.langchain.com", "http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000"):
        r = studio.http.request("OPTIONS", "/runs/wait", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type", "Access-Control-Request-Private-Network": "true"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin, origin
        assert r.headers["access-control-allow-private-network"] == "true"
    for origin in ("https://smith.langchain.com", "http://localhost:5173"):
        r = studio.http.post("/runs/wait", content=run, headers={"Content-Type": "application/json", "Origin": origin})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin
        assert last(r.json())["content"] == "admin answer"
    assert len(llm.requests) == 2
    assert studio.http.post("/runs/wait", content=run, headers={"Content-Type": "application/json"}).status_code == 200


def test_langgraph_json_allows_the_origins_the_guard_allows() -> None:
    """The CORS headers langgraph-api sends and the guard in front of it agree (langgraph.json http.cors)."""
    import re as re_

    from ania.studio_http import STUDIO_ORIGINS, allowed_origin

    cors = json.loads((ROOT / "langgraph.json").read_text())["http"]["cors"]
    assert tuple(cors["allow_origins"]) == STUDIO_ORIGINS
    for origin in ("http://localhost", "http://localhost:2024", "https://127.0.0.1:1", "http://[::1]:3000",
                   "http://localhost.evil.example", "https://evil.example", "null", "http://127.0.0.1:80/x"):
        assert bool(re_.fullmatch(cors["allow_origin_regex"], origin)) == allowed_origin(origin) or \
            origin in STUDIO_ORIGINS, origin
