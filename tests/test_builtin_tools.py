"""The platform built-ins through the real loop (T5, T6): webSearch/webExplore against a local Jina-like
server, meme with GJSON paths, send_file/local_image kept inside files.allowed_dirs (abused as a group
member), images to the model as image parts, described by a vision model (its tokens counted), or
refused, and images from an MCP tool routed the same way and sendable by ref."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from tests.conftest import make_settings
from tests.mcp_servers.harness import write_config
from tests.web_fake import PNG_1X1, Route, WebFake
from tools.meme import NO_KEY, image_urls

IMAGE_SERVER = str(Path(__file__).parent / "mcp_servers" / "image_server.py")
PNG_B64 = base64.b64encode(PNG_1X1).decode()



def tool_results(llm: ScriptedOpenAI) -> list[str]:
    """Every tool result of the conversation so far, as the last request carried them."""
    return [m["content"] for m in llm.requests[-1].messages if m["role"] == "tool"]


def last_tool(llm: ScriptedOpenAI) -> str:
    return next(m["content"] for m in reversed(llm.requests[-1].messages) if m["role"] == "tool")


def web_settings(web: WebFake, **extra):
    return {"search_url": web.url("/search"), "reader_url": web.url("/read/"), **extra}


# --- web --------------------------------------------------------------------------------------------

async def test_web_search_and_explore_through_the_loop(scripted_llm, make_chat, web):
    web.routes["/search"] = Route("1. Ania — a bot\nhttps://example.org/ania\n".encode())
    web.prefixes["/read/"] = Route(("Page text " + "y" * 9000).encode())
    chat = await make_chat(make_settings(scripted_llm, web=web_settings(web, jina_api_key="jk")))
    scripted_llm.script([Calls([("webSearch", {"query": "ania bot & friends"})]),
                         Calls([("webExplore", {"url": "https://example.org/ania"})]), Reply("done")])
    assert await chat.say("f:u1", "u1", "look it up") == ["done"]
    (search_path, headers), (read_path, _) = web.requests
    assert search_path == "/search?q=ania%20bot%20%26%20friends" and headers["Authorization"] == "Bearer jk"
    assert read_path == "/read/https://example.org/ania"
    results = tool_results(scripted_llm)
    assert results[0].startswith("1. Ania")
    assert results[1].startswith("Page text yyy") and results[1].endswith(
        "…[truncated: the result had 9010 characters; the first 8000 are shown]")


async def test_web_explore_of_a_url_that_fails_or_hangs_is_a_clear_result(scripted_llm, make_chat, web):
    web.prefixes["/read/http://broken"] = Route(b"boom", status=500)
    web.prefixes["/read/http://slow"] = Route(b"late", delay=5)
    chat = await make_chat(make_settings(scripted_llm, web=web_settings(web, timeout_sec=0.5)))
    scripted_llm.script([Calls([("webExplore", {"url": "http://broken.example/"}),
                                ("webExplore", {"url": "http://slow.example/"}),
                                ("webExplore", {"url": "file:///etc/passwd"})]), Reply("sorry")])
    assert await chat.say("f:u1", "u1", "read these") == ["sorry"]
    assert sorted(tool_results(scripted_llm)) == sorted([
        "Error: reading http://broken.example/ failed: HTTP 500 from 127.0.0.1",
        "Error: reading http://slow.example/ timed out after 0.5 s (web.timeout_sec); try again or another source",
        "Error: not an http(s) URL: 'file:///etc/passwd'",
    ])


async def test_web_search_refused_without_a_key_says_which_setting(scripted_llm, make_chat, web):
    web.routes["/search"] = Route(b"unauthorized", status=401)
    chat = await make_chat(make_settings(scripted_llm, web=web_settings(web)))
    scripted_llm.script([Calls([("webSearch", {"query": "x"})]), Reply("ok")])
    await chat.say("f:u1", "u1", "search")
    assert tool_results(scripted_llm) == ["Error: the web search was refused (HTTP 401): set web.jina_api_key"]


# --- meme -------------------------------------------------------------------------------------------

async def test_meme_without_a_key_gives_the_instruction_not_the_upstream_401(scripted_llm, make_chat, web):
    chat = await make_chat(make_settings(scripted_llm))  # the default GIPHY template needs ${key}
    scripted_llm.script([Calls([("meme", {"msg": "happy cat"})]), Reply("no meme")])
    await chat.say("f:u1", "u1", "send a meme")
    assert tool_results(scripted_llm) == [f"Error: {NO_KEY}"]
    assert web.requests == []


async def test_meme_gjson_paths_image_sent_to_the_chat(scripted_llm, make_chat, web, tmp_path):
    web.routes["/img/1.png"] = Route(PNG_1X1, content_type="image/png")
    web.routes["/api"] = Route(json.dumps({"payload": {"items": [
        {"media": [{"url": web.url("/img/1.png")}]}, {"media": [{"url": "ftp://nope"}]}]}}).encode(),
        content_type="application/json")
    meme = {"url": web.url("/api?q=${msg}&n=${num}&k=${key}"), "key": "mk", "list_path": "payload.items",
            "img_field": "media.0.url", "allow_private_hosts": True}  # the images are on 127.0.0.1
    chat = await make_chat(make_settings(scripted_llm, meme=meme))
    scripted_llm.script([Calls([("meme", {"msg": "happy cat", "num": 2})]), Reply("enjoy")])
    out = await chat.say("g:1", "u1", "meme please")
    assert out[0].startswith("[image saved: ") and out[1] == "enjoy"
    assert Path(out[0][len("[image saved: "):-1]).read_bytes() == PNG_1X1
    assert web.requests[0][0] == "/api?q=happy%20cat&n=2&k=mk"
    assert tool_results(scripted_llm) == ['Sent 1 meme image(s) for "happy cat" to the chat.']


async def test_meme_bad_answers_are_clear_results(scripted_llm, make_chat, web):
    web.routes["/notjson"] = Route(b"<html>", content_type="text/html")
    web.routes["/empty"] = Route(b'{"data": []}', content_type="application/json")
    web.routes["/denied"] = Route(b"{}", status=403)
    results = []
    for i, path in enumerate(("/notjson", "/empty", "/denied")):
        scripted_llm.reset()
        chat = await make_chat(make_settings(scripted_llm, meme={"url": web.url(path + "?q=${msg}")}))
        scripted_llm.script([Calls([("meme", {"msg": "x"})]), Reply("ok")])
        await chat.say(f"f:u{i}", f"u{i}", "meme")
        results += tool_results(scripted_llm)
    assert results == ["Error: the meme API did not answer with JSON (check meme.url)",
                       'No meme found for "x" (or meme.list_path / meme.img_field do not match the API\'s answer).',
                       "Error: the meme API refused the request (HTTP 403): check meme.key"]


def test_gjson_paths_default_giphy_shape():
    doc = {"data": [{"images": {"fixed_width": {"url": "https://g/1.gif"}}}, {"images": {}}]}
    assert image_urls(doc, "data", "images.fixed_width.url") == ["https://g/1.gif"]
    assert image_urls(doc, "missing.path", "x") == []
    assert image_urls(["https://a/b.png"], "", "") == ["https://a/b.png"]


# --- files: send_file and local_image -----------------------------------------------------------------

@pytest.fixture
def share(tmp_path):
    root = tmp_path / "share"
    root.mkdir()
    (root / "cat.png").write_bytes(PNG_1X1)
    (root / "notes.txt").write_text("notes")
    (tmp_path / "secret.txt").write_text("top secret")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    (root / "escape_dir").symlink_to(tmp_path)
    return root


async def test_files_tools_are_off_without_allowed_dirs(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    await chat.say("f:u1", "u1", "hi")
    names = scripted_llm.requests[0].tool_names
    assert "send_file" not in names and "local_image" not in names
    assert {"get_msg_history", "get_private_file_url", "load_images", "meme", "webExplore", "webSearch"} <= set(names)


async def test_a_group_member_cannot_get_files_outside_the_allowed_dirs(scripted_llm, make_chat, share, tmp_path):
    chat = await make_chat(make_settings(scripted_llm, files={"allowed_dirs": [str(share)]}, llm={"vision": True}))
    attempts = ["../../etc/passwd", "/etc/passwd", "../secret.txt", "escape", "escape_dir/secret.txt",
                str(share) + "/../secret.txt", "nothing/here.png"]
    scripted_llm.script([Calls([("local_image", {"path": p}) for p in attempts]
                               + [("send_file", {"path": p}) for p in attempts]), Reply("no luck")])
    assert await chat.say("g:grp", "u5", "show me /etc/passwd") == ["no luck"]
    results = [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert len(results) == 14
    for r in results:
        assert r.startswith("Error: ") and "top secret" not in r and "root:" not in r
    assert sum("is outside the directories files may come from" in r for r in results) == 12
    assert sum(r == "Error: no such file: nothing/here.png" for r in results) == 2
    assert not (tmp_path / "data" / "outbox").exists()  # nothing was sent


async def test_local_image_and_send_file_inside_the_allowed_dir(scripted_llm, make_chat, share):
    chat = await make_chat(make_settings(scripted_llm, files={"allowed_dirs": [str(share)]}, llm={"vision": True}))
    scripted_llm.script([Calls([("local_image", {"path": "cat.png"}), ("local_image", {"path": "notes.txt"})]),
                         Calls([("send_file", {"path": str(share / "notes.txt")})]), Reply("done")])
    out = await chat.say("f:u1", "u1", "look and send")
    assert out[0].startswith("[file saved: ") and out[-1] == "done"
    second = scripted_llm.requests[1].messages
    assert sorted(m["content"] for m in second if m["role"] == "tool") == [
        "Error: notes.txt is not a PNG, JPEG, GIF, WebP or BMP image.",
        "Loaded the image cat.png. (they follow as images after the tool results)"]
    assert second[-1]["role"] == "user" and second[-1]["content"][1]["image_url"]["url"].endswith(PNG_B64)
    assert tool_results(scripted_llm)[-1] == "Sent notes.txt to the chat."


async def test_send_file_over_the_size_limit(scripted_llm, make_chat, share):
    (share / "big.bin").write_bytes(b"x" * 2_000_000)
    chat = await make_chat(make_settings(scripted_llm, files={"allowed_dirs": [str(share)], "max_file_mb": 1}))
    scripted_llm.script([Calls([("send_file", {"path": "big.bin"})]), Reply("too big")])
    await chat.say("f:u1", "u1", "send it")
    assert tool_results(scripted_llm) == ["Error: big.bin is larger than files.max_file_mb (1 MB)"]


# --- images to the model ------------------------------------------------------------------------------

async def test_a_model_that_cannot_see_is_told_so(scripted_llm, make_chat, share):
    chat = await make_chat(make_settings(scripted_llm, files={"allowed_dirs": [str(share)]}))
    scripted_llm.script([Calls([("load_images", {}), ("local_image", {"path": "cat.png"})]), Reply("blind")])
    await chat.say("f:u1", "u1", "what is in the picture?")
    results = [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert results == ["Error: this model cannot see images: set llm.vision = true for a vision model, or "
                       "vision.base_url and vision.model for a second model that describes them"] * 2
    assert scripted_llm.requests[-1].messages[-1]["role"] == "tool"  # no image message follows


async def test_vision_model_describes_and_its_tokens_count_in_the_turn(scripted_llm, make_chat, share):
    with ScriptedOpenAI(model="vision-model") as seer:
        seer.script([Reply("1. A single grey pixel.")])
        vision = {"base_url": seer.base_url, "model": "vision-model", "api_key": "vk"}
        chat = await make_chat(make_settings(scripted_llm, vision=vision, files={"allowed_dirs": [str(share)]}))
        scripted_llm.script([Calls([("local_image", {"path": "cat.png"})]), Reply("it is a pixel")])
        task = await chat.entry.submit("f:u1", "u1", "describe cat.png")
        result = await task
        assert result.reply == "it is a pixel"
        sent = seer.requests[0].messages[0]["content"]
        assert sent[1]["image_url"]["url"] == "data:image/png;base64," + PNG_B64
        last = scripted_llm.requests[-1].messages
        assert last[-1] == {"role": "user", "content":
                            '<image_descriptions count="1">\n1. A single grey pixel.\n</image_descriptions>'}
        assert "(a vision model describes them after the tool results)" in last[-2]["content"]
        assert result.usage["requests"] == 3  # two of the main model, one of the vision model
        main_only = sum(r for r in (len(q.raw) // 4 for q in scripted_llm.requests))
        assert result.usage["input_tokens"] > main_only


async def test_vision_model_failure_is_said_and_the_turn_goes_on(scripted_llm, make_chat, share):
    vision = {"base_url": "http://127.0.0.1:9/v1", "model": "gone", "timeout_sec": 2}
    chat = await make_chat(make_settings(scripted_llm, vision=vision, files={"allowed_dirs": [str(share)]}))
    scripted_llm.script([Calls([("local_image", {"path": "cat.png"})]), Reply("could not see it")])
    assert await chat.say("f:u1", "u1", "describe") == ["could not see it"]
    assert scripted_llm.requests[-1].messages[-1]["content"].startswith(
        '<image_descriptions count="1">The images could not be described: the vision model failed (')


# --- images from MCP tools ----------------------------------------------------------------------------

async def test_mcp_image_goes_to_the_model_and_can_be_sent_to_the_chat(scripted_llm, make_chat, tmp_path):
    write_config(tmp_path / "config", {"img": {"command": sys.executable, "args": [IMAGE_SERVER]}})
    chat = await make_chat(make_settings(scripted_llm, mcp={"lazy_load": False}, llm={"vision": True}))
    scripted_llm.script([Calls([("mcp__img__get-tiny-image", {})]),
                         lambda body: Calls([("send_image", {"ref": _ref(body)})]), Reply("here it is")])
    out = await chat.say("f:u1", "u1", "show me the tiny image")
    second = scripted_llm.requests[1].messages
    tool = next(m["content"] for m in second if m["role"] == "tool")
    assert tool.startswith("This is a tiny image:\n[image image/png, 96 base64 characters]\n"
                           "The image above is the MCP logo.\n[image from the tool img-")
    assert "shown to you after the tool results" in tool
    assert second[-1]["content"][1]["image_url"]["url"] == "data:image/png;base64," + PNG_B64
    assert out[0].startswith("[image saved: ") and Path(out[0][14:-1]).read_bytes() == PNG_1X1
    assert out[-1] == "here it is"


async def test_mcp_image_for_a_model_that_cannot_see_is_not_queued(scripted_llm, make_chat, tmp_path):
    write_config(tmp_path / "config", {"img": {"command": sys.executable, "args": [IMAGE_SERVER]}})
    chat = await make_chat(make_settings(scripted_llm, mcp={"lazy_load": False}))
    scripted_llm.script([Calls([("mcp__img__get-tiny-image", {})]), Reply("ok")])
    await chat.say("f:u1", "u1", "tiny image")
    tool = last_tool(scripted_llm)
    assert "not shown: this model cannot see images" in tool
    assert scripted_llm.requests[-1].messages[-1]["role"] == "tool"


async def test_send_image_of_an_unknown_ref(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Calls([("send_image", {"ref": "img-999"})]), Reply("ok")])
    await chat.say("f:u1", "u1", "send it")
    assert tool_results(scripted_llm) == ['Error: no image "img-999" in this chat (refs you can send: none)']


def _ref(body: dict) -> str:
    tool = next(m["content"] for m in body["messages"] if m["role"] == "tool")
    return tool.split("[image from the tool ", 1)[1].split(":", 1)[0]
