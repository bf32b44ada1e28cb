"""Teams through the real loop (A4, Q2, R1): save, list, run in parallel, faults, /stop, bad input."""

from __future__ import annotations

import re

from ania.fakes.openai_server import Calls, Fail, Reply, Stall
from services.hooks.manager import HookManager
from services.teams import GLOBAL, Member, Team
from tests.conftest import make_settings
from tests.subagent_helpers import Router, Sleepy, requests_of, tool_results, wait_for
from tests.test_subagents import RECURSION, Recorder

TRIO = [{"name": "alice", "role": "ROLE-ALICE check facts"}, {"name": "bob", "role": "ROLE-BOB find risks"},
        {"name": "卡罗尔", "role": "ROLE-CAROL write it up"}]
LINE = r"\[{name} {status}, [0-9.]+ s, \d+ model calls?, \d+ tokens\]"


def save_trio(chat, session: str = "f:u1", **extra) -> None:
    team = Team("review", "Reviews a plan.", tuple(Member(m["name"], m["role"]) for m in TRIO), session, **extra)
    chat.engine.services.teams.save(team)


async def test_save_list_and_run_a_team_in_parallel(scripted_llm, make_chat, tmp_path):
    rec = Recorder()
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(tmp_path / "config", [rec]))
    sleepy = Sleepy(seconds=0.5)
    chat.engine.services.shared_tools.add([sleepy])
    router = Router().on("save it", Calls([("team_save", {"name": "review", "purpose": "Reviews a plan.",
                                                          "members": TRIO})]), Reply("saved"))
    router.on("list them", Calls([("team_list", {})]), Reply("listed"))
    router.on("run it", Calls([("team_run", {"name": "review", "task": "TASK-PLAN ship on friday"})]), Reply("done"))
    for marker, label in (("ROLE-ALICE", "alice"), ("ROLE-BOB", "bob"), ("ROLE-CAROL", "carol")):
        router.on(marker, Calls([("sleepy", {"label": label})], text="working"), Reply(f"{label} says fine"))
    scripted_llm.respond_with(router)
    assert await chat.say("f:u1", "u1", "save it") == ["saved"]
    assert tool_results(scripted_llm.requests[-1]) == ['Saved team "review" (this chat, 3 members). Run it with team_run.']
    await chat.say("f:u1", "u1", "list them")
    assert tool_results(scripted_llm.requests[-1]) == [
        "Teams (1):\n- review (this chat): Reviews a plan. Members: alice, bob, 卡罗尔."]
    result = await (await chat.entry.submit("f:u1", "u1", "run it"))
    assert result.reply == "done" and "working" not in chat.out["f:u1"]
    [gathered] = tool_results(scripted_llm.requests[-1])
    blocks = gathered.split("\n\n")
    assert re.fullmatch(r'Team "review": 3 members in [0-9.]+ s \(3 ok\)\.', blocks[0])
    for block, name, label in zip(blocks[1:], ["alice", "bob", "卡罗尔"], ["alice", "bob", "carol"], strict=True):
        head, answer = block.split("\n", 1)
        assert re.fullmatch(LINE.format(name=name, status="ok"), head) and answer == f"{label} says fine"
    spans = sorted(sleepy.spans.values())
    assert len(spans) == 3 and max(s for s, _ in spans) < min(e for _, e in spans), "members must overlap"
    for marker in ("ROLE-ALICE", "ROLE-BOB", "ROLE-CAROL"):
        first = requests_of(scripted_llm, marker)[0]
        assert not set(first.tool_names) & RECURSION and "sleepy" in first.tool_names
        assert "TASK-PLAN ship on friday" in first.messages[1]["content"]
    assert result.usage["requests"] == len(scripted_llm.requests) - 4  # the save and list turns were earlier
    assert result.usage["total_tokens"] == sum(r.usage["total_tokens"] for r in scripted_llm.requests[4:])
    member_events = [(n, t) for n, k, t in rec.events if k == "team_member"]
    assert sorted(member_events, key=str) == sorted([("PostToolUse", "sleepy"), ("PreToolUse", "sleepy"),
                                                     ("SubagentStop", None)] * 3, key=str)


async def test_a_failing_and_a_hanging_member_leave_the_others_alone(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    save_trio(chat, timeout_sec=2)
    scripted_llm.respond_with(Router()
        .on("run it", Calls([("team_run", {"name": "review", "task": "TASK-X"})]), Reply("done"))
        .on("ROLE-ALICE", Reply("alice ok"))
        .on("ROLE-BOB", Fail(500))
        .on("ROLE-CAROL", Stall(30)))
    assert await chat.say("f:u1", "u1", "run it") == ["done"]
    [gathered] = tool_results(scripted_llm.requests[-1])
    head, alice, bob, carol = gathered.split("\n\n")
    assert head.endswith("(1 ok, 1 failed, 1 timed out).")
    assert re.fullmatch(LINE.format(name="alice", status="ok") + "\nalice ok", alice)
    assert re.fullmatch(LINE.format(name="bob", status="failed") + r"\nSorry, the model endpoint failed \(HTTP 500\)\. "
                        r"Please try again in a moment\.", bob)
    assert re.fullmatch(LINE.format(name="卡罗尔", status="timed out after 2 s")
                        + r"\nIt had not finished and had nothing to show yet\.", carol)


async def test_bad_input_is_refused_clearly(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    eleven = [{"name": f"m{i}", "role": "r"} for i in range(11)]
    calls = [("team_run", {"name": "ghost", "task": "x"}),
             ("team_save", {"name": "big", "purpose": "p", "members": eleven}),
             ("team_save", {"name": "bad name!", "purpose": "p", "members": TRIO}),
             ("team_save", {"name": "x" * 33, "purpose": "p", "members": TRIO}),
             ("team_save", {"name": "g", "purpose": "p", "members": TRIO, "scope": "global"}),
             ("team_delete", {"name": "g", "scope": "global"}),
             ("team_save", {"name": "twice", "purpose": "p", "members": [TRIO[0], TRIO[0]]}),
             ("team_save", {"name": "empty", "purpose": "p", "members": []}),
             ("team_save", {"name": "lines", "purpose": "two\nlines", "members": TRIO}),
             ("team_run", {"name": "review", "task": "   "})]
    scripted_llm.respond_with(Router().on("try", Calls(calls), Reply("ok")))
    await chat.say("g:grp", "u1", "try")
    assert tool_results(scripted_llm.requests[-1]) == [
        'Error: no team named "ghost" here. No teams yet; save one with team_save.',
        'Error: a team has at most 10 members; "big" has 11',
        'Error: invalid team name "bad name!": use 1 to 32 characters, each a CJK character, a letter, a digit, '
        '"_" or "-"',
        f'Error: invalid team name "{"x" * 33}": use 1 to 32 characters, each a CJK character, a letter, a digit, '
        '"_" or "-"',
        "Error: only an admin can save a global team",
        "Error: only an admin can delete a global team",
        'Error: two members are named "alice"; member names must differ',
        "Error: a team needs at least one member",
        "Error: the purpose must be one line of 1 to 200 characters",
        "Error: the task is empty; describe what the subagent should do and what its answer should contain",
    ]
    assert chat.engine.services.teams.visible("g:grp") == []


async def test_eleven_members_stored_by_hand_are_refused_at_run(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    members = [{"name": f"m{i}", "role": "r"} for i in range(11)]
    chat.engine.services.store.kv_set("team:f:u1", {"big": {"name": "big", "purpose": "p", "scope": "f:u1",
                                                            "members": members}})
    scripted_llm.respond_with(Router().on("run big", Calls([("team_run", {"name": "big", "task": "x"})]), Reply("ok")))
    await chat.say("f:u1", "u1", "run big")
    assert tool_results(scripted_llm.requests[-1]) == ['Error: a team has at most 10 members; "big" has 11']
    assert len(scripted_llm.requests) == 2  # no member ran


async def test_global_teams_are_admin_only_and_seen_everywhere(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("share it", Calls([("team_save", {"name": "评审", "purpose": "Shared.", "members": TRIO[:1],
                                               "scope": "global"})]), Reply("shared"))
        .on("mine", Calls([("team_save", {"name": "local", "purpose": "Mine.", "members": TRIO[1:2]})]), Reply("ok"))
        .on("what teams", Calls([("team_list", {})]), Reply("ok"))
        .on("drop it", Calls([("team_delete", {"name": "评审", "scope": "global"})]), Reply("dropped"))
        .on("drop theirs", Calls([("team_delete", {"name": "local"}), ("team_run", {"name": "local", "task": "x"})]),
            Reply("no")))
    await chat.say("g:a", "admin", "share it")
    await chat.say("g:a", "u1", "mine")
    await chat.say("g:b", "u2", "what teams")
    assert tool_results(scripted_llm.requests[-1]) == ["Teams (1):\n- 评审 (global): Shared. Members: alice."]
    await chat.say("g:a", "u1", "what teams")
    assert tool_results(scripted_llm.requests[-1]) == [
        "Teams (2):\n- local (this chat): Mine. Members: bob.\n- 评审 (global): Shared. Members: alice."]
    await chat.say("g:b", "u2", "drop theirs")  # another chat's team can be neither deleted nor run from here
    assert tool_results(scripted_llm.requests[-1]) == [
        'Error: no team named "local" in this chat', 'Error: no team named "local" here. Teams here: 评审.']
    await chat.say("g:b", "u2", "drop it")
    assert tool_results(scripted_llm.requests[-1]) == ["Error: only an admin can delete a global team"]
    await chat.say("g:b", "admin", "drop it")
    assert tool_results(scripted_llm.requests[-1]) == ['Deleted team "评审".']
    assert chat.engine.services.teams.in_scope(GLOBAL) == []
    ops = [(o["kind"], o["actor"], o["detail"]["scope"]) for o in chat.engine.services.store.ops()
           if o["kind"].startswith("team_")]
    assert ops == [("team_save", "admin", "global"), ("team_save", "u1", "g:a"), ("team_delete", "admin", "global")]


async def test_stop_during_a_team_run_cancels_every_member_and_nothing_reruns(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(make_settings(scripted_llm))
    sleepy = Sleepy(seconds=30)
    chat.engine.services.shared_tools.add([sleepy])
    save_trio(chat)
    router = Router().on("run it", Calls([("team_run", {"name": "review", "task": "TASK-STOP"})]))
    for marker, label in (("ROLE-ALICE", "alice"), ("ROLE-BOB", "bob"), ("ROLE-CAROL", "carol")):
        router.on(marker, Calls([("sleepy", {"label": label})]))
    router.on("still there", Reply("yes"))
    scripted_llm.respond_with(router)
    task = await chat.entry.submit("f:u1", "u1", "run it")
    await wait_for(lambda: len(sleepy.started) == 3)
    assert await chat.say("f:u1", "u1", "/stop") == ["Stopped 1 running or queued message(s)."]
    assert task.cancelled() and sorted(sleepy.cancelled) == ["alice", "bob", "carol"]
    assert await chat.say("f:u1", "u1", "still there?") == ["yes"]
    [settled] = tool_results(scripted_llm.requests[-1], last_turn=False)
    assert settled.startswith('No result: "team_run" had started, but the turn ended before it finished (stopped')
    await chat.engine.close()
    sent = len(scripted_llm.requests)
    again = await make_chat(make_settings(scripted_llm), data=tmp_path / "data")  # a restart on the same data
    again.engine.services.shared_tools.add([sleepy])
    assert await again.say("f:u1", "u1", "still there?") == ["yes"]
    assert len(scripted_llm.requests) == sent + 1 and len(sleepy.started) == 3  # no member ran again


async def test_a_process_killed_during_a_team_run_settles_and_no_member_reruns(scripted_llm, make_chat, tmp_path):
    """kill -9 while three members wait on the model: the next turn answers the dangling call, nobody reruns."""
    import asyncio
    import os
    import signal
    import sys

    from services.store import AppStore
    from services.teams import TeamStore
    from tests.terminal_helpers import ROOT, env_for

    store = AppStore(tmp_path / "data" / "ania.db")
    TeamStore(store).save(Team("review", "Reviews.", tuple(Member(m["name"], m["role"]) for m in TRIO), "f:local"))
    store.close()
    scripted_llm.respond_with(Router()
        .on("run it", Calls([("team_run", {"name": "review", "task": "TASK-KILL"})]))
        .on("ROLE-", Stall(20)))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ania.cli", "chat", env=env_for(scripted_llm, tmp_path), cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True)
    proc.stdin.write(b"run it\n")
    await proc.stdin.drain()
    await wait_for(lambda: len(requests_of(scripted_llm, "ROLE-")) == 3, timeout=40)
    os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
    chat = await make_chat(make_settings(scripted_llm), data=tmp_path / "data")
    scripted_llm.respond_with(Router().on("hello", Reply("back")))
    assert await chat.say("f:local", "local", "hello") == ["back"]
    [settled] = tool_results(scripted_llm.requests[-1], last_turn=False)
    assert settled.startswith('No result: "team_run" had started, but the turn ended before it finished '
                              "(the previous turn did not finish (restart or stop))")
    assert len(requests_of(scripted_llm, "ROLE-")) == 3  # no member ran again


def test_a_person_in_ania_chat_saves_and_runs_a_team_and_can_open_a_member_run(scripted_llm, tmp_path, monkeypatch,
                                                                              capsys):
    from tests.terminal_helpers import ania, ania_here, env_for

    scripted_llm.respond_with(Router()
        .on("save a team", Calls([("team_save", {"name": "duo", "purpose": "Two views.", "members": TRIO[:2]})]),
            Reply("saved duo"))
        .on("run the team", Calls([("team_run", {"name": "duo", "task": "TASK-T is it safe?"})]), Reply("both agree"))
        .on("ROLE-ALICE", Reply("alice: safe"))
        .on("ROLE-BOB", Reply("bob: safe")))
    env = env_for(scripted_llm, tmp_path)
    done = ania("chat", env=env, stdin="save a team\nrun the team\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["saved duo", "both agree"]
    listed = ania_here(monkeypatch, capsys, "sessions", "list", env=env)[1].splitlines()
    threads = sorted(line.split("\t")[0] for line in listed)
    assert threads[0] == "f:local" and len(threads) == 4  # the chat, two members, the team run
    member = next(t for t in threads if re.fullmatch(r"f:local/sub/[0-9a-f]{12}-1", t))
    assert any(re.fullmatch(r"f:local/team/[0-9a-f]{12}", t) for t in threads)
    shown = ania_here(monkeypatch, capsys, "sessions", "show", member, env=env)[1].splitlines()
    assert shown[0].startswith("human: You are a subagent:") and shown[-1] == "ai: alice: safe"
