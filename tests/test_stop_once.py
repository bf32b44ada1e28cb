"""The Stop hook runs once per turn, whichever step runs it and whichever step fails (nodes/model.py `_ended`,
nodes/prepare.py `finish`); each run is counted as a line in a file."""

from __future__ import annotations

from pathlib import Path

from ania.fakes.openai_server import Calls, Fail, Reply
from services.hooks import HookEvent, HookOutcome
from services.hooks.manager import HookManager
from tests.conftest import make_settings
from tests.subagent_helpers import Router, tool_results
from tests.test_gates import hooks_file


class RecordThenFail:
    """A hook runner (a plugin's) that says it has nothing for `event`, yet records a run of it and then fails:
    the step that tells it must be the only one (the model step inline for Stop, the subagent's `finish` for
    SubagentStop); the step or fallback after it must not tell it again."""

    def __init__(self, runs: Path, event: str = "Stop") -> None:
        self.runs, self.event = runs, event

    async def run(self, event: HookEvent) -> HookOutcome:
        if event.name == self.event:
            with self.runs.open("a") as f:
                f.write(f"{self.event}\n")
            raise RuntimeError("hook runner bug after the hook ran")
        return HookOutcome()

    async def wants(self, event, tool_name=None) -> bool:
        return False


async def test_a_stop_runner_that_fails_in_the_model_step_is_not_run_again(scripted_llm, make_chat, tmp_path):
    runs = tmp_path / "stop-runs"
    chat = await make_chat(make_settings(scripted_llm), hooks=RecordThenFail(runs))
    scripted_llm.script([Calls([("time", {})]), Reply("stored, then the turn fails")])
    out = await chat.say("f:u1", "u1", "hello")
    assert out == ["Sorry, something went wrong on my side (RuntimeError); the error is in the log. Please try again."]
    assert runs.read_text() == "Stop\n"  # told once: `finish` reports the failure without running it again
    scripted_llm.script([Reply("second")])
    await chat.say("f:u1", "u1", "again")
    roles = [m["role"] for m in scripted_llm.requests[-1].messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]  # the reply was stored first
    assert runs.read_text() == "Stop\nStop\n"  # the next turn's Stop: once more


async def test_a_stop_hook_runs_once_per_turn_however_the_turn_ends(scripted_llm, make_chat, tmp_path):
    cfg = tmp_path / "config"
    runs = tmp_path / "stop-runs"
    hooks_file(cfg, "Stop", f"echo stop >> {runs}")
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(cfg))
    scripted_llm.script([Calls([("time", {})]), Reply("done")])
    assert await chat.say("f:u1", "u1", "time?") == ["done"]
    assert runs.read_text() == "stop\n"
    scripted_llm.script([Calls([("time", {})]), Fail(500)])  # the model endpoint fails after a tool round
    [failed] = await chat.say("f:u1", "u1", "again")
    assert failed.startswith("Sorry, the model endpoint failed")
    assert runs.read_text() == "stop\n" * 2
    scripted_llm.script([Reply("fine")])
    assert await chat.say("f:u1", "u1", "and now?") == ["fine"]
    assert runs.read_text() == "stop\n" * 3


async def test_a_subagent_stop_that_fails_in_finish_is_not_fired_again(scripted_llm, make_chat, tmp_path):
    runs = tmp_path / "subagent-stop-runs"
    chat = await make_chat(make_settings(scripted_llm), hooks=RecordThenFail(runs, "SubagentStop"))
    scripted_llm.respond_with(Router()
        .on("delegate", Calls([("subagent_run", {"task": "TASK-S"})]), Reply("parent done"))
        .on("TASK-S", Reply("sub answer")))
    assert await chat.say("f:u1", "u1", "delegate") == ["parent done"]
    [result] = tool_results(scripted_llm.requests[-1])
    assert "an error in a step" in result  # the crash in `finish` is the subagent's result
    assert runs.read_text() == "SubagentStop\n"  # told once, by `finish`; the parent did not tell it again
