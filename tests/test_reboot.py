"""`/reboot` (R2): admins only; new settings checked first; running turns stopped and told; the engine
closed (MCP sessions included) and built again in the same process from the files; platforms stay."""

from __future__ import annotations

import json
import sys

import tomlkit

from ania.fakes.openai_server import Calls, Reply
from core.registry import ToolCall
from tests.approval_helpers import run_approved, turn_results
from tests.hook_helpers import alive
from tests.mcp_servers.harness import DEMO
from tests.test_agent_loop import SleepTool
from tests.test_gates import wait_for


def write_files(tmp_path, llm, *, comment: str = "# written by the test") -> None:
    cfg = tmp_path / "config"
    cfg.mkdir(exist_ok=True)
    doc = tomlkit.document()
    doc.add(tomlkit.comment(comment[2:]))
    doc["llm"] = {"base_url": llm.base_url, "model": "scripted-model", "api_key": "k", "max_retries": 0}
    doc["bot"] = {"admins": ["admin", "admin2"], "system_prompt": "You are the old bot."}
    doc["mcp"] = {"lazy_load": False}
    (cfg / "ania.toml").write_text(tomlkit.dumps(doc))
    (cfg / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable,
                                                                      "args": [DEMO, "stdio"]}}}))


async def demo_pid(chat) -> int:
    ctx = chat.engine.context("f:probe", "admin", chat.bridge("f:probe"))
    out = await ctx.executor.invoke(ToolCall("p1", "mcp__demo__pid", {}), ctx)
    return int(out.text)


async def test_only_admins_reboot_and_broken_settings_change_nothing(scripted_llm, make_chat, tmp_path):
    write_files(tmp_path, scripted_llm)
    chat = await make_chat(None)
    services = chat.engine.services
    assert await chat.say("g:club", "u5", "/reboot") == ["Only an admin can restart the bot."]
    chat.engine.services.shared_tools.add([SleepTool(seconds=30)])
    scripted_llm.script([Calls([("sleepy", {"label": "long"})])])
    task = await chat.entry.submit("g:club", "u5", "take your time")
    await wait_for(lambda: len(scripted_llm.requests) == 1)
    (tmp_path / "config" / "ania.toml").write_text("[agent]\nmax_rounds = 'many'\n")
    [reply] = await chat.say("f:admin", "admin", "/reboot")
    toml = tmp_path / "config" / "ania.toml"
    assert reply == (f"Not restarted: invalid setting agent.max_rounds in {toml}:2 (env ANIA_AGENT__MAX_ROUNDS): "
                     "Input should be a valid integer, unable to parse string as an integer (got 'many'). "
                     "The bot goes on with the settings it has.")
    assert chat.engine.services is services and not task.done()  # nothing stopped, nothing rebuilt
    await chat.entry.stop("g:club")


async def test_reboot_stops_turns_closes_mcp_and_starts_with_fresh_settings(scripted_llm, make_chat, tmp_path):
    write_files(tmp_path, scripted_llm)
    chat = await make_chat(None)
    old_pid = await demo_pid(chat)
    scripted_llm.script([Reply("old")])
    await chat.say("f:admin", "admin", "who are you?")
    assert scripted_llm.requests[-1].messages[0]["content"].startswith("You are the old bot.\n\n<available_skills>")
    # The operator edits the settings and the persona; nothing changes until /reboot.
    out = await run_approved(chat, scripted_llm, [
        ("config_set", {"key": "agent.max_rounds", "value": "7"}),
        ("config_file_set", {"name": "prompt_json", "content": json.dumps({"persona": "You are the new bot."})})])
    assert out[0].startswith("Set agent.max_rounds = 7") and out[1].startswith("Saved config/prompt.json")
    assert chat.engine.services.settings.agent.max_rounds == 20
    assert "# written by the test" in (tmp_path / "config" / "ania.toml").read_text()
    # A turn is running in a group when the admin restarts.
    chat.engine.services.shared_tools.add([SleepTool(seconds=30)])
    scripted_llm.script([Calls([("sleepy", {"label": "long"})])])
    running = await chat.entry.submit("g:club", "u5", "take your time")
    await wait_for(lambda: scripted_llm.requests[-1].messages[-1]["content"] == "[u5] take your time")
    old_services = chat.engine.services
    [reply] = await chat.say("f:admin", "admin", "/reboot")
    assert reply == ("Restarted with the settings in config/ (stopped 1 running message(s)). 1 MCP server(s), "
                     "3 skill(s), system prompt from prompt.json.")
    assert running.cancelled()
    assert chat.out["g:club"][-1] == ("Stopped: the bot is restarting (/reboot by an admin). Please send your "
                                      "message again in a moment.")
    services = chat.engine.services
    assert services is not old_services and services.settings.agent.max_rounds == 7
    assert services.outboxes is old_services.outboxes  # the platforms stay attached
    assert not alive(old_pid)  # the MCP session was closed with its process
    new_pid = await demo_pid(chat)
    assert new_pid != old_pid and alive(new_pid)
    assert [o["actor"] for o in services.store.ops("reboot")] == ["admin"]
    # The new engine answers, with the new persona, and approvals still reach the admins' chats.
    scripted_llm.script([Reply("new")])
    assert await chat.say("f:admin", "admin", "who are you now?") == ["new"]
    assert scripted_llm.requests[-1].messages[0]["content"].startswith("You are the new bot.\n\n<available_skills>")
    out = await run_approved(chat, scripted_llm, [("config_get", {"key": "agent.max_rounds"}),
                                                 ("config_set", {"key": "agent.max_rounds", "value": "8"})])
    assert out[0].startswith("agent.max_rounds = 7 —") and out[1].startswith("Set agent.max_rounds = 8")
    scripted_llm.script([Reply("g")])
    assert await chat.say("g:club", "u5", "are you back?") == ["g"]
    assert turn_results(scripted_llm) == []


async def test_a_broken_prompt_json_falls_back_to_the_setting_and_says_so(scripted_llm, make_chat, tmp_path):
    write_files(tmp_path, scripted_llm)
    (tmp_path / "config" / "mcp.json").unlink()
    (tmp_path / "config" / "prompt.json").write_text('{"persona": ')
    chat = await make_chat(None)
    assert chat.engine.services.persona.source == "bot.system_prompt"
    [reply] = await chat.say("f:admin", "admin", "/reboot")
    assert reply.splitlines() == [
        "Restarted with the settings in config/ (stopped 0 running message(s)). 0 MCP server(s), 3 skill(s), "
        "system prompt from bot.system_prompt.",
        "prompt.json was not used: prompt.json is not valid JSON: Expecting value: line 1 column 13 (char 12)"]
    scripted_llm.script([Reply("fine")])
    assert await chat.say("f:admin", "admin", "still there?") == ["fine"]
    assert scripted_llm.requests[-1].messages[0]["content"].startswith("You are the old bot.")
