"""Downloads the model, a member, a web page or a remote API can steer never reach the bot's own machine or
network (issue 22, item 6): an image segment's URL (load_images), the image URLs a meme API answers, a
page read without a reader, and every redirect, all through one guard (services/net/fetch.py). The
"private" server is a real HTTP server on 127.0.0.1 that records every request; refused means it was
never asked, and the turn goes on with a clear tool result. Each feature's allow_private_hosts lets it through.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from typing import Any

import pytest

from ania.fakes.openai_server import Calls, Reply
from tests.conftest import make_settings
from tests.onebot_fake import at, image, text
from tests.onebot_helpers import BOT
from tests.test_builtin_tools import tool_results
from tests.web_fake import PNG_1X1, Route, WebFake


def paths(web: WebFake) -> list[str]:
    return [p for p, _ in web.requests]


def refusal(url: str, setting: str) -> str:
    return (f"refused to download from {url}: 127.0.0.1 is a loopback or private-network address (127.0.0.1); "
            f"an admin can allow private hosts with {setting}")


# --- a member's image segment (OneBot) ------------------------------------------------------------------

async def test_a_members_image_url_on_loopback_is_refused_and_never_fetched(bot, scripted_llm, web):
    web.routes["/router-admin.png"] = Route(PNG_1X1, content_type="image/png")
    url = web.url("/router-admin.png")
    b = await bot(llm={"vision": True})
    scripted_llm.script([Calls([("load_images", {})]), Reply("could not see it")])
    await b.fake.group_message(555, 42, [at(BOT), text(" look"), image(url, file="crafted.png")])
    await b.fake.wait_for(lambda: "could not see it" in b.fake.texts())
    assert tool_results(scripted_llm) == [
        f"Error: the images could not be loaded ({refusal(url, 'onebot.allow_private_hosts')})."]
    assert paths(web) == []  # the server was never asked


async def test_with_onebot_allow_private_hosts_a_lan_image_is_fetched(bot, scripted_llm, web):
    web.routes["/lan.png"] = Route(PNG_1X1, content_type="image/png")
    b = await bot(llm={"vision": True}, onebot={"allow_private_hosts": True})
    scripted_llm.script([Calls([("load_images", {})]), Reply("a pixel")])
    await b.fake.group_message(555, 42, [at(BOT), text(" look"), image(web.url("/lan.png"))])
    await b.fake.wait_for(lambda: "a pixel" in b.fake.texts())
    assert tool_results(scripted_llm)[0].startswith("Loaded 1 image(s) (1 from this message)")
    assert paths(web) == ["/lan.png"]


async def test_the_implementations_own_get_image_answer_on_loopback_is_trusted(bot, scripted_llm, web):
    """NapCat on this machine: the segment's URL is refused, so the implementation is asked for the file, and
    its answer (a URL on its own 127.0.0.1 server) is fetched: the peer is the operator's, a member is not."""
    web.routes["/napcat/cache/7f3a.png"] = Route(PNG_1X1, content_type="image/png")
    b = await bot(llm={"vision": True})
    b.fake.images["7f3a.image"] = {"file": "/nonexistent/7f3a.png", "url": web.url("/napcat/cache/7f3a.png")}
    scripted_llm.script([Calls([("load_images", {})]), Reply("seen")])
    await b.fake.group_message(555, 42, [at(BOT), image(web.url("/member-chosen"), file="7f3a.image")])
    await b.fake.wait_for(lambda: "seen" in b.fake.texts())
    assert tool_results(scripted_llm)[0].startswith("Loaded 1 image(s) (1 from this message)")
    assert paths(web) == ["/napcat/cache/7f3a.png"]


# --- meme: image URLs from the API's answer -------------------------------------------------------------

def meme_api(web: WebFake, image_url: str) -> dict[str, Any]:
    web.routes["/api"] = Route(json.dumps({"data": [{"images": {"fixed_width": {"url": image_url}}}]}).encode(),
                               content_type="application/json")
    return {"url": web.url("/api?q=${msg}"), "key": ""}


async def test_a_meme_api_answer_pointing_at_loopback_is_refused(scripted_llm, make_chat, web):
    web.routes["/internal.png"] = Route(PNG_1X1, content_type="image/png")
    url = web.url("/internal.png")
    chat = await make_chat(make_settings(scripted_llm, meme=meme_api(web, url)))
    scripted_llm.script([Calls([("meme", {"msg": "cat"})]), Reply("no meme today")])
    assert await chat.say("g:1", "u1", "meme please") == ["no meme today"]
    assert tool_results(scripted_llm) == [
        f'Error: found memes for "cat" but none could be sent: {refusal(url, "meme.allow_private_hosts")}']
    assert paths(web) == ["/api?q=cat"]  # the operator's API was asked, the image never


async def test_with_meme_allow_private_hosts_the_image_is_sent(scripted_llm, make_chat, web):
    web.routes["/internal.png"] = Route(PNG_1X1, content_type="image/png")
    meme = {**meme_api(web, web.url("/internal.png")), "allow_private_hosts": True}
    chat = await make_chat(make_settings(scripted_llm, meme=meme))
    scripted_llm.script([Calls([("meme", {"msg": "cat"})]), Reply("enjoy")])
    await chat.say("g:1", "u1", "meme please")
    assert tool_results(scripted_llm) == ['Sent 1 meme image(s) for "cat" to the chat.']
    assert paths(web) == ["/api?q=cat", "/internal.png"]


async def test_a_name_that_resolves_to_loopback_is_refused(scripted_llm, make_chat, web, monkeypatch):
    """A public-looking name whose DNS answer is private (the resolver answers as a hostile DNS would)."""
    web.routes["/x.png"] = Route(PNG_1X1, content_type="image/png")
    port = web.base.rsplit(":", 1)[1]
    loop = asyncio.get_running_loop()
    real = loop.getaddrinfo

    async def resolve(host: Any, port_: Any, **kw: Any) -> Any:
        if host == "cdn.memes.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port_)))]
        return await real(host, port_, **kw)

    monkeypatch.setattr(loop, "getaddrinfo", resolve)
    url = f"http://cdn.memes.example:{port}/x.png"
    chat = await make_chat(make_settings(scripted_llm, meme=meme_api(web, url)))
    scripted_llm.script([Calls([("meme", {"msg": "cat"})]), Reply("none")])
    await chat.say("g:1", "u1", "meme please")
    assert tool_results(scripted_llm) == [
        f'Error: found memes for "cat" but none could be sent: refused to download from {url}: cdn.memes.example is '
        "a loopback or private-network address (127.0.0.1); an admin can allow private hosts with "
        "meme.allow_private_hosts"]
    assert paths(web) == ["/api?q=cat"]


# --- web: redirects and a page read without a reader ----------------------------------------------------

async def test_a_redirect_from_the_reader_to_another_private_host_is_refused(scripted_llm, make_chat, web):
    """The reader is the operator's (127.0.0.1 here, unchecked); its redirect to another host is checked."""
    port = web.base.rsplit(":", 1)[1]
    inside = f"http://localhost:{port}/metadata"
    web.routes["/metadata"] = Route(b"secret")
    web.prefixes["/read/"] = Route(b"", status=302, location=inside)
    chat = await make_chat(make_settings(scripted_llm, web={"reader_url": web.url("/read/")}))
    scripted_llm.script([Calls([("webExplore", {"url": "https://news.example/a"})]), Reply("could not read")])
    assert await chat.say("f:u1", "u1", "read it") == ["could not read"]
    [result] = tool_results(scripted_llm)
    assert result.startswith(f"Error: reading https://news.example/a failed: refused to download from {inside}: "
                             "localhost is a loopback or private-network address")
    assert result.endswith("an admin can allow private hosts with web.allow_private_hosts")
    assert paths(web) == ["/read/https://news.example/a"]


@pytest.mark.parametrize("allow", [False, True])
async def test_a_page_read_without_a_reader_goes_through_the_guard(scripted_llm, make_chat, web, allow):
    web.routes["/admin"] = Route(b"router admin page")
    url = web.url("/admin")
    chat = await make_chat(make_settings(scripted_llm, web={"reader_url": "", "allow_private_hosts": allow}))
    scripted_llm.script([Calls([("webExplore", {"url": url})]), Reply("done")])
    await chat.say("f:u1", "u1", "read it")
    if allow:
        assert tool_results(scripted_llm) == ["router admin page"] and paths(web) == ["/admin"]
    else:
        assert tool_results(scripted_llm) == [
            f"Error: reading {url} failed: {refusal(url, 'web.allow_private_hosts')}"]
        assert paths(web) == []


async def test_the_jina_key_goes_to_the_reader_only(scripted_llm, make_chat, web):
    """Not to a page fetched directly, nor to the host a redirect leads to (both allowed here)."""
    port = web.base.rsplit(":", 1)[1]
    web.routes["/page"] = Route(b"page text")
    web.prefixes["/read/"] = Route(b"", status=302, location=f"http://localhost:{port}/page")
    key = "jina-secret-key"
    for reader in (web.url("/read/"), ""):
        scripted_llm.reset()
        chat = await make_chat(make_settings(scripted_llm, web={"reader_url": reader, "jina_api_key": key,
                                                                "allow_private_hosts": True}))
        scripted_llm.script([Calls([("webExplore", {"url": web.url("/page")})]), Reply("done")])
        await chat.say(f"f:u{len(reader)}", "u1", "read it")
        assert tool_results(scripted_llm) == ["page text"]
    sent = {path: headers.get("Authorization") for path, headers in web.requests}
    assert sent == {f"/read/{web.url('/page')}": f"Bearer {key}", "/page": None}, sent


async def test_a_compressed_image_is_capped_at_its_decoded_size(scripted_llm, make_chat, web):
    """11 KB of gzip that would unpack to 11 MB, sent although identity was asked: cut at 10 MB."""
    web.routes["/bomb.png"] = Route(gzip.compress(b"\0" * (11 << 20)), content_type="image/png", encoding="gzip")
    web.routes["/small.png"] = Route(gzip.compress(PNG_1X1), content_type="image/png", encoding="gzip")
    for path, want in (("/bomb.png", 'found memes for "cat" but none could be sent: the download is larger '
                                      "than 10 MB"), ("/small.png", 'Sent 1 meme image(s) for "cat"')):
        scripted_llm.reset()
        meme = {**meme_api(web, web.url(path)), "allow_private_hosts": True}
        chat = await make_chat(make_settings(scripted_llm, meme=meme))
        scripted_llm.script([Calls([("meme", {"msg": "cat"})]), Reply("done")])
        await chat.say(f"g:{len(path)}", "u1", "meme please")  # a session per image
        assert want in tool_results(scripted_llm)[-1]


# --- IPv6 spellings of a private IPv4 address that Python counts as global ------------------------------

@pytest.mark.parametrize("address", [
    "::127.0.0.1", "::a00:5",  # IPv4-compatible
    "::ffff:0:7f00:1",  # SIIT-translated
    "64:ff9b::7f00:1", "64:ff9b::a00:5", "64:ff9b::a9fe:a9fe",  # NAT64: 127.0.0.1, 10.0.0.5, the metadata address
    "64:ff9b:1::808:808",  # NAT64's local-use prefix
])
async def test_an_ipv6_form_of_a_private_address_is_refused(address):
    """On an IPv6-only host behind NAT64, a DNS answer of 64:ff9b::a00:5 reaches the LAN's 10.0.0.5."""
    from services.net.guard import PrivateAddress, public_target

    with pytest.raises(PrivateAddress, match="is a loopback or private-network address"):
        await public_target(f"http://[{address}]/x")


async def test_a_public_address_through_nat64_is_still_allowed():
    from services.net.guard import public_target

    assert (await public_target("http://[64:ff9b::808:808]/x")).url == "http://[64:ff9b::808:808]/x"
