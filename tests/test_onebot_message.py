"""OneBot message parsing (spec: message/string.md, message/array.md) and reply splitting, as units."""

from __future__ import annotations

from ania.platforms.onebot.events import allowed, parse_event, strip_prefix
from ania.platforms.onebot.message import (
    Segment,
    parse_cq,
    parse_message,
    read,
    split_text,
    to_cq,
)
from core.settings import BotSettings


def test_cq_string_as_in_the_spec():
    segs = parse_cq("&#91;第一部分&#93;[CQ:image,file=123.jpg]图片之后的部分，表情：[CQ:face,id=123]")
    assert segs == [Segment("text", {"text": "[第一部分]"}), Segment("image", {"file": "123.jpg"}),
                    Segment("text", {"text": "图片之后的部分，表情："}), Segment("face", {"id": "123"})]
    share = parse_cq("[CQ:share,title=震惊&#44;小伙睡觉前居然...,url=http://baidu.com/?a=1&amp;b=2]")
    assert share == [Segment("share", {"title": "震惊,小伙睡觉前居然...", "url": "http://baidu.com/?a=1&b=2"})]
    assert parse_cq("[CQ:share,title=标题中有=等号,url=http://baidu.com]")[0].data["title"] == "标题中有=等号"
    assert parse_cq("[CQ:shake]") == [Segment("shake", {})]


def test_cq_round_trip_and_broken_codes_stay_text():
    segs = [Segment("text", {"text": "a [b], & c"}), Segment("at", {"qq": "1"}), Segment("x", {"k": "v,w]"})]
    assert parse_cq(to_cq(segs)) == segs
    assert parse_cq("[CQ:broken") == [Segment("text", {"text": "[CQ:broken"})]


def test_array_with_junk_keeps_what_it_can():
    raw = [{"type": "text", "data": {"text": "hi"}}, "junk", {"type": 5}, {"type": "face", "data": None},
           {"type": "image", "data": {"file": "a.png", "file_size": 12, "sub_type": 0, "x": None}},
           {"type": "video", "data": [1]}]
    assert parse_message(raw) == [Segment("text", {"text": "hi"}), Segment("face", {}),
                                  Segment("image", {"file": "a.png", "file_size": "12", "sub_type": "0"})]
    assert parse_message({"type": "text", "data": {"text": "single"}}) == [Segment("text", {"text": "single"})]
    assert parse_message(None) == [] and parse_message(42) == []


def test_render_for_the_model():
    segs = parse_message([{"type": "at", "data": {"qq": "10000"}}, {"type": "text", "data": {"text": " hey "}},
                          {"type": "at", "data": {"qq": "all"}}, {"type": "at", "data": {"qq": "7"}},
                          {"type": "reply", "data": {"id": "5"}}, {"type": "image", "data": {"file": "a"}},
                          {"type": "file", "data": {"file": "r.pdf", "file_id": "x1"}}, {"type": "poke", "data": {}}])
    content = read(segs)
    assert content.text("10000") == "hey @all@7[image][file r.pdf, file_id x1][poke]"
    assert content.mentions("10000") and not content.mentions("8") and not content.mentions("")
    assert content.reply_id == "5"


def test_split_on_paragraphs_then_lines_then_spaces():
    assert split_text("short", 10) == ["short"]
    assert split_text("  ", 10) == []
    assert split_text("aaaa\n\nbbbb\n\ncccc", 10) == ["aaaa\n\nbbbb", "cccc"]
    assert split_text("one two three four five", 10) == ["one two", "three four", "five"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    for chunk in split_text("\n".join(["line " * 7] * 9), 40):
        assert len(chunk) <= 40


def test_event_fields_that_are_missing_or_of_the_wrong_type():
    assert parse_event({"message_type": "group", "user_id": 1, "message": "x"}) is None  # no group id
    assert parse_event({"message_type": "private", "user_id": "abc", "message": "x"}) is None
    assert parse_event({"message_type": "private", "user_id": True, "message": "x"}) is None
    assert parse_event({"message_type": "discuss", "user_id": 1, "message": "x"}) is None
    msg = parse_event({"message_type": "group", "group_id": "555", "user_id": 42, "raw_message": "[CQ:face,id=1]",
                       "sender": "not a dict", "message_id": 9})
    assert msg is not None and msg.session_key == "g:555" and msg.name == "42" and msg.render() == "[face 1]"


def test_lists_and_prefixes():
    bot = BotSettings(admins=["1"], users=["2"], groups=["9"], blocked_users=["3"])
    grp = parse_event({"message_type": "group", "group_id": 9, "user_id": 2, "message": "x"})
    other = parse_event({"message_type": "group", "group_id": 8, "user_id": 2, "message": "x"})
    stranger = parse_event({"message_type": "private", "user_id": 4, "message": "x"})
    admin = parse_event({"message_type": "private", "user_id": 1, "message": "x"})
    assert grp and other and stranger and admin
    assert allowed(grp, bot) is None and allowed(admin, bot) is None
    assert allowed(other, bot) == "group not in bot.groups"
    assert allowed(stranger, bot) == "user not in bot.users"
    assert strip_prefix("Ania, hi", ["ania"]) == "hi" and strip_prefix("hi ania", ["ania"]) is None
    assert strip_prefix("/ai help", ["/a", "/ai"]) == "help"
