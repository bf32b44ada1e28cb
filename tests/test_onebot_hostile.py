"""A hostile peer or group member against the OneBot platform (issue 22): a frame that used to end the
link, a listener without an access token, quotes of messages from other chats, and a huge message."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys

import pytest

from ania.fakes.openai_server import Calls, Reply
from ania.platforms.onebot.events import chat_of
from tests.onebot_fake import FakeOneBot, at, image, reply, text
from tests.onebot_helpers import ADMIN, BOT
from tests.terminal_helpers import ania
from tests.terminal_helpers import env_for as terminal_env
from tests.test_serve import ROOT, env_for
from tests.web_fake import PNG_1X1, Route

#: A valid JSON text that no recursive decoder reads: it raised RecursionError out of the frame handler.
NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("mode", ["forward", "reverse"])
async def test_a_deeply_nested_frame_is_dropped_and_the_link_lives_on(bot, caplog, mode):
    b = await bot(mode=mode)
    with caplog.at_level(logging.WARNING):
        await b.fake.push_raw(NESTED)
        await b.fake.private_message(42, "still there?")
        await b.fake.wait_for(lambda: b.fake.sent)
    assert b.fake.texts() == ["echo: still there?"]
    assert b.fake.connections == 1, "the link was not dropped"
    assert any("could not be handled (RecursionError, dropped)" in r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records), "no traceback"


def test_a_listener_other_machines_reach_is_refused_without_an_access_token(scripted_llm, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = env_for(scripted_llm, tmp_path, ANIA_ONEBOT__LISTEN=f"0.0.0.0:{port}")
    done = subprocess.run([sys.executable, "-m", "ania.cli", "serve"], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=30)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ania: onebot.listen '0.0.0.0:{port}' is reachable from other machines and "
                                  "onebot.access_token is empty: set onebot.access_token")


async def test_a_loopback_listener_without_an_access_token_warns_once(bot, caplog):
    with caplog.at_level(logging.WARNING):
        await bot(mode="reverse", fake=FakeOneBot(self_id=BOT, token="s3cret"), onebot={"access_token": "s3cret"})
        assert not any("access_token" in r.getMessage() for r in caplog.records)
        b = await bot(mode="reverse")
    warned = [r for r in caplog.records if "onebot.access_token" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "127.0.0.1:0 has no onebot.access_token: any program on this machine can connect" in warned[0].getMessage()
    await b.fake.private_message(42, "hi from this machine")
    await b.fake.wait_for(lambda: b.fake.sent)


async def test_a_10_mb_message_reaches_the_model_cut_with_a_marker(bot, scripted_llm):
    b = await bot()
    await b.fake.private_message(42, "x" * 10_000_000)
    await b.fake.wait_for(lambda: b.fake.sent, timeout=60)
    [request] = scripted_llm.requests
    assert len(request.raw) < 60_000, "the model request stays bounded"
    assert b.user_texts() == ["x" * 20_000 + "\n[message cut: 20000 of 10000000 characters]"]


def test_a_10_mb_line_and_a_custom_command_at_the_terminal_are_cut(scripted_llm, tmp_path):
    env = terminal_env(scripted_llm, tmp_path, ANIA_BOT__MAX_INPUT_RUNES="30000")
    (tmp_path / "config" / "commands.json").write_text('{"commands": {"thrice": "$args / $args / $args"}}')
    done = ania("chat", env=env, stdin="y" * 10_000_000 + "\n/thrice " + "z" * 15_000 + "\n")
    assert done.returncode == 0, done.stderr
    first, second = scripted_llm.requests
    assert len(first.raw) < 80_000 and len(second.raw) < 160_000, "the model requests stay bounded"
    said = [next(m["content"] for m in reversed(r.messages) if m["role"] == "user") for r in (first, second)]
    assert said[0] == "y" * 30_000 + "\n[message cut: 30000 of 10000000 characters]"
    assert said[1] == ("z" * 15_000 + " / " + "z" * 14_997 + "\n[message cut: 30000 of 45006 characters]")



SECRET = "the admin password is hunter2"
ELSEWHERE = "[replying to a message from another chat: not shown here]"


async def test_a_quote_of_an_admins_private_message_shows_neither_its_text_nor_its_images(bot, scripted_llm, web):
    web.routes["/secret.png"] = Route(PNG_1X1, content_type="image/png")
    b = await bot(llm={"vision": True})
    private = await b.fake.private_message(int(ADMIN), [text(SECRET), image(web.url("/secret.png"))])
    await b.fake.wait_for(lambda: b.fake.sent)
    scripted_llm.script([Calls([("load_images", {})]), Reply("nothing to see")])
    await b.fake.group_message(555, 42, [reply(private), at(BOT), text(" what did that say?")])
    await b.fake.wait_for(lambda: "nothing to see" in b.fake.texts())
    assert b.user_texts()[1] == f"[42] user42: what did that say?\n{ELSEWHERE}"
    tool = next(m for m in scripted_llm.requests[-1].messages if m["role"] == "tool")
    assert tool["content"] == "No images: neither this message nor the message it replies to has one."
    assert not any("hunter2" in r.raw.decode() for r in scripted_llm.requests[1:])
    assert web.requests == [], "the private image was never fetched"


async def test_a_quote_of_the_bots_reply_in_another_chat_neither_addresses_it_nor_shows_it(bot, scripted_llm):
    b = await bot()
    await b.fake.private_message(int(ADMIN), SECRET)
    await b.fake.wait_for(lambda: b.fake.sent)
    answer = max(b.fake.messages)  # the bot's private answer, as the implementation stored it
    await b.fake.group_message(555, 42, [reply(answer), text("go on")])  # no @: not for the bot any more
    await b.fake.group_message(555, 43, [at(BOT), text(" hello")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.fake.texts("g:555") == ["echo: [43] user43: hello"] and len(scripted_llm.requests) == 2
    await b.fake.group_message(555, 42, [reply(answer), at(BOT), text(" go on")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 3)
    assert b.user_texts()[-1] == f"[42] user42: go on\n{ELSEWHERE}"
    assert not any("hunter2" in r.raw.decode() for r in scripted_llm.requests[1:])
    assert not any(action == "get_msg" for action, _ in b.fake.calls)  # our record says where it went


async def test_a_quote_whose_chat_the_answer_does_not_name_is_taken_for_another_chats(bot):
    b = await bot()
    earlier = await b.fake.group_message(555, 43, SECRET)
    del b.fake.messages[earlier]["group_id"]  # a get_msg answer without the chat fields
    await b.fake.group_message(555, 42, [reply(earlier), at(BOT), text(" what did Bob say?")])
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.user_texts() == [f"[42] user42: what did Bob say?\n{ELSEWHERE}"]


async def test_quotes_in_the_same_chat_are_shown_and_a_quote_of_the_bot_there_addresses_it(bot):
    b = await bot()
    await b.fake.private_message(42, "first words")
    await b.fake.wait_for(lambda: b.fake.sent)
    await b.fake.private_message(42, [reply(max(b.fake.messages)), text("and then?")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    await b.fake.group_message(555, 43, [at(BOT), text(" hi")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 3)
    await b.fake.group_message(555, 44, [reply(max(b.fake.messages)), text("more please")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 4)
    texts = b.user_texts()
    assert texts[1] == "and then?\n[replying to you (the bot): echo: first words]"
    assert texts[3] == "[44] user44: more please\n[replying to you (the bot): echo: [43] user43: hi]"


async def test_a_private_file_id_from_another_chat_gets_no_url(bot, scripted_llm):
    b = await bot()
    b.fake.files["f-9"] = "http://127.0.0.1/files/f-9"
    await b.fake.private_message(int(ADMIN), [text("keep this"),
                                              {"type": "file", "data": {"file": "keys.zip", "file_id": "f-9"}}])
    await b.fake.wait_for(lambda: b.fake.sent)
    scripted_llm.script([Calls([("get_private_file_url", {"file_id": "f-9"})]), Reply("tried")])
    await b.fake.private_message(42, "fetch file f-9 for me")
    await b.fake.wait_for(lambda: "tried" in b.fake.texts())
    tool = next(m for m in scripted_llm.requests[-1].messages if m["role"] == "tool")["content"]
    assert tool.startswith("Error: file f-9 was not sent in this chat")
    assert not any(action == "get_private_file_url" for action, _ in b.fake.calls)


def test_which_chat_a_fetched_message_belongs_to():
    group = {"message_type": "group", "group_id": 555, "user_id": 43, "sender": {"user_id": 43}}
    assert chat_of(group, "10000") == "g:555"
    assert chat_of({**group, "group_id": None}, "10000") is None  # no chat named: another chat's
    assert chat_of({"message_type": "private", "sender": {"user_id": 42}}, "10000") == "f:42"
    assert chat_of({"message_type": "private", "user_id": 10000, "target_id": 42}, "10000") == "f:42"  # NapCat
    assert chat_of({"message_type": "private", "user_id": 10000}, "10000") is None  # the bot's, peer unknown
    assert chat_of({"user_id": 42, "group_id": 555}, "10000") is None  # no message_type
    assert chat_of({"message_type": "private", "user_id": True}, "10000") is None


async def test_history_leaves_out_another_chats_items_and_makes_its_own_files_available(bot, scripted_llm):
    b = await bot()
    b.fake.files["f-7"] = "http://127.0.0.1/files/f-7"
    # Before the bot started: 42 sent a file; and an item of group 777 the implementation files under 42.
    b.fake.remember("private", 42, "user42", [text("my file"), {"type": "file", "data": {"file": "a.zip",
                                                                                       "file_id": "f-7"}}], peer=42)
    b.fake.remember("group", int(ADMIN), "admin", [text(SECRET)], group_id=777, peer=42)
    scripted_llm.script([Calls([("get_private_file_url", {"file_id": "f-7"})]),
                         Calls([("get_msg_history", {"count": 10})]),
                         Calls([("get_private_file_url", {"file_id": "f-7"})]), Reply("done")])
    await b.fake.private_message(42, "the link to my earlier file, please")
    await b.fake.wait_for(lambda: "done" in b.fake.texts())
    first, history, second = [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert first.startswith("Error: file f-7 was not sent in this chat as far as the bot has seen")
    assert "user42 (42): my file[file a.zip, file_id f-7]" in history and "hunter2" not in history
    assert second == "http://127.0.0.1/files/f-7"


async def test_a_lone_surrogate_in_a_members_message_breaks_no_later_turn(bot, scripted_llm):
    """A JSON frame may spell a lone surrogate (`"\\ud800"`); stored as it is, it failed the session's every
    later encode. Entry turns it into U+FFFD, and the session's next turn goes on."""
    b = await bot()
    await b.fake.private_message(42, "bad \ud800 text")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 1)
    await b.fake.private_message(42, "and again")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.fake.texts() == ["echo: bad \ufffd text", "echo: and again"]
    assert b"\\ud800" not in scripted_llm.requests[1].raw


async def test_only_private_chats_file_ids_are_remembered():
    """get_group_file_url names the group, so a busy group's files must not push a private chat's ids out of
    the bounded record (the private user's file would then be refused as not seen)."""
    from ania.platforms.onebot.connection import Connection
    from ania.platforms.onebot.message import Segment, read
    from ania.platforms.onebot.outbound import SEEN_FILES, Outbound
    from core.settings import OneBotSettings

    async def no_events(_event: dict) -> None:
        return None

    out = Outbound(Connection(no_events, 1.0), OneBotSettings)
    out.note_file_ids("f:42", read([Segment("file", {"file": "keys.zip", "file_id": "f-1"})]).file_ids)
    out.note_file_ids("g:555", read([Segment("file", {"file": f"{n}.zip", "file_id": f"g-{n}"})
                                      for n in range(SEEN_FILES)]).file_ids)
    assert out.file_chat("f-1") == "f:42" and out.file_chat("g-0") is None
