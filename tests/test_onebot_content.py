"""An incoming OneBot message read once into `Content` (spec: message/array.md, message/segment.md): what
each reader gets from representative segment arrays, and that junk never makes the read raise."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ania.platforms.onebot.events import parse_event
from ania.platforms.onebot.message import Content, Mention, Segment, parse_content, parse_cq, read, to_cq

BOT = "10000"


def seg(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": data}


def test_text_only():
    c = parse_content([seg("text", text="  hello "), seg("text", text="world  ")])
    assert c.plain == "hello world" and c.text(BOT) == "hello world"
    assert c.mentioned == () and not c.mentions(BOT) and c.images == () and c.reply_id == "" and c.file_ids == ()


def test_at_the_bot_someone_and_all():
    c = parse_content([seg("at", qq=BOT), seg("text", text=" hi "), seg("at", qq="7"), seg("at", qq="all")])
    assert c.mentioned == (BOT, "7", "all") and c.mentions(BOT) and not c.mentions("8")
    assert c.text(BOT) == "hi @7@all", "the @ that addressed the bot is left out"
    assert c.text() == f"@{BOT} hi @7@all", "with the bot's id unknown every @ is shown"
    assert c.text(BOT, {"7": "Bob"}) == "hi @Bob@all"
    assert c.plain == "hi", "commands and approval replies are matched on the typed text only"
    assert not c.mentions(""), "an unknown id of the bot is never mentioned"


def test_image_face_and_the_quoted_message():
    c = parse_content([seg("reply", id="55"), seg("image", file="a.jpg", url="https://x/a.jpg"),
                       seg("face", id="14"), seg("text", text="look")])
    assert c.reply_id == "55" and c.text(BOT) == "[image][face 14]look" and c.plain == "look"
    assert c.images == (Segment("image", {"file": "a.jpg", "url": "https://x/a.jpg"}),)


def test_files_with_and_without_an_id():
    c = parse_content([seg("file", file="r.pdf", file_id="f-1"), seg("file", name="n.zip"), seg("file")])
    assert c.file_ids == ("f-1",)
    assert c.text(BOT) == "[file r.pdf, file_id f-1][file n.zip][file file]"


def test_mixed_message_in_the_cq_form_reads_as_the_array():
    array = [seg("reply", id="9"), seg("at", qq=BOT), seg("text", text=" see [this], & that "),
             seg("image", file="b.png"), seg("file", file="c.txt", file_id="f-2"), seg("poke", type="1", id="2")]
    c = parse_content(array)
    assert parse_content(to_cq(c.segments)) == c and read(parse_cq(to_cq(c.segments))) == c
    assert c.text(BOT) == "see [this], & that [image][file c.txt, file_id f-2][poke]"
    assert (c.reply_id, c.file_ids, len(c.images), c.plain) == ("9", ("f-2",), 1, "see [this], & that")


def test_the_first_reply_with_an_id_is_the_quote():
    c = parse_content([seg("reply"), seg("reply", id=""), seg("reply", id="3"), seg("reply", id="4")])
    assert c.reply_id == "3" and c.text(BOT) == "" and c.pieces == ()


@pytest.mark.parametrize("raw", [
    None, 42, "", [], {}, [None], ["junk"], [{"type": 5}], [{"data": {"text": "x"}}], [{"type": "text"}],
    [{"type": "text", "data": None}], [{"type": "text", "data": [1, 2]}], [{"type": "text", "data": {"text": None}}],
    [{"type": "at", "data": {}}], [{"type": "at", "data": {"qq": 10000}}], [{"type": "reply", "data": {"id": 7}}],
    [{"type": "image", "data": {}}], [{"type": "file", "data": {"file_id": True}}], [{"type": "", "data": {}}],
    "[CQ:at]", "[CQ:at,qq=]", "[CQ:reply,id=", "[CQ:image,file]", "&#91;CQ:face,id=1&#93;",
])
def test_malformed_segments_never_make_the_read_raise(raw: Any):
    c = parse_content(raw)
    assert isinstance(c, Content) and isinstance(c.text(BOT), str) and isinstance(c.plain, str)


def test_malformed_segments_keep_what_can_be_read():
    c = parse_content([{"type": "at", "data": {"qq": 10000}}, {"type": "at", "data": {}}, "junk",
                       {"type": "reply", "data": {"id": 7}}, {"type": "image"}, {"type": "text", "data": [1]},
                       {"type": "file", "data": {"file_id": 12}}, {"type": "text", "data": {"text": "ok"}}])
    assert c.mentioned == (BOT, "") and c.mentions(BOT), "a numeric qq is read as its digits"
    assert c.pieces[:2] == (Mention(BOT), Mention("")) and c.text(BOT) == "@[image][file file, file_id 12]ok"
    assert (c.reply_id, c.file_ids, c.plain, len(c.images)) == ("7", ("12",), "ok", 1)


def test_random_junk_arrays_read_without_an_error():
    rng = random.Random(27)
    values: list[Any] = [None, True, 0, 7, -1.5, "", "x", "10000", "all", "[CQ:at,qq=1]", [], {}, [1], {"a": 1},
                         "\ud800", "a" * 300]
    types = ["text", "at", "image", "reply", "face", "file", "record", "", "node", 3, None]
    keys = ["text", "qq", "id", "file", "file_id", "url", "name", "", 1]
    for _ in range(400):
        raw = []
        for _ in range(rng.randrange(6)):
            item: Any = {"type": rng.choice(types)}
            if rng.random() < 0.8:
                item["data"] = {rng.choice(keys): rng.choice(values) for _ in range(rng.randrange(4))}
            raw.append(item if rng.random() < 0.9 else rng.choice(values))
        c = parse_content(raw)
        assert c.text(BOT) == c.text(BOT).strip() and all(isinstance(i, str) for i in c.mentioned + c.file_ids)


def test_the_event_carries_the_read_message():
    msg = parse_event({"message_type": "group", "group_id": 5, "user_id": 42, "message_id": 3,
                       "message": f"[CQ:reply,id=2][CQ:at,qq={BOT}] /plan on"})
    assert msg is not None and msg.content.plain == "/plan on" and msg.content.reply_id == "2"
    assert msg.content.mentions(BOT) and msg.render(BOT) == "/plan on"
    empty = parse_event({"message_type": "private", "user_id": 1})
    assert empty is not None and empty.content == Content()
