"""Quotas, usage and the query log through the real loop (Q1-Q3, G1): the scripted server's reported
usage against the stored sums, refusals, day boundaries, blocked calls, crashes and secrets."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

from ania.fakes.openai_server import Calls, Reply, Stall
from ania.operations import call_status
from checkpoints.sessions import latest_checkpoint
from core.settings import QuotaSettings
from services.store import AppStore
from services.usage import QueryFilter, Quota
from services.usage.quota import KEEP_DAYS
from tests.conftest import make_settings
from tests.subagent_helpers import Router, wait_for
from tests.test_gates import Marker


def served(server) -> int:
    return sum(r.usage.get("total_tokens", 0) for r in server.requests)


async def test_parallel_calls_and_a_subagent_are_counted_once_everywhere(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("two at once", Calls([("subagent_run", {"task": "TASK-1"}), ("time", {})]), Reply("both"))
        .on("TASK-1", Calls([("time", {})]), Reply("one")))
    result = await (await chat.entry.submit("f:u1", "u1", "two at once"))
    assert result.reply == "both" and len(scripted_llm.requests) == 4
    services = chat.engine.services
    used = services.quota.used("f:u1")
    assert used.session == used.total == served(scripted_llm) == result.usage["total_tokens"]
    [row] = services.queries.rows(QueryFilter())
    assert row["status"] == "success" and row["total_tokens"] == served(scripted_llm)
    assert row["tokens"]["requests"] == 4 and row["checkpoint"] == "" and row["thread"] == "f:u1"
    assert sorted((c["name"], c["status"]) for c in row["calls"]) == [("subagent_run", "ok"), ("time", "ok")]
    assert row["call_count"] == 2 and row["sender"] == "u1" and row["input"] == "two at once"
    # A second turn: its row starts from the checkpoint the first one ended on; the counters add up.
    start = await latest_checkpoint(chat.engine.graph.checkpointer, "f:u1")
    scripted_llm.respond_with(None)
    await chat.say("g:other", "u2", "hi")
    await chat.say("f:u1", "u1", "again")
    newest = services.queries.rows(QueryFilter(session="f:u1"))[0]
    assert newest["checkpoint"] == start and newest["input"] == "again"
    assert services.quota.used("f:u1").total == served(scripted_llm)
    assert services.quota.used("f:u1").session == served(scripted_llm) - services.quota.used("g:other").session
    text = (await chat.say("f:u1", "u1", "/usage"))[0]
    assert f"this chat {services.quota.used('f:u1').session:,} tokens (no limit)" in text
    assert f"since it began: {services.quota.used('f:u1').session:,} tokens in 5 model request(s)" in text


async def test_a_session_over_its_quota_gets_one_reply_and_no_model_call(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, quota={"session_daily_tokens": 10}))
    # The quota is crossed by the turn's first model call: its tool call runs, its next model call is not made
    # (the quota is checked before every model call), and the turn ends with the quota's reply.
    scripted_llm.script([Calls([("time", {})])])
    [stopped] = await chat.say("g:club", "u1", "what time")
    assert stopped.startswith("This chat has used its daily token quota") and len(scripted_llm.requests) == 1
    used = chat.engine.services.quota.used("g:club").session
    assert used == scripted_llm.requests[0].usage["total_tokens"] > 10  # counted once
    row = chat.engine.services.queries.rows(QueryFilter(session="g:club"))[0]
    assert row["status"] == "quota" and row["total_tokens"] == used
    asked = len(scripted_llm.requests)
    [refusal] = await chat.say("g:club", "u2", "and now?")
    assert "daily token quota" in refusal and "resets at" in refusal and "(UTC, in " in refusal
    assert len(scripted_llm.requests) == asked  # no model call
    row = chat.engine.services.queries.rows(QueryFilter(session="g:club"))[0]
    assert row["status"] == "quota" and row["total_tokens"] == 0 and row["reply"].startswith("This chat has used")
    # Another session still has its own quota; an admin is exempt.
    scripted_llm.script([Reply("fine"), Reply("admin answer")])
    assert await chat.say("g:other", "u1", "hello") == ["fine"]
    assert await chat.say("g:club", "admin", "please") == ["admin answer"]


async def test_admins_are_refused_too_when_not_exempt_and_the_global_quota_counts_all(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, quota={"global_daily_tokens": 10, "admins_exempt": False}))
    scripted_llm.script([Reply("first")])
    assert await chat.say("f:a", "a", "one") == ["first"]
    [refusal] = await chat.say("f:admin", "admin", "two")
    assert "for all chats" in refusal and len(scripted_llm.requests) == 1


async def test_the_quota_day_starts_at_midnight_in_its_timezone(tmp_path):
    store = AppStore(tmp_path / "ania.db")
    zone = ZoneInfo("Asia/Shanghai")
    now = [datetime(2026, 3, 1, 23, 59, tzinfo=zone).timestamp()]
    quota = Quota(QuotaSettings(session_daily_tokens=100, timezone="Asia/Shanghai"), store, lambda u: False,
                  now=lambda: now[0])
    quota.add("g:1", 150)
    assert quota.day() == "2026-03-01" and quota.used("g:1").session == 150
    refusal = quota.call_refusal(quota.open("g:1", "u", tally=False))
    assert refusal is not None and "resets at 2026-03-02 00:00 (Asia/Shanghai, in 1 min)" in refusal
    now[0] += 120  # 00:01 in Shanghai, still 16:01 the day before in UTC
    assert quota.day() == "2026-03-02" and quota.used("g:1").session == 0 and quota.call_refusal(quota.open("g:1", "u", tally=False)) is None
    quota.add("g:1", 5)
    keys = [r["key"] for r in store.query("SELECT key FROM kv ORDER BY key")]
    assert keys == ["daily:2026-03-01:g:1", "daily:2026-03-01:global", "daily:2026-03-02:g:1",
                    "daily:2026-03-02:global"]  # kept for the usage history (KEEP_DAYS)
    assert quota.daily("2026-03-01", "2026-03-02") == {"2026-03-01": 150, "2026-03-02": 5}
    assert quota.daily("2026-03-02", "2026-03-02", "g:1") == {"2026-03-02": 5}
    assert quota.totals("2026-03-01", "2026-03-02", 10) == [("g:1", 155)] and quota.today() == {"g:1": 5, "global": 5}
    now[0] += KEEP_DAYS * 86400
    quota.add("g:2", 1)
    keys = [r["key"] for r in store.query("SELECT key FROM kv ORDER BY key")]
    assert keys == ["daily:2026-04-02:g:2", "daily:2026-04-02:global"]  # days older than KEEP_DAYS were pruned
    store.close()


async def test_blocked_calls_show_their_gate_in_the_query_log(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    chat.engine.services.shared_tools.add([Marker()])
    await chat.say("f:admin", "admin", "/plan on")
    scripted_llm.script([Calls([("write_note", {"key": "a"}), ("time", {}), ("no_such_tool", {})]), Reply("ok")])
    await chat.say("f:admin", "admin", "note it")
    [row] = chat.engine.services.queries.rows(QueryFilter(tool="write_note"))
    assert [c["status"] for c in row["calls"]] == ["blocked by plan mode", "ok", "error"]
    assert chat.engine.services.queries.rows(QueryFilter(tool="nothing")) == []
    assert call_status(None) == "no result"


async def test_a_secret_given_to_config_set_is_masked_in_the_row_and_the_log(scripted_llm, make_chat, caplog):
    chat = await make_chat(make_settings(scripted_llm), approval_timeout_sec=0.2)
    secret = "sk-live-0123456789abcdef"
    scripted_llm.script([Calls([("config_set", {"key": "llm.api_key", "value": secret})]), Reply("asked")])
    with caplog.at_level(logging.INFO), caplog.at_level(logging.DEBUG, logger="ania.turn"):  # as `ania -v`
        await chat.say("g:club", "u1", "set the key")
    [row] = chat.engine.services.queries.rows(QueryFilter())
    [call] = row["calls"]
    assert call["name"] == "config_set" and call["status"] == "blocked by approval"
    assert secret not in call["args"] and "llm.api_key" in call["args"]
    assert secret not in caplog.text
    assert any(r.name == "ania.turn" and "session=g:club status=success" in r.getMessage() for r in caplog.records)
    steps = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert steps[:2] == ["step session=g:club n=1 model called config_set",
                         "step session=g:club n=2 config_set blocked"]


async def test_stopped_and_timed_out_turns_keep_their_status_and_tokens(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, bot={"msg_event_timeout_sec": 1.0}))
    scripted_llm.script([Calls([("time", {})]), Stall(3.0)])
    await chat.say("f:u1", "u1", "slow")
    [row] = chat.engine.services.queries.rows(QueryFilter())
    assert row["status"] == "timeout" and row["call_count"] == 1
    answered = sum(r.usage.get("total_tokens", 0) for r in scripted_llm.requests)
    assert row["total_tokens"] == answered > 0 and chat.engine.services.quota.used("f:u1").session == answered
    scripted_llm.script([Stall(3.0)])
    task = await chat.entry.submit("f:u1", "u1", "stop me")
    await wait_for(lambda: chat.engine.services.queries.rows(QueryFilter(status="running")))
    await chat.say("f:u1", "u1", "/stop")
    await asyncio.gather(task, return_exceptions=True)
    assert chat.engine.services.queries.rows(QueryFilter())[0]["status"] == "stopped"


async def test_rows_left_running_by_a_dead_process_become_interrupted(scripted_llm, make_chat, tmp_path):
    store = AppStore(tmp_path / "data" / "ania.db")
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await child.wait()  # its pid belongs to nobody now
    dead = store.write("INSERT INTO query_log (started, session, status, pid) VALUES (1, 'g:1', 'running', ?)",
                       [child.pid])
    mine = store.write("INSERT INTO query_log (started, session, status, pid) VALUES (1, 'g:2', 'running', ?)",
                       [os.getpid()])
    store.close()
    chat = await make_chat(make_settings(scripted_llm))
    log = chat.engine.services.queries
    assert log.get(dead)["status"] == "interrupted" and log.get(mine)["status"] == "running"


async def test_the_query_log_can_be_turned_off(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, logs={"query_log": False}))
    scripted_llm.script([Reply("hi")])
    assert await chat.say("f:u1", "u1", "hello") == ["hi"]
    assert chat.engine.services.queries.rows(QueryFilter()) == []
    assert chat.engine.services.quota.used("f:u1").session == served(scripted_llm)


async def test_ania_logs_reads_both_logs_as_json_lines_when_piped(scripted_llm, make_chat, tmp_path, monkeypatch,
                                                                  capsys):
    import json

    from ania.cli import main

    chat = await make_chat(make_settings(scripted_llm), approval_timeout_sec=0.2)
    scripted_llm.script([Calls([("time", {})]), Reply("noon"), Calls([("config_set", {"key": "bot.admins",
                                                                                       "value": "[]"})]), Reply("no")])
    await chat.say("g:club", "u1", "what time")
    await chat.say("f:u2", "u2", "drop the admins")
    await chat.engine.close()
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path / "config"))

    def run(*argv: str) -> tuple[int, list[dict]]:
        code = main(list(argv))
        out = capsys.readouterr().out
        return code, [json.loads(line) for line in out.splitlines() if line.strip()]

    code, rows = run("logs", "queries")
    assert code == 0 and [r["session"] for r in rows] == ["f:u2", "g:club"]  # newest first
    assert run("logs", "queries", "--tool", "time", "--since", "1h")[1][0]["input"] == "what time"
    assert run("logs", "queries", "--session", "f:u2", "-n", "5")[1][0]["calls"][0]["status"] == "blocked by approval"
    assert run("logs", "queries", "--since", "2000-01-01", "--status", "error")[1] == []
    assert main(["logs", "queries", "--status", "weird"]) == 2 and "unknown status" in capsys.readouterr().err
    code, [full] = run("logs", "show", str(rows[1]["id"]))
    assert code == 0 and full["calls"][0]["name"] == "time" and full["reply"] == "noon"
    assert main(["logs", "show", "999"]) == 1 and "no query 999" in capsys.readouterr().err
    code, ops = run("logs", "ops", "--kind", "tool_approval")
    assert code == 0 and ops[0]["detail"]["tool"] == "config_set" and ops[0]["detail"]["decision"] == "deny"


async def test_a_custom_command_is_logged_as_a_command(scripted_llm, make_chat, tmp_path):
    from tests.test_commands import COMMANDS, write_commands

    write_commands(tmp_path, COMMANDS)
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("hello")])
    assert await chat.say("f:u1", "u1", "/tr hallo") == ["hello"]
    [row] = chat.engine.services.queries.rows(QueryFilter())
    assert row["trigger"] == "command" and row["input"].startswith("Translate")
