"""The keyword index's worker process (services/knowledge/worker.py): a document's terms go into FTS5 beside
the store's write; when the worker or the store fails, the add either finishes in the bot's process or
raises, and the index and the store never disagree (where they could, the scope is rebuilt from the store)."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from services.knowledge import GLOBAL, KnowledgeService, StoreError
from services.knowledge.index import Chunk
from tests.test_knowledge import kb  # noqa: F401 - the fixture
from tests.test_knowledge_index import index_file

#: Twelve paragraphs of 300 runes or more: a dozen chunks or so, enough for the worker.
LONG = "\n\n".join(f"第{i}段。本群禁止发广告和刷屏，违反三次由管理员移出群聊。" * 10 + f" paragraph{i} refund policy"
                   for i in range(12))


async def titles(svc: KnowledgeService, query: str) -> list[str]:
    """The documents found (a long document has several chunks matching)."""
    return sorted({h.chunk.title for h in await svc.search(GLOBAL, query, 5)})


async def store_stamp(svc: KnowledgeService) -> str | None:
    return (await svc.kb._run(lambda: svc.store.stamps("kb", [GLOBAL])))[GLOBAL]


def gone(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


async def test_a_long_document_is_indexed_by_the_worker_and_survives_a_restart(kb, tmp_path):  # noqa: F811 - the fixture
    svc = kb()
    added = await svc.add_document(GLOBAL, "Rules", LONG)
    assert added.doc.chunks >= svc.kb.worker.min_chunks
    assert svc.kb.worker.pid is not None and svc.kb.worker.fallbacks == 0
    assert svc.kb.index.stamp(GLOBAL) == await store_stamp(svc)  # committed with the store's new stamp
    assert svc.kb.index.size(GLOBAL) == added.doc.chunks
    assert await titles(svc, "paragraph7") == ["Rules"]
    await svc.aclose()
    again = kb()
    assert await titles(again, "刷屏 paragraph3") == ["Rules"]
    assert again.kb.index.rebuilds == 0


async def test_the_worker_gets_no_secrets(kb, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.setenv("ANIA_LLM__API_KEY", "sk-not-for-children")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-not-for-children")
    svc = kb()
    await svc.add_document(GLOBAL, "Rules", LONG)
    environ = Path(f"/proc/{svc.kb.worker.pid}/environ").read_bytes()
    assert b"not-for-children" not in environ


async def test_a_dead_worker_is_noticed_and_the_add_indexes_in_the_bots_process(kb, caplog):  # noqa: F811 - the fixture
    svc = kb()
    await svc.add_document(GLOBAL, "Rules", LONG)
    gone(svc.kb.worker.pid)
    with caplog.at_level(logging.WARNING, logger="services.knowledge.worker"):
        added = await svc.add_document(GLOBAL, "More rules", LONG.replace("refund", "shipping"))
    assert not added.duplicate and svc.kb.worker.fallbacks == 1
    assert "keyword index worker" in caplog.text and "indexing in the bot's process" in caplog.text
    assert svc.kb.index.stamp(GLOBAL) == await store_stamp(svc)
    assert await titles(svc, "shipping") == ["More rules"]
    assert await titles(svc, "refund") == ["Rules"]
    assert svc.kb.index.rebuilds == 0  # nothing was left for a rebuild to repair


async def test_a_worker_dying_while_it_holds_the_index_open_leaves_nothing_half_written(kb):  # noqa: F811 - the fixture
    svc = kb()
    await svc.add_document(GLOBAL, "Rules", LONG)
    before = svc.kb.index.size(GLOBAL)
    chunks = [Chunk(id=f"d-x#{i}", doc_id="d-x", title="Extra", pos=i, scope=GLOBAL, text=f"extra{i} 补充条款")
              for i in range(10)]
    meta = {"hash": "x", "chunks": 10, "runes": 100, "added": 0}

    def add() -> str:
        mark = svc.kb.index.begin(GLOBAL)

        def store_write() -> str:  # the worker has the document (and may hold the file's write lock): it dies
            gone(svc.kb.worker.pid)
            return svc.store.add_chunks("kb", chunks, meta)

        return svc.kb.worker.add(svc.kb.index, GLOBAL, chunks, mark, store_write)

    stamp = await svc.kb._run(add)
    assert svc.kb.worker.fallbacks == 1
    assert svc.kb.index.stamp(GLOBAL) == stamp == await store_stamp(svc)
    assert svc.kb.index.size(GLOBAL) == before + 10  # each chunk once: the dead worker's insert left nothing
    assert await titles(svc, "extra3") == ["Extra"]


async def test_a_worker_that_does_not_answer_is_ended_and_the_add_goes_on(kb):  # noqa: F811 - the fixture
    svc = kb()
    await svc.add_document(GLOBAL, "Rules", LONG)
    pid = svc.kb.worker.pid
    svc.kb.worker.reply_timeout_sec = 0.5
    os.kill(pid, signal.SIGSTOP)
    try:
        await svc.add_document(GLOBAL, "More rules", LONG.replace("refund", "shipping"))
    finally:
        with pytest.raises(ProcessLookupError):  # killed and reaped by the add
            os.kill(pid, signal.SIGCONT)
    assert svc.kb.worker.fallbacks == 1 and svc.kb.worker.pid is None
    assert svc.kb.index.stamp(GLOBAL) == await store_stamp(svc)
    assert await titles(svc, "shipping") == ["More rules"]


async def test_the_store_failing_rolls_the_workers_insert_back(kb):  # noqa: F811 - the fixture
    svc = kb()
    await svc.add_document(GLOBAL, "Rules", LONG)
    before = svc.kb.index.size(GLOBAL)
    chunks = [Chunk(id=f"d-x#{i}", doc_id="d-x", title="Extra", pos=i, scope=GLOBAL, text=f"extra{i}")
              for i in range(10)]

    def add() -> str:
        mark = svc.kb.index.begin(GLOBAL)

        def store_write() -> str:
            raise StoreError("the store refused the write")

        return svc.kb.worker.add(svc.kb.index, GLOBAL, chunks, mark, store_write)

    with pytest.raises(StoreError, match="refused"):
        await svc.kb._run(add)
    assert svc.kb.worker.fallbacks == 0  # the worker rolled back as told
    assert svc.kb.index.stamp(GLOBAL).startswith("writing ")  # still marked: no stamp of the store's
    assert svc.kb.index.size(GLOBAL) == before
    assert await titles(svc, "extra3") == []  # rebuilt from the store, which never got the chunks
    assert await titles(svc, "refund") == ["Rules"]
    assert svc.kb.index.rebuilds == 1


async def test_the_worker_failing_on_the_file_leaves_the_scope_to_a_rebuild(kb, tmp_path):  # noqa: F811 - the fixture
    svc = kb()
    await svc.add_document(GLOBAL, "Rules", LONG)
    # someone removes the scope's FTS5 table under us: the worker's insert fails, then the bot's own
    with sqlite3.connect(index_file(tmp_path / "data")) as other:
        n = other.execute("SELECT n FROM scopes WHERE scope = ?", (GLOBAL,)).fetchone()[0]
        other.execute(f"DROP TABLE v{n}")
        other.execute(f"DROP TABLE f{n}")
    with pytest.raises(StoreError, match=r"The knowledge store cannot be used \(OperationalError: no such table"):
        await svc.add_document(GLOBAL, "More rules", LONG.replace("refund", "shipping"))
    assert svc.kb.worker.fallbacks == 1
    assert svc.kb.index.stamp(GLOBAL).startswith("writing ")  # rolled back in both: still marked
    # the store holds the document: the next search rebuilds the scope from it and finds both
    assert await titles(svc, "shipping") == ["More rules"]
    assert await titles(svc, "refund") == ["Rules"]
    assert svc.kb.index.rebuilds == 1
    assert (await svc.add_document(GLOBAL, "More rules", LONG.replace("refund", "shipping"))).duplicate
