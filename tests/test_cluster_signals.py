"""Approvals and /stop across processes sharing one Postgres store (issue 25): two engines, each with its own
data directory and message entry, stand for the worker running a chat's turn (A) and the gateway where the
chat's next messages arrive (B). The answer to A's question, or a /stop, typed at B reaches A's turn with the
rules and texts a single process has (services/gates/approvals_shared.py, ania/flow/stop.py)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from core.settings import Settings
from services.cluster import LocalSignals, Payload, PgSignals
from services.cluster.signals import CHANNEL
from services.gates.admins import Admins
from services.gates.approval_types import ApprovalRequest
from services.gates.approvals import Approvals
from services.gates.approvals_shared import SharedQuestions
from services.store import open_store
from services.usage import QueryFilter
from tests.approval_helpers import turn_results
from tests.conftest import Chat, make_settings
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.test_gates import wait_for

TIME = Calls([("time", {"timezone": "UTC"})])
ASKED = re.compile(r'Reply "allow ([0-9a-f]{4})"')


async def two(make_chat: Callable[..., Any], llm: ScriptedOpenAI, url: str, tmp_path: Path,
              **sections: dict[str, Any]) -> tuple[Chat, Chat]:
    """A (the worker) and B (the gateway) on one Postgres store; "time" needs an approval."""
    settings = make_settings(llm, cluster={"postgres_url": url}, approval={"tools": ["time"]}, **sections)
    a = await make_chat(settings, data=tmp_path / "a")
    b = await make_chat(settings, data=tmp_path / "b")
    return a, b


def open_rows(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM approvals_open").fetchone()
    return int(row[0]) if row else -1


def latest_prompt(chat: Chat, place: str) -> str | None:
    ids = [m[1] for t in chat.out.get(place, []) if (m := ASKED.search(t))]
    return ids[-1] if ids else None


async def asked(a: Chat, b: Chat, place: str) -> str:
    """The id of A's latest question, once its prompt is in `place` and B's entry sees it waiting there."""
    await wait_for(lambda: latest_prompt(a, place) in b.engine.services.approvals.pending_ids(place))
    assert a.engine.services.approvals.is_waiting(place)
    rid = latest_prompt(a, place)
    assert rid is not None
    return rid


async def time_asked(a: Chat, b: Chat, llm: ScriptedOpenAI, reply: str) -> tuple[Any, str]:
    """u1 asks A in group g:1, A's model calls "time" (then says `reply`): the turn's future and the question's id."""
    llm.script([TIME, Reply(reply)])
    task = await a.entry.submit("g:1", "u1", "what time is it?")
    return task, await asked(a, b, "g:1")


async def test_an_approval_asked_on_one_process_is_allowed_by_id_and_denied_bare_on_another(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    a, b = await two(make_chat, scripted_llm, pg_url, tmp_path)
    task, rid = await time_asked(a, b, scripted_llm, "it is time")
    assert await b.say("g:1", "admin", f"allow {rid}") == [f'Allowed: "time" ({rid}).']
    assert (await task).reply == "it is time"
    [result] = turn_results(scripted_llm)
    assert not result.startswith("Not run")
    assert open_rows(pg_url) == 0

    # A dead process's question in the same chat (nobody renews it) does not make a bare answer ambiguous.
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO approvals_open (id, owner, session, request, created, alive_until) "
                     "VALUES ('dead', 'gone/1/x', 'g:1', '{\"tool\": \"bash\"}', 1, %s)", [time.time() - 1])
    task, rid = await time_asked(a, b, scripted_llm, "as you wish")
    assert b.engine.services.approvals.pending_ids("g:1") == [rid]
    assert await b.say("g:1", "admin", "deny") == [f'Denied: "time" ({rid}).']
    await task
    assert turn_results(scripted_llm) == ['Not run: user admin denied the call to "time".']
    assert open_rows(pg_url) == 0  # the dead row went with the next question; the decided one with its wait
    assert a.engine.services.approvals.held() == b.engine.services.approvals.held() == 0
    decisions = [(o["actor"], o["detail"]["decision"]) for o in a.engine.services.store.ops("tool_approval")]
    assert decisions == [("admin", "allow"), ("admin", "deny")]


async def test_who_may_answer_is_the_same_at_the_other_process(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    a, b = await two(make_chat, scripted_llm, pg_url, tmp_path, bot={"admins": ["admin", "admin2"]})
    task, rid = await time_asked(a, b, scripted_llm, "done")
    assert await b.say("g:1", "u2", f"allow {rid}") == [
        "You cannot answer this approval: only the person who asked or an admin can decide."]
    assert await b.say("g:1", "u1", "allow") == [  # self_approve_in_groups is off
        "You cannot answer this approval: in a group only an admin can approve (approval.self_approve_in_groups "
        "is off)."]
    assert await b.say("g:1", "admin", "allow beef") == [
        f'No approval beef is waiting here. Waiting: {rid} ("time" in g:1).']
    assert not task.done()
    assert await b.say("g:1", "admin2", "deny") == [f'Denied: "time" ({rid}).']
    await task

    # A configuration change: its prompt goes to the other admin's private chat; the requester cannot approve it.
    scripted_llm.script([Calls([("config_set", {"key": "agent.max_rounds", "value": "5"})]), Reply("changed")])
    task = await a.entry.submit("f:admin", "admin", "fewer rounds")
    rid = await asked(a, b, "f:admin2")
    assert a.out["f:admin2"][0].startswith('Tool "config_set" wants to run')
    assert await b.say("f:admin", "admin", "allow") == [
        "You cannot answer this approval: the requester cannot approve their own configuration change."]
    assert await b.say("f:admin2", "admin2", "yes") == [f'Allowed: "config_set" ({rid}).']
    await task
    assert turn_results(scripted_llm)[0].startswith("Set agent.max_rounds = 5")
    assert open_rows(pg_url) == 0


async def test_an_unanswered_question_times_out_and_leaves_no_row(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    settings = make_settings(scripted_llm, cluster={"postgres_url": pg_url}, approval={"tools": ["time"]})
    a = await make_chat(settings, data=tmp_path / "a", approval_timeout_sec=0.3)
    b = await make_chat(settings, data=tmp_path / "b")
    task, rid = await time_asked(a, b, scripted_llm, "no time then")
    await task
    assert turn_results(scripted_llm) == ['Not run: no approval for "time" (timed out after 0.3 s).']
    assert f'Approval {rid} for "time" timed out; the call was not run.' in a.out["g:1"]
    assert open_rows(pg_url) == 0
    assert b.engine.services.approvals.take_reply("g:1", "admin", f"allow {rid}") is None  # an ordinary message now
    assert b.engine.services.approvals.pending_ids("g:1") == []


async def test_a_lost_signal_is_made_up_for_by_the_poll(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    a, b = await two(make_chat, scripted_llm, pg_url, tmp_path)
    task, rid = await time_asked(a, b, scripted_llm, "late but fine")
    await a.engine.services.signals.aclose()  # A hears no signal any more: B's NOTIFY is lost
    assert await b.say("g:1", "admin", f"allow {rid}") == [f'Allowed: "time" ({rid}).']
    assert (await task).reply == "late but fine"
    assert not turn_results(scripted_llm)[0].startswith("Not run")
    assert open_rows(pg_url) == 0


async def test_an_admins_stop_at_the_gateway_stops_the_turn_on_the_worker(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    a, b = await two(make_chat, scripted_llm, pg_url, tmp_path)
    assert await b.say("g:1", "admin", "/stop") == ["Nothing to stop."]  # no process holds the chat
    scripted_llm.script([Reply("too late", delay=5)])
    task = await a.entry.submit("g:1", "u1", "a long essay")
    await wait_for(lambda: len(scripted_llm.requests) == 1)
    queued = await a.entry.submit("g:1", "u2", "and mine")
    assert await b.say("g:1", "admin", "/stop") == ["Stopped 2 running or queued message(s)."]
    assert task.cancelled() and queued.cancelled()
    rows = a.engine.services.queries.rows(QueryFilter(session="g:1"))
    assert sorted((r["input"], r["status"]) for r in rows) == [("a long essay", "stopped"), ("and mine", "stopped")]
    assert a.entry.held() == 0 and a.engine.services.inbox.count() == 0


async def test_a_members_stop_at_the_gateway_drops_only_their_messages(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    a, b = await two(make_chat, scripted_llm, pg_url, tmp_path)
    scripted_llm.script([Reply("for u2", delay=3), Reply("next")])
    first = await a.entry.submit("g:1", "u2", "a long essay")
    await wait_for(lambda: len(scripted_llm.requests) == 1)
    mine = await a.entry.submit("g:1", "u1", "MINE")
    theirs = await a.entry.submit("g:1", "u2", "THEIRS")
    assert await b.say("g:1", "u1", "/stop") == ["Stopped 1 running or queued message(s)."]
    assert mine.cancelled()
    assert await b.say("g:1", "u3", "/stop") == [
        "Only an admin or the person who asked can stop a running message."]
    assert (await first).reply == "for u2" and (await theirs).reply == "next"
    last = scripted_llm.requests[-1].messages[-1]["content"]
    assert "THEIRS" in str(last) and "MINE" not in str(last)


async def test_signals_skip_what_is_not_theirs_and_listen_again_after_a_lost_connection(
        tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    store = open_store(tmp_path, pg_url)
    one, other = PgSignals(pg_url, store), PgSignals(pg_url, store)
    try:
        await one.start()
        await other.start()
        heard: list[Payload] = []

        async def answer(payload: Payload) -> Payload | None:
            heard.append(payload)
            return {"n": payload["n"] + 1}

        other.subscribe("ping", answer)
        with psycopg.connect(pg_url, autocommit=True) as conn:  # not JSON, not an envelope: ignored
            conn.execute(f"NOTIFY {CHANNEL}, 'not json'")
            conn.execute(f"NOTIFY {CHANNEL}, '[1, 2]'")
            conn.execute(f"NOTIFY {CHANNEL}, '{{\"t\": \"ping\"}}'")
        assert await one.request("ping", {"n": 1}, wait_sec=5) == {"n": 2}
        assert heard == [{"n": 1}]
        assert await other.request("ping", {"n": 1}, wait_sec=0.2) is None  # its own handler is not asked

        assert other.conn is not None
        pid = other.conn.info.backend_pid
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", [pid])
        await wait_for(lambda: other.conn is not None and other.conn.info.backend_pid != pid, timeout=10)
        assert await one.request("ping", {"n": 5}, wait_sec=5) == {"n": 6}
        assert one.held() == other.held() == 0
    finally:
        await one.aclose()
        await other.aclose()
        store.close()


async def test_with_sqlite_nothing_is_shared_and_nothing_waits(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any]) -> None:
    chat = await make_chat(make_settings(scripted_llm))
    services = chat.engine.services
    assert isinstance(services.signals, LocalSignals) and not services.signals.shared
    assert await services.signals.request("stop", {"session": "g:1", "user": "admin"}, wait_sec=60) is None
    assert await chat.say("g:1", "admin", "/stop") == ["Nothing to stop."]
    assert services.store.query("SELECT count(*) AS n FROM approvals_open") == [{"n": 0}]


async def test_an_answer_written_before_the_timeout_counts_though_its_signal_was_lost(
        tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    settings = Settings(bot={"admins": ["admin"]})
    told: list[tuple[str, str]] = []

    async def notify(place: str, text: str) -> bool:
        told.append((place, text))
        return True

    stores = [open_store(tmp_path, pg_url), open_store(tmp_path, pg_url)]
    deaf = PgSignals(pg_url, stores[0])  # never started: A hears no signal, and its poll comes after its timeout
    hearing = PgSignals(pg_url, stores[1])
    await hearing.start()
    questions = SharedQuestions(stores[0], deaf, poll_sec=60)
    a = Approvals(settings, Admins(settings, ()), notify, timeout_sec=0.5, shared=questions)
    b = Approvals(settings, Admins(settings, ()), notify, shared=SharedQuestions(stores[1], hearing))
    request: ApprovalRequest = {"type": "tool_approval", "kind": "human", "tool": "time", "args": {},
                                "call_id": "c1", "reason": "test", "session": "g:1", "requester": "u1",
                                "prompt": "time?"}
    try:
        wait = asyncio.create_task(a.ask(request))
        await wait_for(lambda: b.pending_ids("g:1") != [])
        [rid] = b.pending_ids("g:1")
        assert b.take_reply("g:1", "admin", "allow") == f'Allowed: "time" ({rid}).'
        assert await wait == {"decision": "allow", "by": "admin"}  # found at the timeout, not denied
        assert not [t for _, t in told if "timed out" in t]
        assert open_rows(pg_url) == 0 and a.held() == b.held() == 0
    finally:
        await questions.aclose()
        await hearing.aclose()
        for store in stores:
            store.close()


async def test_one_process_on_postgres_answers_its_own_questions_through_the_table(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    settings = make_settings(scripted_llm, cluster={"postgres_url": pg_url}, approval={"tools": ["time"]})
    a = await make_chat(settings)
    task, rid = await time_asked(a, a, scripted_llm, "one process")
    assert await a.say("g:1", "admin", "同意") == [f'Allowed: "time" ({rid}).']
    assert (await task).reply == "one process"
    assert open_rows(pg_url) == 0 and a.engine.services.approvals.held() == 0


async def test_the_panel_of_another_process_lists_and_answers_the_question(
        scripted_llm: ScriptedOpenAI, make_chat: Callable[..., Any], tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    a, b = await two(make_chat, scripted_llm, pg_url, tmp_path)
    task, rid = await time_asked(a, b, scripted_llm, "the operator said yes")
    approvals = b.engine.services.approvals
    assert [(q.id, q.request["tool"], q.request["session"]) for q in approvals.open_questions()] == [
        (rid, "time", "g:1")]
    answered = approvals.answer_as_operator(rid, "allow", "panel")
    assert answered is not None and answered.id == rid
    assert (await task).reply == "the operator said yes"
    assert approvals.answer_as_operator(rid, "deny", "panel") is None  # decided: nothing waits any more
    assert approvals.open_questions() == [] and open_rows(pg_url) == 0
