"""Whole conversations through the fake OneBot v11 implementation: forward and reverse WebSocket, group
@-mention, reply to the bot, prefix, private chat (array and CQ string), approval in the group, /stop,
an image in and load_images, a file out."""

from __future__ import annotations

import asyncio
import base64
import re

from ania.fakes.openai_server import Calls, Reply
from tests.onebot_fake import FakeOneBot, at, image, reply, text
from tests.onebot_helpers import ADMIN, BOT
from tests.web_fake import PNG_1X1, Route


async def test_group_at_mention_is_answered_quoting_the_message_with_sender_name_and_id(bot):
    b = await bot()
    mid = await b.fake.group_message(555, 42, [at(BOT), text(" hello there")], card="Alice")
    await b.fake.wait_for(lambda: b.fake.sent)
    sent = b.fake.sent[0]
    assert sent["action"] == "send_group_msg" and sent["group_id"] == 555
    assert sent["message"][0] == {"type": "reply", "data": {"id": str(mid)}}
    assert b.user_texts() == ["[42] Alice: hello there"]
    assert b.fake.texts("g:555") == ["echo: [42] Alice: hello there"]


async def test_group_message_not_for_the_bot_is_ignored_but_a_reply_to_the_bot_and_a_prefix_are_taken(bot):
    b = await bot(bot={"group_prefixes": ["ania", "/ai"]})
    await b.fake.group_message(555, 42, "just chatting among ourselves")
    await b.fake.group_message(555, 43, [at(777), text(" not you, bot")])
    await b.fake.group_message(555, 42, [at(BOT), text(" first")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 1)
    bot_msg = max(b.fake.messages)  # the bot's answer, as the implementation stored it
    await b.fake.group_message(555, 43, [reply(bot_msg), text("and what about this?")], nickname="Bob")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    await b.fake.group_message(555, 44, "Ania, tell me a joke", card="Carol")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 3)
    texts = b.user_texts()
    assert texts[0] == "[42] user42: first"
    assert texts[1].startswith("[43] Bob: and what about this?\n[replying to you (the bot): echo: [42] user42: first")
    assert texts[2] == "[44] Carol: tell me a joke"
    assert len(b.llm.requests) == 3  # the two messages not for the bot never reached the model


async def test_private_chat_always_answered_in_both_message_formats(bot):
    seen = []
    for fmt in ("array", "string"):
        b = await bot(fake=FakeOneBot(self_id=BOT, message_format=fmt))
        await b.fake.private_message(42, [text("hi [there] & more, "), {"type": "face", "data": {"id": "14"}}])
        await b.fake.wait_for(lambda b=b: b.fake.sent)
        assert b.fake.sent[0]["action"] == "send_private_msg" and b.fake.sent[0]["user_id"] == 42
        assert b.fake.sent[0]["message"][0]["type"] == "text"  # no quote in a private chat
        seen.append(b.user_texts()[-1])
        await b.close()
    assert seen == ["hi [there] & more, [face 14]"] * 2


async def test_reverse_websocket_with_access_token(bot):
    b = await bot(mode="reverse", fake=FakeOneBot(self_id=BOT, token="s3cret"), onebot={"access_token": "s3cret"})
    await b.fake.private_message(42, "over the reverse link")
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.fake.texts("f:42") == ["echo: over the reverse link"]


async def test_approval_prompt_quotes_and_mentions_and_is_answered_in_the_group_without_an_at(bot, scripted_llm):
    b = await bot(approval={"tools": ["time"]})
    scripted_llm.script([Calls([("time", {})]), Reply("it is time")])
    mid = await b.fake.group_message(555, 42, [at(BOT), text(" what time is it?")])
    await b.fake.wait_for(lambda: b.fake.sent)
    prompt = b.fake.sent[0]
    assert prompt["message"][0] == {"type": "reply", "data": {"id": str(mid)}}
    assert prompt["message"][1] == {"type": "at", "data": {"qq": "42"}}
    rid = re.search(r'"allow ([0-9a-f]{4})"', b.fake.texts()[0]).group(1)
    await b.fake.group_message(555, 42, "allow")  # the requester may not approve in a group
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.fake.texts()[1].startswith("You cannot answer this approval: in a group only an admin")
    await b.fake.group_message(555, int(ADMIN), f"allow {rid}")
    await b.fake.wait_for(lambda: "it is time" in b.fake.texts())
    assert b.fake.texts()[2] == f'Allowed: "time" ({rid}).'
    tool = next(m for m in scripted_llm.requests[-1].messages if m["role"] == "tool")
    assert "UTC" in tool["content"]


async def test_stop_in_the_group_without_an_at(bot, scripted_llm):
    b = await bot()
    scripted_llm.script([Reply("too late", delay=5)])
    await b.fake.group_message(555, 42, [at(BOT), text(" write a long essay")])
    await b.fake.wait_for(lambda: scripted_llm.requests)
    await b.fake.group_message(555, 43, "/stop")  # someone else's request: not theirs to stop
    await b.fake.wait_for(lambda: b.fake.sent)
    await b.fake.group_message(555, 42, "/stop")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.fake.texts() == ["Only an admin or the person who asked can stop a running message.",
                              "Stopped 1 running or queued message(s)."]
    await asyncio.sleep(0.2)
    assert "too late" not in b.fake.texts()


async def test_image_in_load_images_sends_image_parts_when_llm_vision(bot, scripted_llm, web):
    web.routes["/cat.png"] = Route(PNG_1X1, content_type="image/png")
    b = await bot(llm={"vision": True}, onebot={"allow_private_hosts": True})  # the image is on 127.0.0.1
    scripted_llm.script([Calls([("load_images", {})]), Reply("a tiny cat")])
    await b.fake.group_message(555, 42, [at(BOT), text(" what is this?"), image(web.url("/cat.png"))])
    await b.fake.wait_for(lambda: "a tiny cat" in b.fake.texts())
    assert b.user_texts()[0] == "[42] user42: what is this?[image]"
    last = scripted_llm.requests[-1].messages
    tool = next(m for m in last if m["role"] == "tool")
    assert tool["content"].startswith("Loaded 1 image(s) (1 from this message) (they follow as images")
    parts = last[-1]["content"]
    assert last[-1]["role"] == "user" and parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG_1X1).decode()


async def test_load_images_of_the_quoted_message(bot, scripted_llm, web):
    web.routes["/a.png"] = Route(PNG_1X1, content_type="image/png")
    b = await bot(llm={"vision": True}, onebot={"allow_private_hosts": True})
    earlier = await b.fake.group_message(555, 43, [image(web.url("/a.png"))])
    scripted_llm.script([Calls([("load_images", {})]), Reply("seen")])
    await b.fake.group_message(555, 42, [reply(earlier), at(BOT), text(" what is in that picture?")])
    await b.fake.wait_for(lambda: "seen" in b.fake.texts())
    tool = next(m for m in scripted_llm.requests[-1].messages if m["role"] == "tool")
    assert tool["content"].startswith("Loaded 1 image(s) (0 from this message, 1 from the message it replies to)")


async def test_file_out_through_upload_group_file(bot, scripted_llm, tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    (share / "report.txt").write_text("numbers")
    b = await bot(files={"allowed_dirs": [str(share)]})
    scripted_llm.script([Calls([("send_file", {"path": "report.txt"})]), Reply("sent it")])
    await b.fake.group_message(555, 42, [at(BOT), text(" send me the report")])
    await b.fake.wait_for(lambda: "sent it" in b.fake.texts())
    assert b.fake.uploads == [{"action": "upload_group_file", "group_id": 555, "name": "report.txt",
                               "file": "base64://" + base64.b64encode(b"numbers").decode()}]


async def test_long_reply_is_split_on_paragraphs_and_only_the_first_part_quotes(bot, scripted_llm):
    b = await bot(onebot={"max_message_runes": 120})
    paras = [f"Paragraph {i}: " + "x" * 80 for i in range(4)]
    scripted_llm.script([Reply("\n\n".join(paras))])
    await b.fake.group_message(555, 42, [at(BOT), text(" long please")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 4)
    assert b.fake.texts() == paras
    assert [s["message"][0]["type"] for s in b.fake.sent] == ["reply", "text", "text", "text"]


async def test_bots_own_messages_and_people_off_the_lists_are_ignored(bot):
    b = await bot(bot={"users": ["42"], "blocked_users": ["44"], "groups": ["555"]})
    await b.fake.group_message(555, BOT, [at(BOT), text(" talking to myself")])
    await b.fake.group_message(555, 43, [at(BOT), text(" not on the list")])
    await b.fake.private_message(43, "not on the list either")
    await b.fake.group_message(556, 42, [at(BOT), text(" wrong group")])
    await b.fake.private_message(int(ADMIN), "admins are always served")
    await b.fake.wait_for(lambda: b.fake.sent)
    await b.fake.group_message(555, 42, [at(BOT), text(" on the list")])
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.user_texts() == ["admins are always served", "[42] user42: on the list"]


async def test_blocked_user_is_ignored_even_when_listed(bot):
    b = await bot(bot={"users": ["44"], "blocked_users": ["44"]})
    await b.fake.private_message(44, "hello?")
    await b.fake.private_message(int(ADMIN), "ping")
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.user_texts() == ["ping"]


async def test_history_and_private_file_url_reach_the_implementation(bot, scripted_llm):
    b = await bot()
    b.fake.files["f-7"] = "http://127.0.0.1/files/f-7"
    await b.fake.group_message(555, 43, "earlier words", card="Bob")
    scripted_llm.script([Calls([("get_msg_history", {"count": 5})]), Reply("read"),
                         Calls([("get_private_file_url", {"file_id": "f-7"})]), Reply("got it")])
    await b.fake.group_message(555, 42, [at(BOT), text(" what did Bob say?")])
    await b.fake.wait_for(lambda: "read" in b.fake.texts())
    tool = next(m for m in scripted_llm.requests[-1].messages if m["role"] == "tool")["content"]
    assert "Bob (43): earlier words" in tool and "user42 (42): what did Bob say?" in tool
    await b.fake.private_message(42, [text("here"), {"type": "file", "data": {"file": "a.zip", "file_id": "f-7"}}])
    await b.fake.wait_for(lambda: "got it" in b.fake.texts())
    assert b.user_texts()[-1] == "here[file a.zip, file_id f-7]"
    tool = [m for m in scripted_llm.requests[-1].messages if m["role"] == "tool"][-1]["content"]
    assert tool == "http://127.0.0.1/files/f-7"


async def test_meme_goes_out_as_a_base64_image_segment(bot, scripted_llm, web):
    web.routes["/m.png"] = Route(PNG_1X1, content_type="image/png")
    web.routes["/api"] = Route(b'{"data": [{"images": {"fixed_width": {"url": "%s"}}}]}' % web.url("/m.png").encode(),
                               content_type="application/json")
    b = await bot(meme={"url": web.url("/api?q=${msg}&key=${key}"), "key": "k", "allow_private_hosts": True})
    scripted_llm.script([Calls([("meme", {"msg": "cat"})]), Reply("meow")])
    await b.fake.group_message(555, 42, [at(BOT), text(" a cat meme please")])
    await b.fake.wait_for(lambda: "meow" in b.fake.texts())
    images = [s for sent in b.fake.sent for s in sent["message"] if s["type"] == "image"]
    assert images == [{"type": "image", "data": {"file": "base64://" + base64.b64encode(PNG_1X1).decode()}}]
