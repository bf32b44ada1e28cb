"""Knowledge retrieval: recall and speed, against the simplest peer (Chroma's `where_document` `$contains`).

    python -m bench.bench_knowledge [--quick] [--chunks N]

1. Quality: the corpus of `bench/knowledge_corpus.py` (6 Chinese and 6 English documents, 36 + 36
   questions, a third of them paraphrases) in one scope, alone and among distractor passages. Recall@5
   and MRR for each analyzer (`grams`: CJK characters and pairs; `bigrams`: pairs only; `words`: rjieba
   segmentation; English stemmed by Snowball in all three), keyword-only and hybrid (the scripted server's deterministic embeddings: they test the
   plumbing, they know no synonyms), and the peer: `$contains` with the whole question, and with any of
   its words (`$or`), in Chroma's order.
2. Hybrid speed at N chunks (default 10,000): `kb_search` through the real tool (p50/p95) with the scripted
   server's embeddings, the first search after a restart, ingest. Keyword search by language and size against
   plain Chroma (first search, warm search, ingest, the index's memory) is `bench/bench_knowledge_scale.py`.
3. A 1,000,000-rune document added without embeddings.
"""

from __future__ import annotations

import asyncio
import functools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import rjieba

from ania.compose import build_services
from ania.fakes.openai_server import ScriptedOpenAI
from bench.knowledge_corpus import EN_DOCS, GENERAL_EN, GENERAL_ZH, QUESTIONS, ZH_DOCS, Question
from core.settings import Paths, Settings
from services.context import RunContext
from services.hooks import NoHooks
from services.knowledge import GLOBAL, KnowledgeService
from services.knowledge.store import placeholder
from services.knowledge.text import _TOKEN, STOP_WORDS, Mode
from tools.knowledge import KbSearchParams, KbSearchTool

SCOPE = GLOBAL
K = 5


def settings(llm: ScriptedOpenAI | None, **knowledge: Any) -> Settings:
    embedding = {"base_url": llm.base_url, "model": "fake-embed", "timeout_sec": 30} if llm else {}
    return Settings(knowledge={"max_docs": 100_000, **knowledge}, embedding=embedding)


def filler(rng: random.Random, runes: int, corpus_share: float = 0.2, lang: str = "mix") -> str:
    """Distractor text: random sentences of 8-20 words, `corpus_share` of them from the corpus's own
    vocabulary (so distractors match the questions' words too), the rest everyday words; half the
    sentences Chinese, or all of them in `lang` ("zh", "en")."""
    words = _vocabulary()
    out: list[str] = []
    size = 0
    while size < runes:
        zh = rng.random() < 0.5 if lang == "mix" else lang == "zh"
        topical, general = (words[0], GENERAL_ZH) if zh else (words[1], GENERAL_EN)
        sentence = ("" if zh else " ").join(rng.choice(topical if rng.random() < corpus_share else general)
                                            for _ in range(rng.randint(8, 20)))
        sentence += "。" if zh else ". "
        out.append(sentence)
        size += len(sentence)
        if rng.random() < 0.1:
            out.append("\n\n")
    return "".join(out)[:runes]


@functools.cache
def _vocabulary() -> tuple[list[str], list[str]]:
    zh = sorted({t for _, text in ZH_DOCS for t in rjieba.cut(text) if _TOKEN.fullmatch(t) and not t.isascii()})
    en = sorted({t for _, text in EN_DOCS for t in text.split() if t.isalpha()})
    return zh, en


def answer_doc(q: Question) -> str:
    docs = [title for title, text in ZH_DOCS + EN_DOCS if q.answer in text]
    assert len(docs) == 1, (q, docs)
    return docs[0]


async def fill(svc: KnowledgeService, distractor_chunks: int, corpus_share: float = 0.2, seed: int = 7) -> int:
    """The corpus and distractor documents (up to 100 passages each), added in a shuffled order so that
    the peer's unranked answer (Chroma's storage order) is not flattered by the corpus coming first."""
    rng = random.Random(seed)
    per_doc = 100
    docs = list(ZH_DOCS + EN_DOCS)
    for n in range(0, distractor_chunks, per_doc):
        docs.append((f"notes {n // per_doc}", filler(rng, 400 * min(per_doc, distractor_chunks - n), corpus_share)))
    rng.shuffle(docs)
    for title, text in docs:
        await svc.add_document(SCOPE, title, text)
    return sum(d.chunks for d in (await svc.list_documents(SCOPE, 1_000_000))[0])


def score(ranked: list[tuple[str, str]], q: Question) -> tuple[float, float]:
    """(hit in top K, reciprocal rank) for chunks given as (title, text)."""
    want = answer_doc(q)
    for rank, (title, text) in enumerate(ranked[:K], 1):
        if title == want and q.answer in text:
            return 1.0, 1.0 / rank
    return 0.0, 0.0


def peer_terms(q: str) -> list[str]:
    return [t for piece in rjieba.cut_for_search(q) for t in _TOKEN.findall(piece) if t.casefold() not in STOP_WORDS]


def peer_collection(svc: KnowledgeService, folder: Path) -> Any:
    """A plain Chroma collection holding the same chunks as `svc`'s scope, their text as Chroma documents
    (ours keeps it as metadata, which Chroma's `$contains` does not search): the peer's store."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=str(folder), settings=ChromaSettings(anonymized_telemetry=False))
    col: Any = client.get_or_create_collection("peer", embedding_function=None)
    chunks = svc.store.run(lambda: svc.store.load_scope("kb", SCOPE))
    for start in range(0, len(chunks), 1000):
        part = chunks[start : start + 1000]
        col.add(ids=[c.id for c in part], documents=[c.text for c in part],
                embeddings=[placeholder(c.id) for c in part],
                metadatas=[{"scope": SCOPE, "doc": c.doc_id, "title": c.title, "pos": c.pos} for c in part])
    return col


def peer_search(col: Any, query: str, whole: bool) -> list[tuple[str, str]]:
    terms = peer_terms(query)
    if whole or len(terms) < 2:
        where_doc: dict[str, Any] = {"$contains": query if whole or not terms else terms[0]}
    else:
        where_doc = {"$or": [{"$contains": t} for t in terms]}
    got = col.get(where={"scope": SCOPE}, where_document=where_doc, limit=K, include=["documents", "metadatas"])
    return [(m["title"], d) for d, m in zip(got["documents"], got["metadatas"], strict=False)]


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  " + "  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=False)))


def summarize(results: dict[str, list[tuple[Question, float, float]]]) -> list[list[Any]]:
    rows = []
    for name, res in results.items():
        row: list[Any] = [name]
        for lang in ("zh", "en"):
            for kinds in (("keyword", "paraphrase"), ("paraphrase",)):
                sel = [(h, rr) for q, h, rr in res if q.lang == lang and q.kind in kinds]
                row.append(f"{statistics.mean(h for h, _ in sel):.2f} / {statistics.mean(rr for _, rr in sel):.2f}")
        rows.append(row)
    return rows


async def quality(root: Path, llm: ScriptedOpenAI, distractors: int, corpus_share: float = 0.2) -> None:
    results: dict[str, list[tuple[Question, float, float]]] = {}
    chunks = 0
    modes: tuple[Mode, ...] = ("grams", "bigrams", "words")
    for mode in modes:
        for hybrid in (False, True):
            folder = root / f"q-{mode}-{hybrid}-{distractors}-{corpus_share}"
            svc = KnowledgeService(settings(llm if hybrid else None), folder, mode=mode)
            chunks = await fill(svc, distractors, corpus_share)
            res = []
            for q in QUESTIONS:
                hits = await svc.search("f:bench", q.text, K)
                res.append((q, *score([(h.chunk.title, h.chunk.text) for h in hits], q)))
            results[f"{mode}, {'hybrid' if hybrid else 'keyword-only'}"] = res
            if mode == "grams" and not hybrid:
                col = peer_collection(svc, folder / "peer")
                for whole in (True, False):
                    peer = [(q, *score(await asyncio.to_thread(peer_search, col, q.text, whole), q)) for q in QUESTIONS]
                    results[f"peer $contains ({'whole question' if whole else 'any word'})"] = peer
            await svc.aclose()
    share = f", {corpus_share:.0%} of their words from the corpus" if distractors else ""
    print(f"\nRecall@5 / MRR, {chunks} chunks in the scope ({distractors} distractor passages{share}):")
    table(summarize(results), ["method", "zh all", "zh paraphrase", "en all", "en paraphrase"])
    ours = results["grams, keyword-only"]
    misses = [q.text for q, h, _ in ours if not h]
    print(f"  grams keyword-only misses ({len(misses)}): " + "; ".join(misses))


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def speed(root: Path, llm: ScriptedOpenAI, n_chunks: int, hybrid: bool) -> None:
    label = "hybrid (fake embeddings on 127.0.0.1)" if hybrid else "keyword-only"
    paths = Paths(root / f"cfg-{hybrid}", root / f"speed-{hybrid}")
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    s = settings(llm if hybrid else None)
    async with AsyncExitStack() as stack:
        services = await build_services(paths, s, stack, hooks=NoHooks())
        svc = services.knowledge
        t0 = time.perf_counter()
        total = await fill(svc, n_chunks - 20)
        ingest = time.perf_counter() - t0
        ctx = RunContext(session_key="g:bench", requester="u", bridge=None,  # type: ignore[arg-type]
                         executor=services.sessions.executor("g:bench"), services=services)
        tool = KbSearchTool()
        queries = [q.text for q in QUESTIONS] * 3
        random.Random(1).shuffle(queries)
        await tool.execute(KbSearchParams(query=queries[0]), ctx)  # warm
        ours = []
        for q in queries:
            t = time.perf_counter()
            await tool.execute(KbSearchParams(query=q), ctx)
            ours.append((time.perf_counter() - t) * 1000)
        peer = []
        if not hybrid:
            col = peer_collection(svc, root / f"peer-{hybrid}")
            for q in queries:
                t = time.perf_counter()
                await asyncio.to_thread(peer_search, col, q, False)
                peer.append((time.perf_counter() - t) * 1000)
    restarted = KnowledgeService(s, paths.data_dir)
    t = time.perf_counter()
    await restarted.search("g:bench", queries[0], K)
    cold = time.perf_counter() - t
    await restarted.aclose()
    print(f"\nkb_search at {total} chunks, {label}: ingest {ingest:.1f} s; first search after a restart "
          f"(the keyword index is on disk) {cold * 1000:.0f} ms")
    rows = [["ours: kb_search tool", f"{percentile(ours, 50):.1f}", f"{percentile(ours, 95):.1f}", len(ours)]]
    if peer:
        rows.append(["peer: $contains any word", f"{percentile(peer, 50):.1f}", f"{percentile(peer, 95):.1f}", len(peer)])
        rows.append(["ratio ours / peer", f"{percentile(ours, 50) / percentile(peer, 50):.2f}",
                     f"{percentile(ours, 95) / percentile(peer, 95):.2f}", ""])
    table(rows, ["", "p50 ms", "p95 ms", "searches"])


async def ingest_1mb(root: Path) -> None:
    svc = KnowledgeService(settings(None), root / "ingest")
    text = filler(random.Random(3), 1_000_000)
    await svc.add_document("g:warm", "warm", "warm up the store")  # opening Chroma is not ingest
    t = time.perf_counter()
    added = await svc.add_document(SCOPE, "big", text)
    took = time.perf_counter() - t
    await svc.aclose()
    print(f"\n1,000,000-rune document ({len(text.encode()) / 1e6:.1f} MB UTF-8), no embeddings: "
          f"{added.doc.chunks} chunks in {took:.2f} s")


async def run(argv: Sequence[str]) -> None:
    quick = "--quick" in argv
    n_chunks = int(argv[argv.index("--chunks") + 1]) if "--chunks" in argv else (2000 if quick else 10_000)
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI() as llm:
        root = Path(tmp)
        await quality(root, llm, 0)
        await quality(root, llm, 500 if quick else 2000)
        await quality(root, llm, 500 if quick else 2000, corpus_share=1.0)
        await speed(root, llm, n_chunks, hybrid=True)
        await ingest_1mb(root)


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(run(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
