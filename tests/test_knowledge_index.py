"""The keyword index on disk: it survives a restart without a rebuild, a damaged or missing file is rebuilt
(and says which file), another process's write is seen, and a delete (or a write cut short) never leaves
the index answering with what the store no longer holds."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from core.errors import ToolError
from services.knowledge import GLOBAL, KnowledgeService
from services.knowledge.service import INDEX_DIR
from tests.test_knowledge import kb  # noqa: F401 - the fixture

RULES = "本群禁止发广告和刷屏。违反一次警告，违反三次由管理员移出群聊。"
FAQ = "How do I reset my password? Open Settings, choose Account and click Forgot password."
MEETING = "The weekly meeting is on Friday at eight in the voice channel."


def index_file(data: Path) -> Path:
    return data / INDEX_DIR / "kb.sqlite3"


async def titles(svc: KnowledgeService, query: str) -> list[str]:
    return [h.chunk.title for h in await svc.search("g:1", query, 5)]


async def test_the_index_survives_a_restart_without_a_rebuild(kb, tmp_path):  # noqa: F811 - the fixture
    first = kb()
    await first.add_document(GLOBAL, "群规", RULES)
    await first.add_document(GLOBAL, "FAQ", FAQ)
    assert await titles(first, "发广告") == ["群规"]
    assert first.kb.index.rebuilds == 0  # global entered the index empty at its first write, g:1 at its first search
    await first.aclose()
    again = kb()
    assert await titles(again, "发广告") == ["群规"]
    assert await titles(again, "reset password") == ["FAQ"]
    assert again.kb.index.rebuilds == 0
    mode = stat.S_IMODE(index_file(tmp_path / "data").stat().st_mode)
    assert mode == 0o600 and stat.S_IMODE(index_file(tmp_path / "data").parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("damage", ["garbage", "missing"])
async def test_a_damaged_or_missing_index_file_is_rebuilt_and_named_in_the_log(kb, tmp_path, caplog, damage):  # noqa: F811 - the fixture
    first = kb()
    await first.add_document(GLOBAL, "FAQ", FAQ)
    await first.aclose()
    path = index_file(tmp_path / "data")
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    if damage == "garbage":
        path.write_bytes(b"this is not an SQLite database" * 200)
    else:
        path.unlink()
    caplog.set_level(logging.INFO, logger="services.knowledge.index")
    again = kb()
    assert await titles(again, "reset password") == ["FAQ"]
    assert again.kb.index.rebuilds == 1
    assert any(str(path) in r.getMessage() and "global rebuilt" in r.getMessage() for r in caplog.records)
    if damage == "garbage":
        assert any(r.levelno == logging.WARNING and str(path) in r.getMessage() and "damaged" in r.getMessage()
                   for r in caplog.records)


async def test_a_file_damaged_past_its_header_is_replaced_when_a_search_meets_the_damage(kb, tmp_path, caplog):  # noqa: F811 - the fixture
    first = kb()
    await first.add_document(GLOBAL, "FAQ", FAQ)
    await first.aclose()
    path = index_file(tmp_path / "data")
    page = 4096
    with path.open("r+b") as f:  # the schema and the small tables stay readable: the file opens
        f.seek(6 * page)
        f.write(b"\xff" * (path.stat().st_size - 6 * page))
    caplog.set_level(logging.INFO, logger="services.knowledge.index")
    again = kb()
    assert not caplog.records  # opened without noticing
    assert await titles(again, "reset password") == ["FAQ"]
    assert any(r.levelno == logging.WARNING and str(path) in r.getMessage() and "damaged" in r.getMessage()
               for r in caplog.records)


async def test_a_write_of_another_process_is_seen_and_applied_in_place(kb, tmp_path):  # noqa: F811 - the fixture
    ours = kb()
    await ours.add_document(GLOBAL, "FAQ", FAQ)
    assert await titles(ours, "meeting friday") == []
    script = textwrap.dedent(f"""
        import asyncio
        from pathlib import Path
        from core.settings import Settings
        from services.knowledge import GLOBAL, KnowledgeService

        async def main():
            svc = KnowledgeService(Settings(), Path({str(tmp_path / "data")!r}))
            await svc.add_document(GLOBAL, "Meeting", {MEETING!r})
            await svc.aclose()

        asyncio.run(main())
    """)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, cwd=Path(__file__).parent.parent)
    assert await asyncio.wait_for(proc.wait(), 120) == 0
    assert await titles(ours, "meeting friday") == ["Meeting"]
    assert ours.kb.index.rebuilds == 0  # the other process updated the shared file in place


async def test_a_delete_is_gone_from_the_index_now_and_after_a_restart(kb, tmp_path):  # noqa: F811 - the fixture
    svc = kb()
    faq = await svc.add_document(GLOBAL, "FAQ", FAQ)
    await svc.add_document(GLOBAL, "Meeting", MEETING)
    assert await titles(svc, "password") == ["FAQ"]
    await svc.delete_document(faq.doc.id, None, None)
    assert await titles(svc, "password") == []
    assert svc.kb.index.size(GLOBAL) == 1
    await svc.aclose()
    again = kb()
    assert await titles(again, "password") == []
    assert await titles(again, "meeting") == ["Meeting"]
    assert again.kb.index.rebuilds == 0


@pytest.mark.parametrize("cut", ["after the store's write", "before the store's write"])
async def test_a_write_cut_short_between_store_and_index_is_repaired_at_the_next_start(kb, tmp_path, cut):  # noqa: F811 - the fixture
    svc = kb()
    faq = await svc.add_document(GLOBAL, "FAQ", FAQ)
    await svc.add_document(GLOBAL, "Meeting", MEETING)
    assert await titles(svc, "password") == ["FAQ"]
    # the first half of a delete (base.ChunkBase.delete), then the process "dies" before the index's half
    svc.kb.index.begin(GLOBAL)
    if cut == "after the store's write":
        found = await svc.kb.find(faq.doc.id)
        assert found is not None
        svc.store.delete("kb", GLOBAL, found[1], None)
        svc.store.new_stamp("kb", GLOBAL)
    await svc.aclose()
    again = kb()
    assert await titles(again, "password") == ([] if cut == "after the store's write" else ["FAQ"])
    assert await titles(again, "meeting") == ["Meeting"]
    assert again.kb.index.rebuilds == 1  # global: its mark is no stamp of the store's


async def test_another_analyzer_rebuilds_the_file(kb, tmp_path, caplog):  # noqa: F811 - the fixture
    first = kb()
    await first.add_document(GLOBAL, "群规", RULES)
    await first.aclose()
    caplog.set_level(logging.INFO, logger="services.knowledge.index")
    words = kb(analyzer="words")
    assert await titles(words, "广告") == ["群规"]
    assert words.kb.index.rebuilds == 1
    assert any("written for" in r.getMessage() and str(index_file(tmp_path / "data")) in r.getMessage()
               for r in caplog.records)


async def test_a_file_of_another_layout_is_replaced_not_reused(kb, tmp_path, caplog):  # noqa: F811 - the fixture
    path = index_file(tmp_path / "data")
    path.parent.mkdir(parents=True)
    old = sqlite3.connect(path)
    old.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                      "INSERT INTO meta VALUES ('format', '0'), ('analyzer', 'grams');"
                      "CREATE TABLE chunks (row INTEGER PRIMARY KEY, n INTEGER, gone TEXT NOT NULL);")
    old.close()
    caplog.set_level(logging.INFO, logger="services.knowledge.index")
    svc = kb()
    await svc.add_document(GLOBAL, "FAQ", FAQ)
    assert await titles(svc, "reset password") == ["FAQ"]
    assert any(str(path) in r.getMessage() and "written for" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("damage", ["missing", "from page 2", "from page 6"])
async def test_the_limit_and_duplicates_hold_when_the_index_file_is_missing_or_damaged(kb, tmp_path, damage):  # noqa: F811 - the fixture
    # an add counts the scope's documents in the index once it is current: a file replaced at the start is
    # rebuilt first, one damaged where the check reads it is answered by the store instead
    first = kb()
    faq = await first.add_document(GLOBAL, "FAQ", FAQ)
    await first.add_document(GLOBAL, "Rules", RULES * 40)
    await first.aclose()
    path = index_file(tmp_path / "data")
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    if damage == "missing":
        path.unlink()
    else:
        page = 4096 * (2 if damage == "from page 2" else 6)
        with path.open("r+b") as f:
            f.seek(page)
            f.write(b"\xff" * (path.stat().st_size - page))
    again = kb(max_docs=2)
    assert (await again.add_document(GLOBAL, "FAQ", FAQ)).doc.id == faq.doc.id
    with pytest.raises(ToolError, match=r"already holds 2 documents"):
        await again.add_document(GLOBAL, "Meeting", MEETING)
    assert await titles(again, "reset password") == ["FAQ"]
    assert await titles(again, "meeting friday") == []


async def test_chunks_an_earlier_version_stored_as_chroma_documents_are_still_read(kb, tmp_path):  # noqa: F811 - the fixture
    # earlier versions kept a chunk's text as Chroma's document; today it is the metadata field `text`
    first = kb()
    await first.add_document(GLOBAL, "FAQ", FAQ)
    got = first.store.collection("kb_chunks").get(where={"scope": GLOBAL}, include=["documents", "metadatas"])
    assert [m["text"] for m in got["metadatas"]] == [FAQ] and got["documents"] == [None]
    old = {"ids": ["kb-old#0"], "documents": [MEETING], "embeddings": [[1.0, 0.0]],
           "metadatas": [{"scope": GLOBAL, "doc": "kb-old", "title": "Meeting", "pos": 0, "hash": "h", "chunks": 1,
                          "runes": len(MEETING), "added": 1}]}
    first.store.run(lambda: first.store.collection("kb_chunks").add(**old))
    first.store.run(lambda: first.store.new_stamp("kb", GLOBAL))  # the index sees a write it did not make
    assert first.store.run(lambda: first.store.texts("kb", ["kb-old"])) == {"kb-old": MEETING}
    await first.aclose()
    again = kb()
    hits = await again.search("g:1", "voice channel", 5)  # words of the old chunk's text, not of its title
    assert [(h.chunk.title, h.chunk.text) for h in hits] == [("Meeting", MEETING)]
    assert await titles(again, "reset password") == ["FAQ"]
    assert again.kb.index.rebuilds == 1
