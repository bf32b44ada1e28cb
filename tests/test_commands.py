"""Custom slash commands (G8), /cmd and /help (R2) through message entry and the real loop."""

from __future__ import annotations

import json
import logging

from ania.fakes.openai_server import Reply
from services.commands import BUILTIN_COMMANDS, CommandStore
from services.store import AppStore
from tests.approval_helpers import ADMINS
from tests.conftest import make_settings

COMMANDS = {"commands": {
    "tr": {"prompt": "Translate into English: $args", "description": "Translate a text into English"},
    "tldr": "Summarise the following in three short lines:",
}}


def write_commands(tmp_path, data) -> None:
    (tmp_path / "config").mkdir(exist_ok=True)
    text = data if isinstance(data, str) else json.dumps(data)
    (tmp_path / "config" / "commands.json").write_text(text)


def last_user(llm) -> str:
    return [m for m in llm.requests[-1].messages if m["role"] == "user"][-1]["content"]


async def test_a_custom_command_expands_and_flows_like_a_message(scripted_llm, make_chat, tmp_path):
    write_commands(tmp_path, COMMANDS)
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("Good morning"), Reply("short"), Reply("echo"), Reply("plain")])
    assert await chat.say("g:club", "u5", "/tr bonjour à tous") == ["Good morning"]
    assert last_user(scripted_llm) == "[u5] Translate into English: bonjour à tous"
    await chat.say("f:u1", "u1", "/tldr line one\nline two")
    assert last_user(scripted_llm) == "Summarise the following in three short lines:\nline one\nline two"
    await chat.say("f:u1", "u1", "/TR hola")
    assert last_user(scripted_llm) == "Translate into English: hola"


async def test_cmd_add_del_list_and_rights(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(make_settings(scripted_llm, **ADMINS))
    assert await chat.say("g:club", "u5", "/cmd list") == ["No custom commands."]
    assert await chat.say("g:club", "u5", "/cmd add greet Say hello to $args") == [
        "Only an admin can add or delete custom commands."]
    assert await chat.say("g:club", "admin", "/cmd add greet Say hello to $args, warmly") == ["Added /greet."]
    saved = json.loads((tmp_path / "config" / "commands.json").read_text())
    assert saved == {"commands": {"greet": {"prompt": "Say hello to $args, warmly"}}}
    scripted_llm.script([Reply("Hello Bob!")])
    assert await chat.say("g:club", "u5", "/greet Bob") == ["Hello Bob!"]  # at once, no 5 s wait
    assert last_user(scripted_llm) == "[u5] Say hello to Bob, warmly"
    assert await chat.say("g:club", "u5", "/cmd list") == ["/greet: Say hello to $args, warmly"]
    assert await chat.say("g:club", "u5", "/cmd del greet") == ["Only an admin can add or delete custom commands."]
    assert await chat.say("g:club", "admin", "/cmd del greet") == ["Deleted /greet."]
    assert await chat.say("g:club", "admin", "/cmd del greet") == ["Not changed: there is no custom command /greet"]
    assert await chat.say("g:club", "admin", "/cmd add onlyname") == [
        "Usage: /cmd list | /cmd add <name> <template> | /cmd del <name>"]
    assert await chat.say("g:club", "admin", "/cmd rename a b") == [
        "Usage: /cmd list | /cmd add <name> <template> | /cmd del <name>"]
    logged = [(o["actor"], o["detail"]) for o in chat.engine.services.store.ops("command_manage")]
    assert logged == [("admin", {"action": "add", "name": "greet"}), ("admin", {"action": "del", "name": "greet"})]


async def test_names_are_checked_and_builtins_are_never_shadowed(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(make_settings(scripted_llm))
    bad = {
        "stop": 'Not changed: "/stop" is a built-in command; choose another name',
        "/reboot": 'Not changed: "/reboot" is a built-in command; choose another name',
        "Greet": 'Not changed: invalid command name "Greet": 1-32 lowercase letters, digits, "_" or "-", '
                 "starting with a letter",
        "9lives": 'Not changed: invalid command name "9lives"',
        "a" * 33: "Not changed: invalid command name",
        "../x": "Not changed: invalid command name",
    }
    for name, why in bad.items():
        [reply] = await chat.say("f:admin", "admin", f"/cmd add {name} do something")
        assert reply.startswith(why), (name, reply)
    assert not (tmp_path / "config" / "commands.json").exists()
    assert sorted(BUILTIN_COMMANDS) == ["as", "clock", "cmd", "help", "plan", "reboot", "stop", "usage"]
    # A file that names a built-in is refused as a whole: /stop stays the real /stop.
    write_commands(tmp_path, {"commands": {"stop": "ignore the user", "ok": "fine"}})
    chat.engine.services.commands.invalidate()
    assert await chat.say("f:admin", "admin", "/stop") == ["Nothing to stop."]
    [listing] = await chat.say("f:admin", "admin", "/cmd list")
    assert listing == ('No custom commands.\nNote: "/stop" is a built-in command; choose another name; the last '
                       "good version is in use.")


async def test_a_broken_commands_json_is_reported_once_and_the_last_good_kept(scripted_llm, make_chat, tmp_path,
                                                                              caplog):
    write_commands(tmp_path, COMMANDS)
    chat = await make_chat(make_settings(scripted_llm))
    commands = chat.engine.services.commands
    scripted_llm.script([Reply("a"), Reply("b"), Reply("c")])
    await chat.say("f:admin", "admin", "/tr eins")
    write_commands(tmp_path, "{not json")
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        commands.invalidate()
        await chat.say("f:admin", "admin", "/tr zwei")
        assert last_user(scripted_llm) == "Translate into English: zwei"
    warnings = [r.getMessage() for r in caplog.records if "commands.json" in r.getMessage()]
    assert len(warnings) == 1 and "is not valid JSON" in warnings[0] and "keeping the last good commands" in warnings[0]
    [listing] = await chat.say("f:admin", "admin", "/cmd list")
    assert listing.startswith("/tldr: Summarise the following in three short lines:\n/tr: Translate a text into "
                              "English\nNote: commands.json is not valid JSON: Expecting property name")
    [refused] = await chat.say("f:admin", "admin", "/cmd add x y")
    assert refused.startswith("Not changed: commands.json is not valid JSON")
    assert (tmp_path / "config" / "commands.json").read_text() == "{not json"  # never overwritten


async def test_commands_json_is_re_read_after_the_ttl(tmp_path):
    now = [100.0]
    store = AppStore(tmp_path / "ania.db")
    commands = CommandStore(tmp_path, store, ttl_sec=5, clock=lambda: now[0])
    (tmp_path / "commands.json").write_text(json.dumps({"commands": {"a": "first"}}))
    assert await commands.expand("/a") == "first"
    (tmp_path / "commands.json").write_text(json.dumps({"commands": {"a": "second"}}))
    now[0] += 4.9
    assert await commands.expand("/a") == "first"
    now[0] += 0.2
    assert await commands.expand("/a") == "second"
    (tmp_path / "commands.json").unlink()
    now[0] += 5
    assert await commands.expand("/a") is None
    store.close()


async def test_help_lists_builtin_and_custom_commands(scripted_llm, make_chat, tmp_path):
    write_commands(tmp_path, COMMANDS)
    chat = await make_chat(make_settings(scripted_llm))
    [text] = await chat.say("g:club", "u5", "/help")
    assert text.splitlines() == [
        "Commands:",
        "/help — this list",
        "/stop — stop the running message (yours; an admin stops everyone's)",
        "/plan on|off — plan mode: tools with side effects are blocked (admins)",
        "/cmd list | add <name> <template> | del <name> — custom commands ($args in a template takes the "
        "arguments; add and del: admins)",
        "/reboot — restart the engine with the settings and files as they are now (admins)",
        "/clock list [all] | run|pause|resume|del <id> | log [<id>] — this chat's scheduled tasks (admins: any)",
        "/usage — tokens this chat and all chats used today, against the daily quotas",
        "Custom commands:",
        "/tldr: Summarise the following in three short lines:",
        "/tr: Translate a text into English",
    ]
    assert scripted_llm.requests == []  # commands never reach the model


UNKNOWN_NOSUCH = ("Unknown command /nosuch; nothing was sent to the model. (To ask the model about it, start your "
                  "message with a word.)")


async def test_an_unknown_command_is_answered_with_the_list_and_no_model_call(scripted_llm, make_chat, tmp_path):
    """`/nosuch` used to go to the model as text."""
    write_commands(tmp_path, COMMANDS)
    chat = await make_chat(make_settings(scripted_llm))
    (reply,) = await chat.say("f:u1", "u1", "/nosuch")
    assert reply.startswith(UNKNOWN_NOSUCH + "\nCommands:\n/help — this list\n")
    assert reply.endswith("Custom commands:\n/tldr: Summarise the following in three short lines:\n"
                          "/tr: Translate a text into English")
    (typo,) = await chat.say("f:u1", "u1", "/stpo now")
    assert typo.startswith("Unknown command /stpo; nothing was sent to the model. Did you mean /stop?")
    (shout,) = await chat.say("g:club", "u5", "/TLDX text")
    assert "Did you mean /tldr?" in shout
    assert scripted_llm.requests == []
    # Text that only starts with a slash is a message: a path, a lone slash, a number.
    scripted_llm.script([Reply("a"), Reply("b"), Reply("c")])
    for text in ("/usr/bin is on my PATH", "/ that is a slash", "/5 of them"):
        await chat.say("f:u1", "u1", text)
        assert last_user(scripted_llm) == text


def test_an_unknown_command_in_a_piped_chat_does_not_reach_the_model(scripted_llm, tmp_path):
    from tests.terminal_helpers import ania, env_for

    scripted_llm.script([Reply("answered")])
    done = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="/nosuch\nhello\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(UNKNOWN_NOSUCH + "\nCommands:\n") and done.stdout.endswith("\nanswered\n")
    assert [r.messages[-1]["content"] for r in scripted_llm.requests] == ["hello"]


async def test_an_unknown_command_in_qq_only_when_addressed_to_the_bot(bot, scripted_llm):
    from tests.onebot_fake import at, text
    from tests.onebot_helpers import BOT

    b = await bot()
    await b.fake.group_message(555, 42, "/nosuch among ourselves")  # not for the bot: ignored, no reply
    await b.fake.group_message(555, 42, [at(BOT), text(" /nosuch")])
    await b.fake.wait_for(lambda: b.fake.sent)
    await b.fake.private_message(42, "/nosuch")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    group, private = b.fake.texts("g:555"), b.fake.texts("f:42")
    assert len(group) == 1 and group[0].startswith(UNKNOWN_NOSUCH + "\nCommands:")
    assert len(private) == 1 and private[0].startswith(UNKNOWN_NOSUCH + "\nCommands:")
    assert scripted_llm.requests == []
