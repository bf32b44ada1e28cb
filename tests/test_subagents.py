"""subagent_run through the real loop (A1-A3, Q2, H3, G2, G4): the scripted model answers by request content."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from ania.fakes.openai_server import Calls, Reply, Stall
from checkpoints.sessions import list_sessions, session_messages
from core.tool import Tool
from services.hooks import HookEvent, HookOutcome
from services.hooks.manager import HookManager
from tests.conftest import make_settings
from tests.subagent_helpers import Router, Sleepy, requests_of, tool_results, wait_for
from tests.test_gates import hooks_file

RECURSION = {"subagent_run", "team_delete", "team_list", "team_run", "team_save"}
META = re.compile(r"\[subagent ok, [0-9.]+ s, (\d+) model calls?, (\d+) tokens\]")


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    async def on_hook(self, hook: HookEvent) -> HookOutcome | None:
        self.events.append((hook.name, hook.agent_kind, hook.tool_name))
        return None


class FileParams(BaseModel):
    name: str = Field(description="file name")


class SendFile(Tool[FileParams]):
    """Sends a small file through the run's bridge, as a send_file tool will."""

    name = "send_note_file"
    description = "Send a file to the chat."
    params = FileParams

    async def execute(self, args: FileParams, ctx) -> str:
        return await ctx.bridge.send_file(args.name, "aGVsbG8=")


async def test_subagent_answers_once_with_metadata_on_its_own_thread(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    chat.engine.services.shared_tools.add([SendFile()])
    scripted_llm.respond_with(Router()
        .on("please delegate", Calls([("subagent_run", {"task": "TASK-A find the time"})]), Reply("done"))
        .on("TASK-A", Calls([("time", {}), ("send_note_file", {"name": "n.txt"})], text="thinking aloud"),
            Reply("it is noon")))
    out = await chat.say("f:u1", "u1", "please delegate")
    assert out[-1] == "done" and "thinking aloud" not in out  # intermediate text is dropped
    assert any(line.startswith("[file saved: ") and line.endswith("n.txt]") for line in out)  # to the parent's chat
    sub = requests_of(scripted_llm, "TASK-A")
    assert len(sub) == 2
    assert [m["role"] for m in sub[0].messages] == ["system", "user"]  # none of the parent's history
    assert "please delegate" not in str(sub[0].messages)
    offered = set(sub[0].tool_names)
    assert not offered & RECURSION and "todo_write" not in offered and {"time", "send_note_file"} <= offered
    assert sub[0].tool_names == sorted(sub[0].tool_names)
    [result] = tool_results(scripted_llm.requests[-1])
    first, answer = result.split("\n", 1)
    assert META.fullmatch(first) and answer == "it is noon"
    assert int(META.fullmatch(first).group(1)) == 2
    await chat.engine.services.subagents.flush()  # a finished run is kept off the caller's path
    saver = chat.engine.graph.checkpointer
    [thread] = [s.key for s in await list_sessions(saver) if s.key.startswith("f:u1/sub/")]
    stored = await session_messages(chat.engine.graph, thread)
    assert stored[0].content.startswith("You are a subagent:") and stored[-1].content == "it is noon"


async def test_usage_of_the_subagent_is_folded_into_the_turn(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("two at once", Calls([("subagent_run", {"task": "TASK-1"}), ("subagent_run", {"task": "TASK-2"})]),
            Reply("both"))
        .on("TASK-1", Calls([("time", {})]), Reply("one"))
        .on("TASK-2", Reply("two")))
    task = await chat.entry.submit("f:u1", "u1", "two at once")
    result = await task
    assert result.reply == "both"
    spent = [r.usage for r in scripted_llm.requests]
    assert result.usage["requests"] == len(spent) == 5
    for key, server_key in (("total_tokens", "total_tokens"), ("input_tokens", "prompt_tokens")):
        assert result.usage[key] == sum(u[server_key] for u in spent)
    metas = [META.match(r) for r in tool_results(scripted_llm.requests[-1])]
    assert sum(int(m.group(2)) for m in metas if m) == sum(r.usage["total_tokens"] for r in scripted_llm.requests
                                                         if "TASK-" in str(r.messages[1]))
    scripted_llm.respond_with(None)
    second = await (await chat.entry.submit("f:u1", "u1", "again"))
    state = await chat.engine.graph.aget_state({"configurable": {"thread_id": "f:u1"}})
    assert state.values["total_usage"]["requests"] == 6 and second.usage["requests"] == 1


async def test_a_chinese_answer_is_cut_at_4000_runes(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("long one", Calls([("subagent_run", {"task": "TASK-LONG"})]), Reply("ok"))
        .on("TASK-LONG", Reply("汉" * 5000)))
    await chat.say("f:u1", "u1", "long one")
    [result] = tool_results(scripted_llm.requests[-1])
    meta, body = result.split("\n", 1)
    assert meta.startswith("[subagent ok")
    assert body == "汉" * 4000 + "\n[cut: 1000 of 5000 characters not shown (subagent.max_result_len)]"


async def test_timeout_is_a_result_and_siblings_of_the_round_finish(scripted_llm, make_chat):
    """deepagents#1698: one subagent timing out must not cancel the other calls of its round."""
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("race", Calls([("subagent_run", {"task": "TASK-SLOW", "timeout_sec": 2}),
                           ("subagent_run", {"task": "TASK-FAST"}), ("time", {"timezone": "UTC"})]), Reply("fine"))
        .on("TASK-SLOW", Calls([("time", {})], text="step one done"), Stall(30))
        .on("TASK-FAST", Reply("fast answer")))
    result = await (await chat.entry.submit("f:u1", "u1", "race"))
    assert result.reply == "fine"
    slow, fast, now = tool_results(scripted_llm.requests[-1])
    assert re.match(r"\[subagent timed out after 2 s, [0-9.]+ s, 1 model call, \d+ tokens\]\n", slow)
    assert "It had not finished. What it had so far:\n- it wrote: step one done\n- time returned: " in slow
    assert fast.endswith("\nfast answer") and fast.startswith("[subagent ok")
    assert "UTC" in now
    answered = [r.usage for r in scripted_llm.requests if r.usage]  # the stalled request was never answered
    assert result.usage["requests"] == len(answered) == len(scripted_llm.requests) - 1  # what the timed-out run spent
    assert result.usage["total_tokens"] == sum(u["total_tokens"] for u in answered)


async def test_timeout_sec_is_clamped_before_it_becomes_a_duration(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("clamp", Calls([("subagent_run", {"task": "TASK-0", "timeout_sec": 0}),
                            ("subagent_run", {"task": "TASK-NEG", "timeout_sec": -5}),
                            ("subagent_run", {"task": "TASK-HUGE", "timeout_sec": 10**18})]), Reply("ok"))
        .on("TASK-", Reply("quick")))
    await chat.say("f:u1", "u1", "clamp")
    zero, negative, huge = tool_results(scripted_llm.requests[-1])
    assert zero.startswith("[timeout_sec 0 is outside 1..600; 1 was used]\n[subagent ")
    assert negative.startswith("[timeout_sec -5 is outside 1..600; 1 was used]\n[subagent ")
    assert huge.startswith(f"[timeout_sec {10**18} is outside 1..600; 600 was used]\n[subagent ok")
    for result in (zero, negative):  # a 1 s budget: answered, or timed out after 1 s; never an error
        assert "\n[subagent ok" in result or "\n[subagent timed out after 1 s" in result


async def test_the_parents_deadline_shrinks_the_budget_and_the_parent_still_answers(scripted_llm, make_chat):
    """A subagent that would outlive the message is cut first, leaving the reserve for the parent's reply."""
    settings = make_settings(scripted_llm, bot={"msg_event_timeout_sec": 6},
                             subagent={"parent_reserve_sec": 3, "min_budget_sec": 1})
    chat = await make_chat(settings)
    scripted_llm.respond_with(Router()
        .on("deadline", Calls([("subagent_run", {"task": "TASK-D", "timeout_sec": 600})]), Reply("answered in time"))
        .on("TASK-D", Stall(30)))
    result = await (await chat.entry.submit("f:u1", "u1", "deadline"))
    assert (result.status, result.reply) == ("ok", "answered in time")
    [timed_out] = tool_results(scripted_llm.requests[-1])
    budget = float(re.search(r"timed out after ([0-9.]+) s", timed_out).group(1))
    assert 1 <= budget <= 3  # 600 asked, about 6 - 3 left


async def test_too_little_time_left_refuses(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, bot={"msg_event_timeout_sec": 33}))
    scripted_llm.respond_with(Router()
        .on("late", Calls([("subagent_run", {"task": "TASK-LATE"})]), Reply("answering myself")))
    assert await chat.say("f:u1", "u1", "late") == ["answering myself"]
    [result] = tool_results(scripted_llm.requests[-1])
    assert re.fullmatch(r"Error: Not started: only 3[23] s of this message's time budget are left and 30 s are kept "
                        r"for your reply \(subagent.parent_reserve_sec\); answer without it.", result), result
    assert requests_of(scripted_llm, "TASK-LATE") == []


async def test_hooks_inside_see_the_agent_kind_and_can_block(scripted_llm, make_chat, tmp_path):
    cfg = tmp_path / "config"
    hooks_file(cfg, "PreToolUse", "echo 'no clocks for subagents' >&2; exit 2", matcher="^time$")
    rec = Recorder()
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(cfg, [rec]))
    scripted_llm.respond_with(Router()
        .on("hooked", Calls([("subagent_run", {"task": "TASK-H"})]), Reply("ok"))
        .on("TASK-H", Calls([("time", {})]), Reply("blocked, fine")))
    await chat.say("f:u1", "u1", "hooked")
    [sub_second] = requests_of(scripted_llm, "TASK-H")[1:]
    assert tool_results(sub_second) == ["Blocked by a PreToolUse hook: no clocks for subagents"]
    kinds = [(name, kind, tool) for name, kind, tool in rec.events if name not in ("SessionStart", "UserPromptSubmit")]
    assert kinds == [("PreToolUse", "main", "subagent_run"), ("PreToolUse", "subagent", "time"),
                     ("SubagentStop", "subagent", None), ("PostToolUse", "main", "subagent_run"),
                     ("Stop", "main", None)]


async def test_plan_mode_blocks_subagents_and_team_changes(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    assert await chat.say("f:admin", "admin", "/plan on") == ["Plan mode is on."]
    scripted_llm.respond_with(Router().on("plan it", Calls([
        ("subagent_run", {"task": "TASK-P"}), ("team_run", {"name": "t", "task": "x"}),
        ("team_save", {"name": "t", "purpose": "p", "members": [{"name": "a", "role": "r"}]}),
        ("team_delete", {"name": "t"}), ("team_list", {})]), Reply("planned")))
    await chat.say("f:admin", "admin", "plan it")
    results = tool_results(scripted_llm.requests[-1])
    for name, result in zip(["subagent_run", "team_run", "team_save", "team_delete"], results, strict=False):
        assert result.startswith(f'Blocked: plan mode is on, and "{name}" has side effects'), result
    assert results[4] == "No teams yet; save one with team_save."
    assert requests_of(scripted_llm, "TASK-P") == []


async def test_only_an_admin_approves_a_subagent_call_and_silence_denies(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"]}), approval_timeout_sec=1.0)
    scripted_llm.respond_with(Router()
        .on("ask twice", Calls([("subagent_run", {"task": "TASK-ASK"})]), Reply("done"))
        .on("TASK-ASK", Calls([("time", {"timezone": "Asia/Shanghai"})]), Calls([("time", {})]), Reply("went on")))
    approvals = chat.engine.services.approvals
    task = await chat.entry.submit("f:u1", "u1", "ask twice")
    await wait_for(lambda: approvals.is_waiting("f:admin"))  # nobody in f:u1 may decide: an admin is asked
    prompt = chat.out["f:admin"][-1]
    assert prompt.startswith('[subagent] Tool "time" wants to run with {"timezone": "Asia/Shanghai"}')
    assert 'An admin must approve "time" here; I asked one' in chat.out["f:u1"][-1]
    assert await chat.say("f:u1", "u1", "allow") == [  # the parent's requester is not the subagent's
        "You cannot answer this approval: only the person who asked or an admin can decide."]
    assert (await chat.say("f:admin", "admin", "allow"))[0].startswith('Allowed: "time"')
    await wait_for(lambda: approvals.is_waiting("f:u1"))  # the second call: nobody answers
    assert (await task).reply == "done"
    second, third = requests_of(scripted_llm, "TASK-ASK")[1:]
    assert "+0800" in tool_results(second)[0]
    assert tool_results(third)[-1] == 'Not run: no approval for "time" (timed out after 1 s).'
    [result] = tool_results(scripted_llm.requests[-1])
    assert result.endswith("\nwent on")
    ops = chat.engine.services.store.ops("tool_approval")
    assert [(o["actor"], o["detail"]["decision"]) for o in ops] == [("admin", "allow"), ("", "deny")]


async def test_stop_cancels_the_subagent_through_the_parent(scripted_llm, make_chat, tmp_path):
    rec = Recorder()
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(tmp_path / "config", [rec]))
    sleepy = Sleepy(seconds=30)
    chat.engine.services.shared_tools.add([sleepy])
    scripted_llm.respond_with(Router()
        .on("slow job", Calls([("subagent_run", {"task": "TASK-Z"})]))
        .on("TASK-Z", Calls([("sleepy", {"label": "z"})]))
        .on("next", Reply("here again")))
    task = await chat.entry.submit("f:u1", "u1", "slow job")
    await wait_for(lambda: sleepy.started == ["z"])
    assert await chat.say("f:u1", "u1", "/stop") == ["Stopped 1 running or queued message(s)."]
    assert task.cancelled() and sleepy.cancelled == ["z"]
    assert ("SubagentStop", "subagent", None) in rec.events  # H3: the cut run still ends with its hook
    assert await chat.say("f:u1", "u1", "next") == ["here again"]
    [settled] = tool_results(scripted_llm.requests[-1], last_turn=False)
    assert settled.startswith('No result: "subagent_run" had started')
