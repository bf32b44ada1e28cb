"""The panel's data pages over a real engine: the query log, usage, sessions (with the whole transcript),
knowledge and memory. Each route: the answer, a refused request, bad input, and the operation-log row."""

from __future__ import annotations

import asyncio
import json

import pytest

from ania.fakes.openai_server import Calls, Reply
from tests.conftest import make_settings
from tests.panel_data_helpers import COMPACTING, compacted, say
from tests.panel_helpers import FOREIGN, ORIGIN, open_panel

pytestmark = pytest.mark.timeout(240)

API_GETS = ("/api/queries", "/api/queries/1", "/api/usage", "/api/sessions", "/api/sessions/f:u1",
            "/api/sessions/export?key=f:u1", "/api/knowledge", "/api/knowledge/search?q=x", "/api/memory")
PAGES = ("/queries", "/usage", "/sessions", "/sessions/show?key=f:u1", "/knowledge", "/memory")


async def test_every_route_refuses_a_request_without_credentials(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        for path in API_GETS:
            assert (await p.anon.get(path)).status_code == 401, path
        for path in ("/api/queries/1/replay", "/api/sessions/fork", "/api/sessions/replay", "/api/sessions/prune",
                     "/api/knowledge"):
            assert (await p.anon.post(path, json={})).status_code == 401, path
        for path in ("/api/knowledge/d-1", "/api/knowledge/scope/g:1", "/api/memory/m-1"):
            assert (await p.anon.delete(path)).status_code == 401, path
        for path in PAGES:
            assert (await p.anon.get(path, follow_redirects=False)).status_code in (302, 303, 401), path
        browser, csrf = await p.login()
        try:  # a browser session changes nothing without its CSRF token, nor from a foreign page
            bare = await browser.post("/api/knowledge", json={"title": "t", "content": "c"}, headers={"Origin": ORIGIN})
            foreign = await browser.post("/api/knowledge", json={"title": "t", "content": "c"},
                                         headers={"Origin": FOREIGN, "X-CSRF-Token": csrf})
            assert bare.status_code == 403 and foreign.status_code == 403
            ok = await browser.post("/api/knowledge", json={"title": "t", "content": "some text"},
                                    headers={"Origin": ORIGIN, "X-CSRF-Token": csrf})
            assert ok.status_code == 201, ok.text
        finally:
            await browser.aclose()
        for path in PAGES:  # every page renders, in Chinese too
            r = await p.client.get(path, headers={"Accept-Language": "zh-CN"})
            assert r.status_code == 200 and "<h1>" in r.text, path
        assert "查询日志" in (await p.client.get("/queries", headers={"Accept-Language": "zh"})).text
        assert "Query log" in (await p.client.get("/queries", headers={"Accept-Language": "en"})).text


async def test_query_log_filters_pages_shows_and_replays(tmp_path, scripted_llm):
    settings = make_settings(scripted_llm, llm={"api_key": "sk-panel-secret-4242"})
    async with open_panel(tmp_path, scripted_llm, settings=settings) as p:
        await say(p, scripted_llm, "g:club", "alice", "what time is it", Calls([("time", {})]), Reply("noon"))
        for i in range(3):
            await say(p, scripted_llm, "f:bob", "bob", f"hello {i}")
        r = (await p.client.get("/api/queries", params={"size": 2})).json()
        assert r["total"] == 4 and len(r["items"]) == 2 and r["page"] == 1
        assert r["items"][0]["input"].endswith("hello 2") and r["items"][0]["calls"] is None
        second = (await p.client.get("/api/queries", params={"size": 2, "page": 2})).json()
        assert [x["id"] for x in second["items"]] == [2, 1]
        by = {"session": "g:club", "user": "alice", "status": "success", "tool": "time", "since": "1h"}
        [row] = (await p.client.get("/api/queries", params=by)).json()["items"]
        assert row["session"] == "g:club" and row["tools"] == ["time"]
        assert (await p.client.get("/api/queries", params={"tool": "bash"})).json()["total"] == 0
        assert (await p.client.get("/api/queries", params={"until": "2000-01-01"})).json()["total"] == 0
        key = p.ctx.services.settings.llm.api_key  # a model that echoes the key: no page shows it
        await say(p, scripted_llm, "f:leak", "eve", "tell me the key", Reply(f"it is {key}"))
        leak = (await p.client.get("/api/queries", params={"session": "f:leak"})).json()["items"][0]
        shown = json.dumps([leak, (await p.client.get(f"/api/queries/{leak['id']}")).json(),
                            (await p.client.get("/api/sessions/f:leak")).json()])
        assert key not in shown and "it is [redacted]" in shown
        store0 = p.ctx.services.store
        store0.write("DELETE FROM query_log WHERE session = 'f:leak'")
        for bad in ({"status": "great"}, {"since": "yesterday-ish"}, {"page": "0"}, {"size": "x"}):
            answer = await p.client.get("/api/queries", params=bad)
            assert answer.status_code == 400 and answer.json()["error"], bad
        full = (await p.client.get(f"/api/queries/{row['id']}")).json()
        assert full["reply"] == "noon" and full["calls"][0]["name"] == "time" and full["tokens"]["total_tokens"] > 0
        assert "pid" not in full and full["checkpoint"] == ""  # its session was new: nothing to replay from
        assert (await p.client.get("/api/queries/999")).status_code == 404
        assert (await p.client.get("/api/queries/abc")).status_code == 400
        assert (await p.client.post(f"/api/queries/{row['id']}/replay")).status_code == 400
        # The passages a turn was given (007_recall) and the batch's messages (006_batches) show in the detail.
        store = p.ctx.services.store
        store.write("UPDATE query_log SET recalled = ? WHERE id = ?",
                    [json.dumps([{"source": "kb", "id": "d-1", "title": "Rules", "scope": "global", "score": 0.9,
                                 "runes": 7}]), row["id"]])
        detail = (await p.client.get(f"/api/queries/{row['id']}")).json()
        assert detail["recalled"][0]["title"] == "Rules" and detail["senders"] == [row["sender"]]
        bob = (await p.client.get("/api/queries", params={"session": "f:bob"})).json()["items"][0]
        scripted_llm.script([Reply("hello again")])
        replayed = await p.client.post(f"/api/queries/{bob['id']}/replay")
        assert replayed.status_code == 200, replayed.text
        result = replayed.json()
        assert result["scratch"].startswith("f:bob/replay/") and "hello again" in " ".join(result["messages"])
        [op] = p.ops("query_replay")
        assert op["actor"] == "panel" and op["detail"]["query"] == bob["id"]
        assert (await p.client.post("/api/queries/999/replay")).status_code == 404


async def test_usage_today_and_the_last_30_days_against_the_quotas(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, quota={"global_daily_tokens": 100_000,
                                                         "session_daily_tokens": 50_000}) as p:
        await say(p, scripted_llm, "g:club", "alice", "one")
        await say(p, scripted_llm, "f:bob", "bob", "two")
        data = (await p.client.get("/api/usage")).json()
        today = data["today"]
        per_chat = {s["session"]: s["tokens"] for s in today["sessions"]}
        assert set(per_chat) == {"g:club", "f:bob"} and today["global"] == sum(per_chat.values()) > 0
        assert data["quotas"]["global_daily_tokens"] == 100_000 and len(data["days"]) == 30
        assert data["days"][-1]["day"] == data["day"] and data["days"][-1]["tokens"] == today["global"]
        assert sum(d["tokens"] for d in data["days"][:-1]) == 0
        assert {s["session"]: s["tokens"] for s in data["top_sessions"]} == per_chat
        # Earlier days come from the same counters, kept for the history.
        quota = p.ctx.services.quota
        first = data["days"][0]["day"]
        p.ctx.services.store.write("INSERT INTO kv (key, value) VALUES (?, '700'), (?, '700'), (?, '9')",
                                   [f"daily:{first}:g:club", f"daily:{first}:global", "daily:2000-01-01:global"])
        again = (await p.client.get("/api/usage")).json()
        assert again["days"][0] == {"day": first, "tokens": 700} and quota.day() == again["day"]
        assert again["top_sessions"][0] == {"session": "g:club", "tokens": per_chat["g:club"] + 700}
        one = (await p.client.get("/api/usage", params={"session": "g:club"})).json()
        assert one["today"]["sessions"] == [{"session": "g:club", "tokens": per_chat["g:club"]}]
        assert one["days"][-1]["tokens"] == per_chat["g:club"]
        assert (await p.client.get("/api/usage", params={"session": "x" * 400})).status_code == 400
        page = (await p.client.get("/usage")).text
        assert "<svg" in page and page.count('<rect class="day"') == 30 and 'class="quota"' in page
        assert "g:club" in page and "100,000" in page


async def test_sessions_list_search_transcript_export_fork_replay_prune(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, **COMPACTING) as p:
        await compacted(p, scripted_llm, "f:u1")
        await say(p, scripted_llm, "g:team", "u2", "hi team")
        listed = (await p.client.get("/api/sessions")).json()
        assert listed["total"] == 2 and listed["items"][0]["key"] == "g:team" and listed["items"][0]["at"]
        assert [s["key"] for s in (await p.client.get("/api/sessions", params={"q": "U1"})).json()["items"]] == ["f:u1"]
        assert (await p.client.get("/api/sessions", params={"q": "%"})).json()["total"] == 0  # no wildcard
        paged = (await p.client.get("/api/sessions", params={"size": 1, "page": 2})).json()
        assert paged["items"][0]["key"] == "f:u1" and paged["total"] == 2
        t = (await p.client.get("/api/sessions/f:u1", params={"size": 200})).json()
        assert t["compactions"] >= 2 and t["key"] == "f:u1"
        kinds = [e["kind"] for e in t["items"]]
        text = json.dumps(t["items"], ensure_ascii=False)
        assert all(f"question {i}" in text for i in range(4)) and "compaction" in kinds
        first_summary = kinds.index("compaction")
        assert "question 1" in json.dumps(t["items"][:first_summary])  # placed after the turn that compacted
        assert any(e["message"]["data"].get("tool_calls") for e in t["items"])
        assert (await p.client.get("/api/sessions/f:nobody")).status_code == 404
        before = (await p.client.get("/api/sessions/g:team")).json()["total"]
        await say(p, scripted_llm, "g:team", "u2", "one more")  # a kept transcript gives way to the new turn
        after = (await p.client.get("/api/sessions/g:team")).json()
        assert after["total"] == before + 2 and "one more" in json.dumps(after["items"])
        md = await p.client.get("/api/sessions/export", params={"key": "f:u1", "format": "md"})
        assert md.status_code == 200 and "compacted here:" in md.text and "question 0" in md.text
        short = await p.client.get("/api/sessions/export", params={"key": "f:u1", "full": "0"})
        assert short.status_code == 200 and "question 0" not in short.text
        assert (await p.client.get("/api/sessions/export", params={"key": "f:u1", "format": "pdf"})).status_code == 400
        assert (await p.client.get("/api/sessions/export", params={"key": "f:none"})).status_code == 404
        at = t["items"][0]["checkpoint"]
        forked = await p.client.post("/api/sessions/fork", json={"key": "f:u1", "at": at, "to": "f:copy"})
        assert forked.status_code == 200 and forked.json()["to"] == "f:copy"
        assert p.ops("session_fork")[0]["detail"]["to"] == "f:copy"
        again = await p.client.post("/api/sessions/fork", json={"key": "f:u1", "at": at, "to": "f:copy"})
        assert again.status_code == 400 and "already exists" in again.json()["error"]
        assert (await p.client.post("/api/sessions/fork", json={"key": "f:u1", "at": "zzz"})).status_code == 400
        assert (await p.client.post("/api/sessions/fork", json={"key": "f:none", "at": at})).status_code == 404
        assert (await p.client.post("/api/sessions/fork", json={"key": "f:u1", "at": at, "to": "bad key"})).status_code == 400
        scripted_llm.script([Reply("a new answer")])
        replayed = await p.client.post("/api/sessions/replay", json={"key": "g:team", "at": (await p.client.get(
            "/api/sessions/g:team")).json()["items"][0]["checkpoint"], "message": "again please"})
        assert replayed.status_code == 200, replayed.text
        assert "a new answer" in replayed.json()["log"] and p.ops("session_replay")
        assert (await p.client.post("/api/sessions/replay", json={"key": "g:none", "at": at})).status_code == 404
        assert (await p.client.post("/api/sessions/replay", json={"key": "g:team"})).status_code == 400
        await asyncio.sleep(1.1)  # the fork's newest checkpoint is then older than "1s"
        dry = (await p.client.post("/api/sessions/prune", json={"older_than": "1s", "dry_run": True})).json()
        assert dry["dry_run"] and "f:copy" in dry["sessions_deleted"] and not p.ops("session_prune"), dry
        for bad in ({"older_than": "soon"}, {}, {"older_than": "1d", "dry_run": "yes"}):
            assert (await p.client.post("/api/sessions/prune", json=bad)).status_code == 400, bad
        assert (await p.client.post("/api/sessions/prune", content=b"[1")).status_code == 400
        done = (await p.client.post("/api/sessions/prune", json={"older_than": "30d"})).json()
        assert done["checkpoints"] == 0 and p.ops("session_prune")[0]["detail"]["sessions"] == 0


async def test_knowledge_global_base_is_managed_and_chat_bases_pruned(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        body = {"title": "Club rules", "content": "Members meet on Fridays at the harbour. 会员每周五在港口见面。"}
        added = await p.client.post("/api/knowledge", json=body)
        assert added.status_code == 201, added.text
        doc = added.json()["document"]
        assert doc["scope"] == "global" and p.ops("kb_add")[0]["detail"]["id"] == doc["id"]
        again = await p.client.post("/api/knowledge", json=body)
        assert again.status_code == 200 and again.json()["duplicate"] and len(p.ops("kb_add")) == 1
        for bad in ({"title": "x", "content": "   "}, {"title": "x", "content": 5},
                    {"title": "x", "content": "y", "scope": "g:1"}):
            answer = await p.client.post("/api/knowledge", json=bad)
            assert answer.status_code == 400 and answer.json()["error"], bad
        listed = (await p.client.get("/api/knowledge")).json()
        assert listed["total"] == 1 and listed["items"][0]["title"] == "Club rules"
        assert listed["scopes"] == [{"scope": "global", "documents": 1}]
        hits = (await p.client.get("/api/knowledge/search", params={"q": "harbour Fridays"})).json()["items"]
        assert hits and hits[0]["doc"] == doc["id"] and "harbour" in hits[0]["text"]
        for bad in ({"q": ""}, {"q": "harbour", "top_k": "0"}, {"q": "the of and"}, {"q": "x", "scope": "nope"}):
            assert (await p.client.get("/api/knowledge/search", params=bad)).status_code == 400, bad
        await p.ctx.services.knowledge.add_document("g:club", "Chat notes", "the chat's own notes about boats")
        chat = (await p.client.get("/api/knowledge", params={"scope": "g:club"})).json()
        assert chat["total"] == 1 and {s["scope"] for s in chat["scopes"]} == {"global", "g:club"}
        assert (await p.client.delete("/api/knowledge/scope/global")).status_code == 400
        pruned = await p.client.delete("/api/knowledge/scope/g:club")
        assert pruned.status_code == 200 and len(pruned.json()["deleted"]) == 1
        assert p.ops("kb_prune")[0]["detail"] == {"scope": "g:club", "documents": 1}
        assert (await p.client.delete("/api/knowledge/scope/g:club")).status_code == 404
        gone = await p.client.delete(f"/api/knowledge/{doc['id']}")
        assert gone.status_code == 200 and p.ops("kb_delete")[0]["detail"]["id"] == doc["id"]
        assert (await p.client.delete(f"/api/knowledge/{doc['id']}")).status_code == 404
        assert (await p.client.get("/api/knowledge")).json()["total"] == 0


async def test_memory_per_chat_listed_and_deleted(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        knowledge = p.ctx.services.knowledge
        first = await knowledge.save_memory("g:club", "Alice likes green tea")
        await knowledge.save_memory("g:club", "The club meets on Fridays")
        await knowledge.save_memory("f:bob", "Bob's birthday is in May")
        overview = (await p.client.get("/api/memory")).json()
        assert overview["items"] == [] and overview["sessions"] == [{"session": "f:bob", "memories": 1},
                                                                    {"session": "g:club", "memories": 2}]
        club = (await p.client.get("/api/memory", params={"session": "g:club", "size": 1})).json()
        assert club["total"] == 2 and len(club["items"]) == 1 and club["items"][0]["text"]
        texts = {m["text"] for m in (await p.client.get("/api/memory", params={"session": "g:club"})).json()["items"]}
        assert texts == {"Alice likes green tea", "The club meets on Fridays"}
        gone = await p.client.delete(f"/api/memory/{first.doc.id}")
        assert gone.status_code == 200
        assert p.ops("memory_delete")[0]["detail"] == {"id": first.doc.id, "session": "g:club"}
        assert (await p.client.delete(f"/api/memory/{first.doc.id}")).status_code == 404
        assert (await p.client.get("/api/memory", params={"session": "g:club"})).json()["total"] == 1
        assert (await p.client.get("/api/memory", params={"session": "g" * 400})).status_code == 400
