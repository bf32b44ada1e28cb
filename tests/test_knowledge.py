"""The knowledge service on a real Chroma folder: scopes, limits, de-duplication, faults, restarts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.errors import ToolError
from core.settings import Settings
from services.knowledge import GLOBAL, KnowledgeService, StoreError

RULES = ("本群禁止发广告和刷屏。违反一次警告，违反三次由管理员移出群聊。\n\n"
         "每周五晚上八点在语音频道开例会，请准时参加。")
FAQ = ("How do I reset my password? Open Settings, choose Account and click Forgot password. "
       "A reset link is sent to your email within five minutes.")


@pytest.fixture
async def kb(tmp_path):
    services: list[KnowledgeService] = []

    def make(data: Path = tmp_path / "data", **knowledge) -> KnowledgeService:
        svc = KnowledgeService(Settings(knowledge=knowledge), data)
        services.append(svc)
        return svc

    yield make
    for svc in services:
        await svc.aclose()


async def test_add_then_search_in_chinese_and_english(kb):
    svc = kb()
    rules = await svc.add_document("g:1", "群规", RULES)
    faq = await svc.add_document(GLOBAL, "Account FAQ", FAQ)
    hits = await svc.search("g:1", "发广告会被踢吗", 5)
    assert hits[0].chunk.doc_id == rules.doc.id and "移出群聊" in hits[0].chunk.text
    hits = await svc.search("g:1", "forgot my password, how to reset it?", 5)
    assert hits[0].chunk.doc_id == faq.doc.id
    assert (hits[0].chunk.title, hits[0].chunk.pos, hits[0].chunk.scope) == ("Account FAQ", 0, GLOBAL)


async def test_a_session_never_reads_another_sessions_base(kb):
    svc = kb()
    await svc.add_document("g:other", "secret", "The vault code is 4711.")
    await svc.add_document(GLOBAL, "public", "The vault is in the basement.")
    hits = await svc.search("g:mine", "vault code", 5)
    assert [h.chunk.scope for h in hits] == [GLOBAL]


async def test_same_document_twice_is_stored_once(kb):
    svc = kb()
    first = await svc.add_document("f:u1", "FAQ", FAQ)
    again = await svc.add_document("f:u1", " faq ", FAQ.upper() + "  ")  # same text once normalized
    assert again.duplicate and again.doc.id == first.doc.id
    docs, total = await svc.list_documents("f:u1", 20)
    assert total == 1 and docs[0].id == first.doc.id
    other = await svc.add_document("f:u2", "FAQ", FAQ)  # another scope has its own copy
    assert not other.duplicate and other.doc.id != first.doc.id


async def test_empty_and_oversized_documents_are_refused_and_nothing_is_stored(kb):
    svc = kb()
    with pytest.raises(ToolError, match="The document is empty"):
        await svc.add_document("f:u1", "t", " \n\t ")
    big = "广告" * 2_500_000  # 5,000,000 runes
    with pytest.raises(ToolError, match=r"5,000,000 characters long; the limit is 1,000,000 \(knowledge.max_doc_runes\)"):
        await svc.add_document("f:u1", "big", big)
    assert await svc.list_documents("f:u1", 20) == ([], 0)


async def test_max_docs_per_scope(kb):
    svc = kb(max_docs=2)
    await svc.add_document("f:u1", "a", "alpha text")
    await svc.add_document("f:u1", "b", "beta text")
    with pytest.raises(ToolError, match=r"already holds 2 documents, the limit \(knowledge.max_docs = 2\)"):
        await svc.add_document("f:u1", "c", "gamma text")
    await svc.add_document("f:u2", "c", "gamma text")  # another scope is not full


async def test_long_document_is_chunked_and_every_part_is_findable(kb):
    svc = kb()
    parts = [f"第{i}节：编号为 K{i:04d} 的设备存放在{i}号仓库。" for i in range(300)]
    added = await svc.add_document(GLOBAL, "设备清单", "\n".join(parts))
    assert added.doc.chunks > 10
    hits = await svc.search("f:x", "K0257", 3)
    assert "K0257" in hits[0].chunk.text and hits[0].chunk.pos > 0


async def test_query_of_stop_words_or_emoji_is_a_clear_error(kb):
    svc = kb()
    await svc.add_document("f:u1", "FAQ", FAQ)
    for query in ("the of and", "😀🎉", "吗？"):
        with pytest.raises(ToolError, match="The query has no searchable words"):
            await svc.search("f:u1", query, 5)


async def test_delete_only_within_allowed_scopes(kb):
    svc = kb()
    theirs = await svc.add_document("g:other", "theirs", "other group's notes")
    glob = await svc.add_document(GLOBAL, "g", "global notes")
    mine = {"g:mine", GLOBAL}
    with pytest.raises(ToolError, match=f"No document {theirs.doc.id} in"):
        await svc.delete_document(theirs.doc.id, mine, {"g:mine"})
    with pytest.raises(ToolError, match="Only an admin can delete from the global knowledge base"):
        await svc.delete_document(glob.doc.id, mine, {"g:mine"})
    assert (await svc.list_documents("g:other", 5))[1] == 1 and (await svc.list_documents(GLOBAL, 5))[1] == 1
    await svc.delete_document(glob.doc.id, mine, mine)
    assert await svc.search("g:mine", "global notes", 5) == []


async def test_everything_is_still_there_after_a_restart(kb, tmp_path):
    svc = kb()
    added = await svc.add_document("g:1", "群规", RULES)
    await svc.save_memory("g:1", "小王喜欢周五晚上开会")
    await svc.aclose()
    again = kb()
    hits = await again.search("g:1", "例会几点开", 5)
    assert hits[0].chunk.doc_id == added.doc.id and "八点" in hits[0].chunk.text
    assert (await again.search_memory("g:1", "小王喜欢什么", 5))[0].chunk.text == "小王喜欢周五晚上开会"


async def test_a_write_by_another_process_is_seen_through_the_scope_stamp(kb):
    reader, writer = kb(), kb()
    await reader.add_document(GLOBAL, "one", "first document about apples")
    assert len(await reader.search("f:u", "apples", 5)) == 1  # the reader's index is loaded now
    await writer.add_document(GLOBAL, "two", "second document about apples and pears")
    assert len(await reader.search("f:u", "apples", 5)) == 2
    docs, _ = await writer.list_documents(GLOBAL, 5)
    await writer.delete_document(docs[0].id, None, None)
    assert len(await reader.search("f:u", "apples", 5)) == 1


async def test_results_are_cut_at_8000_runes_in_total(kb):
    from tools.knowledge_text import RESULT_RUNES, hits_text

    svc = kb()
    for i in range(8):
        await svc.add_document(GLOBAL, f"doc {i}", f"长文本{i}。" + "测试内容很长。" * 200)
    hits = await svc.search("f:u", "测试内容", 20)
    assert sum(len(h.chunk.text) for h in hits) > RESULT_RUNES
    text = hits_text(hits, "hits:", "[{n}] {title} {doc} {pos} {score:.3f} {scope}")
    assert len(text) <= RESULT_RUNES and text.endswith("[results cut at 8000 characters; search with more specific words for the rest]")


async def test_chroma_folder_deleted_while_running_is_a_clear_error_then_a_new_store(kb, tmp_path):
    svc = kb()
    await svc.add_document("f:u1", "FAQ", FAQ)
    shutil.rmtree(tmp_path / "data" / "chroma")
    with pytest.raises(StoreError, match="was deleted while the bot was running"):
        await svc.search("f:u1", "password", 5)
    assert await svc.search("f:u1", "password", 5) == []  # a new, empty store
    await svc.add_document("f:u1", "FAQ", FAQ)
    assert len(await svc.search("f:u1", "password", 5)) == 1


async def test_chroma_database_corrupted_while_running_is_a_clear_error(kb, tmp_path):
    svc = kb()
    await svc.add_document("f:u1", "FAQ", FAQ)
    with (tmp_path / "data" / "chroma" / "chroma.sqlite3").open("r+b") as f:
        f.write(b"\xff" * 16384)
    with pytest.raises(StoreError, match=r"The knowledge store cannot be used \(.*\)\. It may be damaged"):
        await svc.add_document("f:u1", "other", "another text")
    with pytest.raises(StoreError, match="It may be damaged"):
        await svc.search("f:u2", "password", 5)


async def test_a_corrupted_store_at_start_does_not_stop_the_bot(kb, tmp_path):
    folder = tmp_path / "data" / "chroma"
    folder.mkdir(parents=True)
    (folder / "chroma.sqlite3").write_bytes(b"not a database" * 1000)
    svc = kb()  # nothing is opened yet
    with pytest.raises(StoreError, match="It may be damaged"):
        await svc.search("f:u1", "password", 5)


async def test_memories_are_per_session_and_deletable(kb):
    svc = kb(max_memories=2)
    saved = await svc.save_memory("f:u1", "Alice prefers tea over coffee")
    assert (await svc.save_memory("f:u1", "alice prefers tea over coffee ")).duplicate
    assert await svc.search_memory("f:u2", "Alice tea", 5) == []
    with pytest.raises(ToolError, match=f"No memory {saved.doc.id} in this chat's memory"):
        await svc.delete_memory("f:u2", saved.doc.id)
    await svc.save_memory("f:u1", "Bob's birthday is in May")
    with pytest.raises(ToolError, match=r"knowledge.max_memories = 2"):
        await svc.save_memory("f:u1", "a third fact")
    with pytest.raises(ToolError, match="A memory holds at most 1,000 characters"):
        await svc.save_memory("f:u1", "x" * 1001)
    await svc.delete_memory("f:u1", saved.doc.id)
    assert [h.chunk.text for h in await svc.search_memory("f:u1", "Alice tea birthday", 5)] == ["Bob's birthday is in May"]
