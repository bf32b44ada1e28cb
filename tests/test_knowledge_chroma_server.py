"""`knowledge.chroma_url`: the knowledge base on a real Chroma server (`chroma run`, ania/localservers/chroma.py)
behaves as the embedded store does, is shared by every bot pointed at it, and a server that goes away is a
clear error that loses nothing (and never shows the URL's credentials)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.localservers.chroma import LocalChroma
from core.errors import ToolError
from core.settings import Settings
from services.knowledge import GLOBAL, KnowledgeService
from services.knowledge.server import ChromaServer
from services.knowledge.service import INDEX_DIR
from tests.chroma_helpers import chroma_server, chroma_url  # noqa: F401 - fixtures
from tests.conftest import make_settings
from tests.test_knowledge_tools import tool_results

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parent.parent
DOCS = {
    "wifi": "The office Wi-Fi network is called Ania-Guest and its password is printed on the fridge.",
    "lunch": "Lunch is served at noon in the canteen on the ground floor, vegetarian on Fridays.",
    "parking": "Visitors park in the north lot; the gate code is given at the front desk.\n\n" * 12,
    "群规": "本群禁止发广告和刷屏。违反一次警告，违反三次由管理员移出群聊。",
    "例会": "每周五晚上八点在语音频道开例会，请准时参加。缺席请提前在群里说明。",
}
QUERIES = ("wifi password", "where is lunch served", "gate code for visitors", "发广告会怎么样", "例会是几点",
           "nothing like this")


def with_secret(url: str) -> str:
    """The same server with credentials in the URL (the local server ignores them; they must not leak)."""
    return url.replace("http://", "http://ops:s3cret-pw@")


@pytest.fixture
async def knowledge(scripted_llm: ScriptedOpenAI, tmp_path: Path) -> AsyncIterator[Callable[..., KnowledgeService]]:
    made: list[KnowledgeService] = []

    def make(name: str, url: str = "") -> KnowledgeService:
        embedding = {"base_url": scripted_llm.base_url, "model": "fake-embed", "timeout_sec": 5}
        svc = KnowledgeService(Settings(knowledge={"chroma_url": url}, embedding=embedding), tmp_path / name)
        made.append(svc)
        return svc

    yield make
    for svc in made:
        await svc.aclose()


def found(hits: list[Any]) -> list[tuple[str, int, str, float]]:
    return [(h.chunk.title, h.chunk.pos, h.chunk.scope, round(h.score, 6)) for h in hits]


async def test_the_server_gives_the_embedded_stores_results_and_deletes(knowledge, chroma_url: str,  # noqa: F811
                                                                         tmp_path: Path) -> None:
    embedded, served = knowledge("embedded"), knowledge("served", chroma_url)
    for svc in (embedded, served):
        for title, text in DOCS.items():
            added = await svc.add_document("g:1" if title in ("lunch", "例会") else GLOBAL, title, text)
            assert added.vectors
    assert not (tmp_path / "served" / "chroma").exists()  # no embedded store was made beside the server
    assert sorted(p.name for p in (tmp_path / "served" / INDEX_DIR).glob("*.sqlite3")) == ["kb.sqlite3",
                                                                                           "memory.sqlite3"]
    for query in QUERIES:
        want = found(await embedded.search("g:1", query, 5))
        assert found(await served.search("g:1", query, 5)) == want, query
    assert found(await served.search("g:1", "wifi password", 5))[0][0] == "wifi"
    assert found(await served.search("g:1", "发广告会怎么样", 5))[0][0] == "群规"
    assert (await served.list_documents(GLOBAL, 10))[1] == 3

    for svc in (embedded, served):
        [doc] = [d for d in (await svc.list_documents(GLOBAL, 10))[0] if d.title == "parking"]
        assert (await svc.delete_document(doc.id, None, None)).chunks > 1
    for query in QUERIES:
        assert found(await served.search("g:1", query, 5)) == found(await embedded.search("g:1", query, 5))
    assert "parking" not in [t for t, *_ in found(await served.search("g:1", "gate code for visitors", 5))]
    assert (await served.list_documents(GLOBAL, 10))[1] == 2


async def test_two_engines_on_one_server_see_one_knowledge_base(scripted_llm, make_chat, chroma_url: str,  # noqa: F811
                                                                 tmp_path: Path) -> None:
    settings = make_settings(scripted_llm, bot={"admins": ["admin"]}, knowledge={"chroma_url": chroma_url})
    one = await make_chat(settings, data=tmp_path / "one")
    two = await make_chat(settings, data=tmp_path / "two")
    scripted_llm.script([Calls([("kb_add", {"title": "群规", "content": DOCS["群规"], "scope": "global"})]),
                         Reply("ok")])
    await one.say("f:admin", "admin", "store the rules")
    doc_id = tool_results(scripted_llm)[0].split(" as ")[1].split(" ")[0]
    scripted_llm.script([Calls([("kb_search", {"query": "发广告会怎么样"})]), Reply("ok")])
    await two.say("g:club", "u5", "发广告会怎么样？")
    assert doc_id in tool_results(scripted_llm)[0] and "移出群聊" in tool_results(scripted_llm)[0]

    scripted_llm.script([Calls([("kb_delete", {"doc_id": doc_id})]), Reply("ok")])
    await two.say("f:admin", "admin", f"delete {doc_id}")
    assert tool_results(scripted_llm) == [f'Deleted "群规" ({doc_id}, 1 passage) from the global knowledge base.']
    scripted_llm.script([Calls([("kb_search", {"query": "发广告会怎么样"})]), Reply("ok")])
    await one.say("g:club", "u5", "发广告会怎么样？")
    assert doc_id not in tool_results(scripted_llm)[0] and "移出群聊" not in tool_results(scripted_llm)[0]


def kb_cli(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    (tmp_path / "config").mkdir(exist_ok=True)
    env.update(ANIA_CONFIG_DIR=str(tmp_path / "config"), ANIA_DATA_DIR=str(tmp_path / "cli"), PYTHONPATH=str(ROOT),
               ANIA_KNOWLEDGE__CHROMA_URL=url)
    return subprocess.run([sys.executable, "-m", "ania.cli", "kb", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=90, check=False)


async def test_a_stopped_server_is_a_clear_error_without_the_secret_and_nothing_is_lost(
        scripted_llm, make_chat, chroma_server: LocalChroma, chroma_url: str, tmp_path: Path,  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    url = with_secret(chroma_url)
    shown = chroma_url.replace("http://", "http://***@")
    chat = await make_chat(make_settings(scripted_llm, bot={"admins": ["admin"]}, knowledge={"chroma_url": url}))
    scripted_llm.script([Calls([("kb_add", {"title": "例会", "content": DOCS["例会"], "scope": "global"})]),
                         Reply("ok")])
    await chat.say("f:admin", "admin", "store it")
    assert tool_results(scripted_llm)[0].startswith('Stored "例会"')

    chroma_server.stop(remove=False)
    try:
        with caplog.at_level(logging.DEBUG):
            scripted_llm.script([Calls([("kb_search", {"query": "例会是几点"}),
                                        ("kb_add", {"title": "lunch", "content": DOCS["lunch"]})]), Reply("sorry")])
            assert await chat.say("g:club", "u5", "例会是几点？") == ["sorry"]
        search_error, add_error = tool_results(scripted_llm)
        for said in (search_error, add_error):
            assert said.startswith("Error: The knowledge store cannot be used (")
            assert f"The Chroma server at {shown} is down or unreachable" in said and "Nothing was changed" in said
        cli = kb_cli(tmp_path, url, "search", "例会")
        assert cli.returncode == 1 and cli.stdout == ""
        last = cli.stderr.splitlines()[-1]
        assert last.startswith("ania: The knowledge store cannot be used (") and shown in last
        assert "Traceback" not in cli.stderr
        for text in (search_error, add_error, cli.stderr, caplog.text):
            assert "s3cret-pw" not in text and "ops:" not in text
    finally:
        chroma_server.start()

    scripted_llm.script([Calls([("kb_search", {"query": "例会是几点"}),
                                ("kb_add", {"title": "lunch", "content": DOCS["lunch"]})]), Reply("ok")])
    await chat.say("g:club", "u5", "例会是几点？")
    search, added = tool_results(scripted_llm)
    assert "每周五晚上八点" in search and added.startswith('Stored "lunch"')
    cli = kb_cli(tmp_path, url, "list")
    assert cli.returncode == 0 and cli.stdout.startswith("Documents in global (1 of 1, newest first):")


def test_the_url_is_read_once_and_a_bad_one_says_what_is_wrong() -> None:
    server = ChromaServer.parse("https://ops:p%40ss@chroma.lan/?database=bot1")
    assert (server.host, server.port, server.ssl, server.tenant, server.database) == (
        "chroma.lan", 443, True, "default_tenant", "bot1")
    assert server.headers == {"Authorization": "Basic b3BzOnBAc3M="} and server.label == "https://***@chroma.lan/?database=bot1"
    assert "p@ss" not in repr(server) and "b3Bz" not in repr(server)
    assert ChromaServer.parse("http://:tok@127.0.0.1:9000").headers == {"Authorization": "Bearer tok"}
    assert ChromaServer.parse("http://127.0.0.1").port == 8000
    for bad, why in (("ftp://ops:pw@host", "needs http"), ("http://ops:pw@host/prefix", "a path (/prefix)"),
                     ("http://ops:pw@host/?db=x", "unknown parameter db"), ("http://ops:pw@host:99999", "out of range")):
        with pytest.raises(ToolError, match=re.escape(why)) as raised:
            ChromaServer.parse(bad)
        assert "pw" not in str(raised.value) and "***@" in str(raised.value)


def test_the_local_server_restarts_with_its_data_and_a_failed_start_names_the_command(tmp_path: Path) -> None:
    server = LocalChroma().start()
    try:
        import chromadb

        client = chromadb.HttpClient(host="127.0.0.1", port=server.port)
        client.create_collection("kept")
        port = server.port
        server.stop(remove=False)
        assert not server.alive()
        server.start()
        assert server.port == port and [c.name for c in chromadb.HttpClient(host="127.0.0.1", port=port)
                                        .list_collections()] == ["kept"]
    finally:
        server.stop()
    assert not server.root.exists()

    broken = LocalChroma()
    broken.command = "/bin/false"
    with pytest.raises(RuntimeError, match=r"`/bin/false run --path .* did not answer .*exited with code 1"):
        broken.start()
    broken.stop()
