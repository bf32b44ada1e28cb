"""The keyword search's shortcuts (services/knowledge/bm25.py, services/knowledge/changes.py) leave the
answer as it was: the same chunks in the same order with the same scores as FTS5's BM25 over every query
term; the row count read from FTS5's record is the table's; the stamps kept between searches are read again
after any other connection's commit or when the file is replaced; a document's metadata lives on its first
chunk, and its listing still shows it."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from services.knowledge import GLOBAL, KnowledgeService
from services.knowledge.bm25 import any_of, idf, row_count
from services.knowledge.changes import StampCache
from services.knowledge.index import Chunk, KeywordIndex
from services.knowledge.text import Analyzer
from tests.test_knowledge import kb  # noqa: F401 - the fixture

COMMON = ["river", "bridge", "market", "garden", "station", "tower", "harbor", "school"]
RARE = ["saffron", "lantern", "glacier", "violin"]


def corpus(rows: int) -> list[Chunk]:
    """Chunks where `river` is in nearly every one (idf 1e-6), the other common words in about half or a
    quarter, the rare ones in a few, with varied lengths and repeats (so term frequency matters)."""
    rng = random.Random(5)
    out = []
    for i in range(rows):
        words = ["river"] * rng.randint(1, 3)
        words += [w for w in COMMON[1:] if rng.random() < 0.45] + [w for w in RARE if rng.random() < 0.06]
        words += [f"filler{rng.randint(0, 400)}" for _ in range(rng.randint(3, 30))]
        rng.shuffle(words)
        out.append(Chunk(f"d{i // 4}#{i % 4}", f"d{i // 4}", "", i % 4, "s", " ".join(words)))
    return out


def plain(index: KeywordIndex, terms: list[str], limit: int) -> list[tuple[str, float]]:
    """FTS5's BM25 over every term, no shortcut."""
    n = index._number("s")
    assert n is not None
    return [(r[0], r[5]) for r in index._scored(n, any_of(terms), limit)]


def test_the_search_answers_as_bm25_over_every_term(tmp_path: Path) -> None:
    index = KeywordIndex(Analyzer(), tmp_path / "kb.sqlite3")
    chunks = corpus(400)
    index.load("s", "stamp", chunks)
    n = index._number("s")
    assert n is not None
    averages = index._db.execute(f"SELECT block FROM f{n}_data WHERE id = 1").fetchone()[0]
    assert row_count(averages) == 400
    assert idf(400, sum("river" in c.text for c in chunks)) == 1e-6  # the term the query leaves out
    queries = [["river", "saffron"], ["river", "bridge", "lantern", "glacier"], ["market", "garden", "violin"],
               ["river", "market", "station", "tower", "harbor", "school", "saffron"], ["river"],
               ["river", "nowhere"], ["lantern", "violin", "river", "bridge"]]
    for terms in queries:
        for limit in (1, 5, 50):
            got = [(c.id, score) for c, score in index.search(["s"], terms, limit)]
            want = plain(index, terms, limit)
            assert [i for i, _ in got] == [i for i, _ in want] or _tied(got, want), (terms, limit)
            for (_, a), (_, b) in zip(got, want, strict=True):
                assert abs(a - b) < 1e-4, (terms, limit)
    index.close()


def _tied(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> bool:
    """The same scores in the same order (rows of equal score may come in another order)."""
    return len(got) == len(want) and all(abs(a[1] - b[1]) < 1e-4 for a, b in zip(got, want, strict=True))


async def test_a_small_scope_still_finds_chunks_holding_only_common_words(kb) -> None:  # noqa: F811 - the fixture
    svc: KnowledgeService = kb()
    await svc.add_document(GLOBAL, "A", "The river runs past the old mill.")
    await svc.add_document(GLOBAL, "B", "The river is cold in spring.")
    await svc.add_document(GLOBAL, "C", "Bring a lantern to the night walk.")
    # "river" is in two of three chunks: its idf is FTS5's floor; "mill" weighs, yet the river chunks count
    hits = await svc.search("g:1", "river mill", 5)
    assert [h.chunk.title for h in hits] == ["A", "B"]


def test_kept_stamps_are_read_again_after_another_commit_or_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "chroma.sqlite3"
    cache = StampCache(path)
    assert cache.version() is None  # no file yet: nothing is kept
    cache.put(None, "kb", {"s": "one"})
    assert cache.get(cache.version(), "kb", ["s"]) is None
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE t (x)")
    other.commit()
    version = cache.version()
    cache.put(version, "kb", {"s": "one", "t": None})
    assert cache.get(cache.version(), "kb", ["s", "t"]) == {"s": "one", "t": None}
    assert cache.get(cache.version(), "kb", ["s", "u"]) is None  # u was never read
    assert cache.get(cache.version(), "memory", ["s"]) is None
    other.execute("INSERT INTO t VALUES (1)")
    other.commit()
    assert cache.get(cache.version(), "kb", ["s"]) is None  # another connection wrote
    cache.put(cache.version(), "kb", {"s": "two"})
    assert cache.get(cache.version(), "kb", ["s"]) == {"s": "two"}
    other.close()
    path.unlink()
    fresh = sqlite3.connect(path)  # another file under the same name
    fresh.execute("CREATE TABLE t (x)")
    fresh.commit()
    fresh.close()
    assert cache.get(cache.version(), "kb", ["s"]) is None
    cache.clear()


async def test_a_documents_metadata_is_on_its_first_chunk_and_listed(kb) -> None:  # noqa: F811 - the fixture
    svc: KnowledgeService = kb()
    text = "\n\n".join(f"Paragraph {i}: " + "the lantern festival by the river " * 12 for i in range(8))
    added = await svc.add_document(GLOBAL, "Festival", text)
    assert added.doc.chunks > 2
    [listed], total = await svc.list_documents(GLOBAL, 10)
    assert total == 1
    assert (listed.id, listed.chunks, listed.runes) == (added.doc.id, added.doc.chunks, len(text))
    col = svc.store.collection("kb_chunks")
    got = col.get(where={"doc": added.doc.id}, include=["metadatas"])
    by_pos = {m["pos"]: m for m in got["metadatas"]}
    assert set(by_pos[0]) >= {"hash", "chunks", "runes", "added", "scope", "doc", "title", "pos"}
    assert all(set(m) == {"scope", "doc", "title", "pos", "text"} for pos, m in by_pos.items() if pos)
    again = await svc.add_document(GLOBAL, "Festival", text)
    assert again.duplicate and again.doc.id == added.doc.id
