"""Configuration tools (T8, G3) through the real loop: config_get / config_set / config_file_get /
config_file_set. Every change needs an admin other than the requester; every refusal keeps the old file."""

from __future__ import annotations

import json
import tomllib

from ania.fakes.openai_server import Calls, Reply
from core.settings import ADMINS_ONLY_KEYS, registry
from tests.approval_helpers import ADMINS, run_approved, turn_results
from tests.conftest import make_settings
from tests.test_gates import wait_for

TOML = """# Ania settings: edited by hand, and by config_set

[bot]
# the people who run the bot
admins = ["admin", "admin2"]
msg_event_timeout_sec = 300.0  # five minutes

[agent]
max_rounds = 20
"""
SECRET = "sk-very-secret-123"


def config(tmp_path):
    path = tmp_path / "config"
    path.mkdir(exist_ok=True)
    return path


def settings_for(server, **extra):
    return make_settings(server, **ADMINS, **extra)


async def test_config_get_lists_every_key_and_masks_secrets(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, llm={"api_key": SECRET}))
    calls = [("config_get", {}), ("config_get", {"key": "llm.api_key"}), ("config_get", {"key": "agent.max_round"}),
             ("config_get", {"key": "nope"})]
    scripted_llm.script([Calls(calls), Reply("here")])
    await chat.say("g:club", "u5", "show me the settings")  # reading needs no approval
    everything, one, near, unknown = turn_results(scripted_llm)
    lines = everything.splitlines()
    assert lines[0].startswith(f"Settings ({len(registry())}; running values;")
    assert [line.split(" = ")[0] for line in lines[1:]] == [k.key for k in registry()]
    assert 'llm.api_key = "****" — API key of the endpoint [sensitive]' in lines
    assert "agent.max_rounds = 20 — Tool rounds per message before stopping" in lines
    assert one == 'llm.api_key = "****" — API key of the endpoint [sensitive]'
    assert near == 'Error: unknown setting "agent.max_round". Did you mean agent.max_rounds?'
    assert unknown == 'Error: unknown setting "nope". config_get() lists every key.'
    assert all(SECRET not in r.raw.decode() for r in scripted_llm.requests)


async def test_a_member_reads_no_admin_list_filter_or_address_through_config_get(scripted_llm, make_chat):
    """A member (or a prompt injection in a member's message) must not learn who the admins are, what the
    bash filters refuse, or where the model lives; an admin sees all of it."""
    chat = await make_chat(make_settings(scripted_llm, bot={"admins": ["boss7"], "blocked_users": ["troll9"]},
                                         bash={"blacklist": ["^rm-secret-pattern"]}))
    private = {"bot.admins": "boss7", "bot.blocked_users": "troll9", "bash.blacklist": "rm-secret-pattern",
               "llm.base_url": scripted_llm.base_url}
    calls = [("config_get", {}), *[("config_get", {"key": key}) for key in sorted(private)]]
    scripted_llm.script([Calls(calls), Reply("here")])
    await chat.say("g:club", "u5", "show me the settings, and who the admins are")
    everything, *ones = turn_results(scripted_llm)
    for text in (everything, *ones):
        assert not any(value in text for value in private.values()), text
    assert ones == [f"{key} = (shown to admins only) — {next(k.description for k in registry() if k.key == key)}"
                    for key in sorted(private)]
    assert "bot.admins = (shown to admins only) — User ids with admin rights" in everything.splitlines()
    assert "agent.max_rounds = 20 — Tool rounds per message before stopping" in everything.splitlines()
    scripted_llm.script([Calls([("config_get", {"key": "bot.admins"})]), Reply("ok")])
    await chat.say("f:boss7", "boss7", "who are the admins?")
    assert turn_results(scripted_llm) == ['bot.admins = ["boss7"] — User ids with admin rights']


async def test_config_set_writes_the_toml_keeping_comments_and_waits_for_reboot(scripted_llm, make_chat, tmp_path):
    (config(tmp_path) / "ania.toml").write_text(TOML)
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("config_set", {"key": "bot.msg_event_timeout_sec", "value": "120"}),
                                                 ("config_set", {"key": "skills.enabled", "value": '["chat-replies"]'}),
                                                 ("config_set", {"key": "bot.system_prompt", "value": "Be brief."})])
    assert out == [
        "Set bot.msg_event_timeout_sec = 120.0 in config/ania.toml. It takes effect after an admin sends /reboot.",
        'Set skills.enabled = ["chat-replies"] in config/ania.toml. It takes effect after an admin sends /reboot.',
        'Set bot.system_prompt = "Be brief." in config/ania.toml. It takes effect after an admin sends /reboot.',
    ]
    text = (tmp_path / "config" / "ania.toml").read_text()
    assert text.startswith("# Ania settings: edited by hand, and by config_set\n\n[bot]\n# the people who run the bot\n")
    assert "msg_event_timeout_sec = 120.0  # five minutes" in text and "max_rounds = 20" in text
    data = tomllib.loads(text)
    assert data["skills"] == {"enabled": ["chat-replies"]} and data["bot"]["system_prompt"] == "Be brief."
    assert chat.engine.services.settings.bot.msg_event_timeout_sec == 300.0  # frozen until /reboot
    logged = [(o["actor"], o["detail"]) for o in chat.engine.services.store.ops("config_set")]
    assert logged[0] == ("admin", {"key": "bot.msg_event_timeout_sec", "old": 300.0, "new": 120.0,
                                   "approved_by": "admin2"})
    assert [d["key"] for _, d in logged] == ["bot.msg_event_timeout_sec", "skills.enabled", "bot.system_prompt"]
    scripted_llm.script([Calls([("config_get", {"key": "bot.msg_event_timeout_sec"})]), Reply("ok")])
    await chat.say("f:admin", "admin", "what is the timeout?")
    assert turn_results(scripted_llm) == [
        "bot.msg_event_timeout_sec = 300.0 (ania.toml has 120.0: after /reboot) — Time budget of one message"]


async def test_config_set_refuses_unknown_keys_and_wrong_values(scripted_llm, make_chat, tmp_path):
    (config(tmp_path) / "ania.toml").write_text(TOML)
    chat = await make_chat(settings_for(scripted_llm))
    calls = [("config_set", {"key": "xyzzy", "value": "me"}),
             ("config_set", {"key": "agent.max_rounds", "value": "many"}),
             ("config_set", {"key": "agent.max_rounds", "value": "0"}),
             ("config_set", {"key": "bash.sandbox", "value": "maybe"}),
             ("config_set", {"key": "bash.enable", "value": "[1, 2]"}),
             ("config_set", {"key": "bot.admins", "value": '"admin"'})]
    out = await run_approved(chat, scripted_llm, calls)
    assert out == [
        'Error: unknown setting "xyzzy". config_get() lists every key.',
        "Error: invalid value for agent.max_rounds: Input should be a valid integer, unable to parse string as an "
        "integer. Nothing was changed.",
        "Error: invalid value for agent.max_rounds: Input should be greater than or equal to 1. Nothing was changed.",
        "Error: invalid value for bash.sandbox: Input should be 'auto', 'bwrap' or 'off'. Nothing was changed.",
        "Error: invalid value for bash.enable: Input should be a valid boolean. Nothing was changed.",
        "Error: invalid value for bot.admins: Input should be a valid list. Nothing was changed.",
    ]
    assert (tmp_path / "config" / "ania.toml").read_text() == TOML
    assert chat.engine.services.store.ops("config_set") == []


async def test_a_member_cannot_set_and_a_requester_cannot_approve(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm))
    scripted_llm.script([Calls([("config_set", {"key": "bot.admins", "value": '["u5"]'})]), Reply("tried")])
    task = await chat.entry.submit("g:club", "u5", "make me an admin")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:admin"))
    assert (await chat.say("g:club", "u5", "allow"))[0].startswith(
        "You cannot answer this approval: the requester cannot approve")
    await chat.say("f:admin", "admin", "deny")
    await task
    assert turn_results(scripted_llm) == ['Not run: user admin denied the call to "config_set".']
    assert not (tmp_path / "config" / "ania.toml").exists()
    # An admin's own change needs the other admin: their own "allow" is refused.
    scripted_llm.script([Calls([("config_file_set", {"name": "commands_json", "content": "{}"})]), Reply("x")])
    task = await chat.entry.submit("f:admin", "admin", "clear the commands")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:admin2"))
    assert (await chat.say("f:admin", "admin", "allow"))[0] == (
        "You cannot answer this approval: the requester cannot approve their own configuration change.")
    await chat.say("f:admin2", "admin2", "deny")
    await task
    assert not (tmp_path / "config" / "commands.json").exists()
    decisions = [(o["actor"], o["detail"]["tool"], o["detail"]["decision"])
                 for o in chat.engine.services.store.ops("tool_approval")]
    assert decisions == [("admin", "config_set", "deny"), ("admin2", "config_file_set", "deny")]


async def test_approval_is_needed_even_with_approval_off(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm, approval={"enable": False}))
    scripted_llm.script([Calls([("config_set", {"key": "agent.max_rounds", "value": "5"})]), Reply("x")])
    task = await chat.entry.submit("f:admin", "admin", "fewer rounds")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:admin2"))
    await chat.say("f:admin2", "admin2", "allow")
    await task
    assert turn_results(scripted_llm)[0].startswith("Set agent.max_rounds = 5 in config/ania.toml.")


async def test_sensitive_values_are_masked_in_results_and_the_log_and_null_unsets(scripted_llm, make_chat, tmp_path,
                                                                                  monkeypatch):
    chat = await make_chat(settings_for(scripted_llm, llm={"api_key": SECRET}))
    out = await run_approved(chat, scripted_llm, [("config_set", {"key": "llm.api_key", "value": "sk-new-456"}),
                                                 ("config_set", {"key": "llm.temperature", "value": "0.3"})])
    assert out[0] == ('Set llm.api_key = "****" in config/ania.toml. It takes effect after an admin sends /reboot.')
    saved = tomllib.loads((tmp_path / "config" / "ania.toml").read_text())
    assert saved["llm"] == {"api_key": "sk-new-456", "temperature": 0.3}
    monkeypatch.setenv("ANIA_LLM__TEMPERATURE", "0.9")
    out = await run_approved(chat, scripted_llm, [("config_set", {"key": "llm.temperature", "value": "null"})])
    assert out == ["Set llm.temperature = null in config/ania.toml. It takes effect after an admin sends /reboot. "
                   "Note: ANIA_LLM__TEMPERATURE is set in the environment and overrides the file."]
    assert tomllib.loads((tmp_path / "config" / "ania.toml").read_text())["llm"] == {"api_key": "sk-new-456"}
    logged = [o["detail"] for o in chat.engine.services.store.ops("config_set")]
    assert logged[0] == {"key": "llm.api_key", "old": "", "new": "****", "approved_by": "admin2"}
    assert "sk-new-456" not in json.dumps(chat.engine.services.store.ops())  # approvals log masked args too
    prompts = [t for texts in chat.out.values() for t in texts if t.startswith('Tool "config_set"')]
    assert prompts and all("sk-new-456" not in t for t in prompts) and '"value": "****"' in prompts[0]


async def test_a_broken_ania_toml_is_not_overwritten(scripted_llm, make_chat, tmp_path):
    (config(tmp_path) / "ania.toml").write_text("[bot\nadmins = [")
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("config_set", {"key": "agent.max_rounds", "value": "5"})])
    assert out[0].startswith("Error: ania.toml cannot be edited (") and out[0].endswith(
        "fix it first. Nothing was changed.")
    assert (tmp_path / "config" / "ania.toml").read_text() == "[bot\nadmins = ["


HOOKS_OK = {"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "true"}]}]}}
BAD_FILES = {
    ("commands_json", "{not json"): "refused: commands.json is not valid JSON: Expecting property name",
    ("commands_json", '{"commands": {"stop": "x"}}'): 'refused: "/stop" is a built-in command',
    ("hooks_json", "[1, 2"): "refused: invalid JSON",
    ("hooks_json", '{"hooks": []}'): 'refused: "hooks" must be an object mapping event names to lists',
    ("hooks_json", '{"hooks": {"PreToolUse": [{"hooks": [{"command": ""}]}]}}'):
        "refused: hooks.PreToolUse[0].hooks[0].command must be a non-empty string",
    ("hooks_json", '{"hooks": {"OnMessage": []}}'): "refused: unknown hook event 'OnMessage' ignored",
    ("hooks_json", '{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"command": "true"}]}]}}'):
        "refused: hooks.PreToolUse[0]: invalid matcher regex '('",
    ("prompt_json", '{"persona": 5}'): "refused: prompt.json: persona.str: Input should be a valid string",
    ("prompt_json", '{"personality": "x"}'): "refused: prompt.json: personality: Extra inputs are not permitted",
    ("prompt_json", "{}"): 'refused: prompt.json sets neither "persona" nor "system_prompt"',
    ("mcp_json", '{"servers": {}}'): 'refused: mcp.json must be an object with an "mcpServers" object',
    ("mcp_json", '{"mcpServers": {"x": {"url": "ftp://h"}}}'):
        'refused: MCP server "x": "url" must start with http:// or https://',
    ("mcp_json", '{"mcpServers": {"a__b": {"command": "x"}}}'): "refused: ",
}


async def test_config_file_set_refuses_what_does_not_validate_and_keeps_the_old_file(scripted_llm, make_chat,
                                                                                     tmp_path):
    cfg = config(tmp_path)
    old = {"commands_json": '{"commands": {"tr": "Translate: $args"}}\n', "hooks_json": json.dumps(HOOKS_OK),
           "prompt_json": '{"persona": "You are Ania."}', "mcp_json": '{"mcpServers": {}}'}
    for name, text in old.items():
        (cfg / name.replace("_json", ".json")).write_text(text)
    chat = await make_chat(settings_for(scripted_llm))
    calls = [("config_file_set", {"name": n, "content": c}) for n, c in BAD_FILES]
    out = await run_approved(chat, scripted_llm, calls)
    for result, ((name, _), why) in zip(out, BAD_FILES.items(), strict=True):
        assert result.startswith("Error: ") and why in result, (name, result)
        assert result.endswith(f"config/{name.replace('_json', '.json')} was not changed."), result
    for name, text in old.items():
        assert (cfg / name.replace("_json", ".json")).read_text() == text
    assert chat.engine.services.store.ops("config_file_set") == []


async def test_config_file_set_writes_and_commands_and_hooks_take_effect(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm))
    commands = json.dumps({"commands": {"hi": {"prompt": "Say hi to $args", "description": "Greet"}}}, indent=2)
    out = await run_approved(chat, scripted_llm, [("config_file_set", {"name": "commands_json", "content": commands}),
                                                 ("config_file_set", {"name": "hooks_json",
                                                                      "content": json.dumps(HOOKS_OK)})])
    assert out == ["Saved config/commands.json. It takes effect within 5 s.",
                   "Saved config/hooks.json. It takes effect within 5 s."]
    path = tmp_path / "config" / "commands.json"
    assert path.read_text() == commands + "\n" and oct(path.stat().st_mode & 0o777) == "0o600"
    scripted_llm.script([Reply("Hi Ann")])
    await chat.say("f:u1", "u1", "/hi Ann")
    assert scripted_llm.requests[-1].messages[-1]["content"] == "Say hi to Ann"
    logged = [(o["actor"], o["detail"]["file"], o["detail"]["approved_by"])
              for o in chat.engine.services.store.ops("config_file_set")]
    assert logged == [("admin", "commands.json", "admin2"), ("admin", "hooks.json", "admin2")]
    assert not list((tmp_path / "config").glob(".*.tmp"))


async def test_config_file_get_is_for_admins_and_mcp_secrets_stay_masked(scripted_llm, make_chat, tmp_path):
    mcp = {"mcpServers": {
        "search": {"url": "https://mcp.example.org/mcp", "headers": {"Authorization": f"Bearer {SECRET}"}},
        "local": {"command": "server", "args": ["--x"], "env": {"TOKEN": SECRET, "HOME": "${HOME}"}}}}
    (config(tmp_path) / "mcp.json").write_text(json.dumps(mcp))
    chat = await make_chat(settings_for(scripted_llm))
    scripted_llm.script([Calls([("config_file_get", {"name": "mcp_json"}), ("config_file_get", {"name": "hooks_json"})]),
                         Reply("no")])
    await chat.say("g:club", "u5", "show me mcp.json")
    assert turn_results(scripted_llm) == [
        "Error: only an admin can read configuration files (they may hold commands and credentials)"] * 2
    scripted_llm.script([Calls([("config_file_get", {"name": "mcp_json"}), ("config_file_get", {"name": "hooks_json"})]),
                         Reply("here")])
    await chat.say("f:admin", "admin", "show me mcp.json")
    shown, hooks = turn_results(scripted_llm)
    assert hooks == "config/hooks.json does not exist yet."
    assert SECRET not in shown and '"Authorization": "****"' in shown and '"TOKEN": "****"' in shown
    masked = json.loads(shown.split("\n", 1)[1])
    masked["mcpServers"]["local"]["args"] = ["--y"]
    new_ref = json.loads(json.dumps(masked))
    new_ref["mcpServers"]["search"]["headers"]["X-Key"] = "${ANIA_LLM__API_KEY}"
    unknown_mask = json.loads(json.dumps(masked))
    unknown_mask["mcpServers"]["local"]["env"]["NEW"] = "****"
    calls = [("config_file_set", {"name": "mcp_json", "content": json.dumps(new_ref)}),
             ("config_file_set", {"name": "mcp_json", "content": json.dumps(unknown_mask)}),
             ("config_file_set", {"name": "mcp_json", "content": json.dumps(masked)})]
    out = await run_approved(chat, scripted_llm, calls)
    assert out[0] == ('Error: refused: "${ANIA_LLM__API_KEY}" adds a ${...} reference; variables are not expanded '
                      "in servers written from the chat. config/mcp.json was not changed.")
    assert out[1] == ('Error: refused: MCP server "local": env.NEW is "****" but no saved value exists. '
                      "config/mcp.json was not changed.")
    assert out[2] == "Saved config/mcp.json. It takes effect after an admin sends /reboot."
    saved = json.loads((tmp_path / "config" / "mcp.json").read_text())
    assert saved["mcpServers"]["local"] == {"command": "server", "args": ["--y"],
                                            "env": {"TOKEN": SECRET, "HOME": "${HOME}"}}
    assert saved["mcpServers"]["search"]["headers"] == {"Authorization": f"Bearer {SECRET}"}
    assert all(SECRET not in r.raw.decode() for r in scripted_llm.requests)


async def test_plan_mode_blocks_config_changes(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm))
    await chat.say("f:admin", "admin", "/plan on")
    scripted_llm.script([Calls([("config_set", {"key": "agent.max_rounds", "value": "5"}),
                                ("config_file_set", {"name": "prompt_json", "content": '{"persona": "x"}'})]),
                         Reply("planned")])
    await chat.say("f:admin", "admin", "change things")
    assert [r.split(". ")[0] for r in turn_results(scripted_llm)] == [
        'Blocked: plan mode is on, and "config_set" has side effects',
        'Blocked: plan mode is on, and "config_file_set" has side effects']
    assert not (tmp_path / "config" / "ania.toml").exists() and not (tmp_path / "config" / "prompt.json").exists()


async def test_a_hooks_file_written_from_the_chat_is_live_within_the_ttl(scripted_llm, make_chat, tmp_path):
    from services.hooks.manager import HookManager

    now = [1000.0]
    chat = await make_chat(settings_for(scripted_llm), hooks=HookManager(config(tmp_path), clock=lambda: now[0]))
    block_time = {"hooks": {"PreToolUse": [{"matcher": "time", "hooks": [
        {"type": "command", "command": "echo 'no clocks today' >&2; exit 2"}]}]}}
    out = await run_approved(chat, scripted_llm, [("time", {}), ("config_file_set", {
        "name": "hooks_json", "content": json.dumps(block_time)})])
    assert "UTC" in out[0] and out[1] == "Saved config/hooks.json. It takes effect within 5 s."
    now[0] += 5
    scripted_llm.script([Calls([("time", {})]), Reply("blocked")])
    await chat.say("f:u1", "u1", "time?")
    assert turn_results(scripted_llm) == ["Blocked by a PreToolUse hook: no clocks today"]


def test_every_admins_only_key_is_a_real_key():
    """A misspelt name would protect nothing."""
    assert not ADMINS_ONLY_KEYS - {k.key for k in registry()}
