"""Knowledge search at scale, side by side with plain Chroma, per language and size.

    python -m bench.bench_knowledge_scale [--quick] [--large] [--sizes 1000,10000,100000] [--langs zh,en] [--ingest-rounds N]

For each language (an all-Chinese and an all-English corpus: the benchmark's own documents among distractor
passages of that language) and each size (1,000 and 10,000 chunks; `--large` adds 100,000, which takes a
while to build; `--quick` runs 1,000 only):

- ingest (under 10,000 chunks five rounds on new stores, summed; `--ingest-rounds` sets it): every document added
  through `KnowledgeService.add_document` (keyword-only: no embeddings endpoint), against the peer adding the same chunks (same splitter, same placeholder vectors, one write
  per document) with their text and metadata to one plain Chroma collection; the two alternate document
  by document, each going first every other time, so a busy machine slows both alike. Wall time and CPU
  time per side; ours counts its child processes' CPU too (the keyword index's worker,
  services/knowledge/worker.py), so work moved to another core is still paid for. Apart: the seconds
  ours spent waiting for or doing the keyword index's part (`KeywordIndex.add`) beyond the store's write,
  as a share of the peer's time; and the index's files on disk.
- first search after a start: a new process opens the service and searches once (opening Chroma included),
  against a new process opening Chroma and running the peer's query; and the same first search when
  Chroma was opened just before it (what the keyword index itself costs).
- warm search: the median and p95 of the language's questions (x3) through `KnowledgeService.search`,
  against the peer's `$contains` any-word filter on its collection. The peer reads every chunk of the
  scope for each search (about a second each at 100,000 chunks), so at that size it runs 12 searches, and
  the table marks its figures with `*`.
- index RSS: the resident memory the process gains from just before the first search (Chroma open) to
  after the warm searches, i.e. what the keyword index and its page cache add.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from bench.bench_knowledge import SCOPE, filler, peer_terms, percentile, settings, table
from bench.knowledge_corpus import EN_DOCS, QUESTIONS, ZH_DOCS
from services.knowledge import KnowledgeService
from services.knowledge.service import INDEX_DIR
from services.knowledge.store import placeholder
from services.knowledge.text import split, splitter

PER_DOC = 100
#: Warm searches per row (the language's questions, three times), and the peer's at LARGE chunks or more.
SEARCHES = 3 * len([q for q in QUESTIONS if q.lang == "zh"])
LARGE = 100_000
PEER_LARGE = 12
#: Under this many chunks, ingest is a few seconds a side, where one busy moment of a shared machine moves the
#: ratio by a tenth: such a size is ingested `MAX_ROUNDS` times on new stores, the times summed.
ROUNDS_UNDER = 10_000
MAX_ROUNDS = 5
#: Distractor runes per chunk the splitter makes (600 at most, cut at sentence ends, 60 overlap), measured.
RUNES_PER_CHUNK = {"zh": 420, "en": 450}


def rounds(n_chunks: int) -> int:
    return 1 if n_chunks >= ROUNDS_UNDER else MAX_ROUNDS


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def documents(lang: str, n_chunks: int) -> list[tuple[str, str]]:
    """The language's corpus documents and distractors of that language, about `n_chunks` chunks in all."""
    rng = random.Random(11)
    docs = list(ZH_DOCS if lang == "zh" else EN_DOCS)
    target = n_chunks - 10
    for n in range(0, target, PER_DOC):
        runes = RUNES_PER_CHUNK[lang] * min(PER_DOC, target - n)
        docs.append((f"notes {n // PER_DOC}", filler(rng, runes, lang=lang)))
    rng.shuffle(docs)
    return docs


def peer_collection(folder: Path) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=str(folder), settings=ChromaSettings(anonymized_telemetry=False))
    return client.get_or_create_collection("peer", embedding_function=None)


def peer_query(col: Any, query: str) -> list[str]:
    terms = peer_terms(query)
    where_doc: dict[str, Any] = ({"$contains": terms[0] if terms else query} if len(terms) < 2
                                 else {"$or": [{"$contains": t} for t in terms]})
    got = col.get(where={"scope": SCOPE}, where_document=where_doc, limit=5, include=["documents"])
    return list(got["documents"])


def cpu_seconds() -> float:
    """CPU seconds of this process and of its living children (the keyword index's worker)."""
    me = psutil.Process()
    used = time.process_time()
    for child in me.children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        used += t.user + t.system
    return used


async def ingest(root: Path, docs: list[tuple[str, str]]) -> tuple[dict[str, float], dict[str, float], float, int]:
    """Wall and CPU seconds (CPU: this process and its children) for ours and the peer over the same
    documents, alternating (each goes first every other document), the wall seconds of ours spent in the
    keyword index's part of an add, and our chunk count."""
    svc = KnowledgeService(settings(None), root / "ours")
    col = peer_collection(root / "peer")
    chunker = splitter()
    await svc.add_document("g:warm", "warm", "warm up the store")  # opening Chroma is not ingest, either side
    col.add(ids=["warm"], documents=["warm up"], embeddings=[placeholder("warm")], metadatas=[{"scope": "w"}])
    index_before = svc.kb.index.add_seconds
    times = {"ours": 0.0, "peer": 0.0}
    cpu = {"ours": 0.0, "peer": 0.0}
    chunks = 0

    async def ours(title: str, text: str) -> None:
        nonlocal chunks
        added = await svc.add_document(SCOPE, title, text)
        chunks += added.doc.chunks

    async def peer(i: int, title: str, text: str) -> None:
        parts = split(text, chunker)
        ids = [f"p{i}#{pos}" for pos in range(len(parts))]
        col.add(ids=ids, documents=parts, embeddings=[placeholder(c) for c in ids],
                metadatas=[{"scope": SCOPE, "doc": f"p{i}", "title": title, "pos": pos} for pos in range(len(parts))])

    for i, (title, text) in enumerate(docs):
        for side in ("ours", "peer") if i % 2 == 0 else ("peer", "ours"):
            t, c = time.perf_counter(), cpu_seconds()
            await (ours(title, text) if side == "ours" else peer(i, title, text))
            times[side] += time.perf_counter() - t
            cpu[side] += cpu_seconds() - c
    index = svc.kb.index.add_seconds - index_before
    await svc.aclose()
    return times, cpu, index, chunks


def probe(side: str, folder: str, lang: str, count: str) -> dict[str, float]:
    """Run in a new process: the first search (cold, and with Chroma open), `count` warm searches, RSS."""
    queries = [q.text for q in QUESTIONS if q.lang == lang] * 3
    random.Random(1).shuffle(queries)
    queries = queries[: int(count)]
    import chromadb  # noqa: F401 - imported at a bot's start, by either side: not part of the first search

    out: dict[str, float] = {}
    times = []
    if side == "peer":
        t = time.perf_counter()
        col = peer_collection(Path(folder) / "peer")
        peer_query(col, queries[0])
        out["cold"] = time.perf_counter() - t
        for q in queries:
            t = time.perf_counter()
            peer_query(col, q)
            times.append(time.perf_counter() - t)
    else:
        async def ours() -> None:
            t = time.perf_counter()
            svc = KnowledgeService(settings(None), Path(folder) / "ours")
            await svc.search("f:bench", queries[0], 5)
            out["cold"] = time.perf_counter() - t
            await svc.aclose()
            svc = KnowledgeService(settings(None), Path(folder) / "ours")
            await svc.kb._run(lambda: svc.store.stamps("kb", [SCOPE]))  # Chroma open, the index not touched
            before = rss_mb()
            t = time.perf_counter()
            await svc.search("f:bench", queries[0], 5)
            out["first"] = time.perf_counter() - t
            out["rebuilds"] = svc.kb.index.rebuilds
            for q in queries:
                t = time.perf_counter()
                await svc.search("f:bench", q, 5)
                times.append(time.perf_counter() - t)
            out["rss"] = rss_mb() - before
            await svc.aclose()

        asyncio.run(ours())
    out["p50"] = percentile(times, 50)
    out["p95"] = percentile(times, 95)
    return out


def run_probe(side: str, folder: Path, lang: str, count: int = SEARCHES) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-m", "bench.bench_knowledge_scale", "--probe", side, str(folder), lang,
                           str(count)], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the {side} probe failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The options; flags of other benchmarks (`make bench` passes them all to each) are ignored."""
    p = argparse.ArgumentParser(prog="python -m bench.bench_knowledge_scale", description=__doc__.splitlines()[0],
                                allow_abbrev=False)
    p.add_argument("--quick", action="store_true", help="1,000 chunks only")
    p.add_argument("--large", action="store_true", help="add 100,000 chunks (long to build)")
    p.add_argument("--sizes", type=_sizes, help="chunk counts, comma-separated, e.g. 1000,10000 (overrides both)")
    p.add_argument("--ingest-rounds", type=_rounds, help=f"ingest rounds per size (default {MAX_ROUNDS} under "
                   f"{ROUNDS_UNDER:,} chunks, else 1)")
    p.add_argument("--langs", type=_langs, default=["zh", "en"], help="corpora, comma-separated (default zh,en)")
    p.add_argument("--probe", nargs=4, metavar=("SIDE", "FOLDER", "LANG", "COUNT"), help=argparse.SUPPRESS)
    args, _ = p.parse_known_args(argv)
    if args.sizes is None:
        args.sizes = [1000] if args.quick else [1000, 10_000, 100_000] if args.large else [1000, 10_000]
    return args


def _sizes(text: str) -> list[int]:
    try:
        found = [int(x.replace("_", "")) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of chunk counts: {text!r} (e.g. 1000,10000)") from None
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError(f"chunk counts are positive: {text!r}")
    return found


def _rounds(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"rounds are a positive whole number: {text!r}")
    return int(text)


def _langs(text: str) -> list[str]:
    found = text.split(",")
    if not found or any(lang not in ("zh", "en") for lang in found):
        raise argparse.ArgumentTypeError(f"languages are zh and en: {text!r}")
    return found


def disk_mb(folder: Path) -> float:
    """The keyword index files of the knowledge base (the database, its WAL)."""
    return sum(p.stat().st_size for p in folder.glob("kb.sqlite3*")) / 1e6


async def run(args: argparse.Namespace) -> None:
    rows = []
    load_before = os.getloadavg()[0]
    for n in args.sizes:
        for lang in args.langs:
            wall, cpu, index_s = {"ours": 0.0, "peer": 0.0}, {"ours": 0.0, "peer": 0.0}, 0.0
            for left in range((args.ingest_rounds or rounds(n)) - 1, -1, -1):
                with tempfile.TemporaryDirectory() as tmp:
                    root = Path(tmp)
                    one_wall, one_cpu, one_index, chunks = await ingest(root, documents(lang, n))
                    wall = {k: wall[k] + one_wall[k] for k in wall}
                    cpu = {k: cpu[k] + one_cpu[k] for k in cpu}
                    index_s += one_index
                    if left:
                        continue
                    disk = disk_mb(root / "ours" / INDEX_DIR)
                    ours = run_probe("ours", root, lang)
                    peer = run_probe("peer", root, lang, SEARCHES if n < LARGE else PEER_LARGE)
            assert ours["rebuilds"] == 0, "the index was rebuilt after a restart"
            rows.append([f"{chunks:,}", lang, f"{ours['first'] * 1000:.0f}", f"{ours['cold'] * 1000:.0f}",
                         f"{peer['cold'] * 1000:.0f}", f"{ours['p50'] * 1000:.1f} / {ours['p95'] * 1000:.1f}",
                         f"{peer['p50'] * 1000:.1f} / {peer['p95'] * 1000:.1f}" + ("*" if n >= LARGE else ""),
                         f"{ours['p50'] / peer['p50']:.2f}", f"{wall['ours']:.1f} / {wall['peer']:.1f}",
                         f"{wall['ours'] / wall['peer']:.2f}", f"{cpu['ours']:.1f} / {cpu['peer']:.1f}",
                         f"{cpu['ours'] / cpu['peer']:.2f}", f"{index_s:.1f} ({index_s / wall['peer']:.0%})",
                         f"{(wall['ours'] - index_s) / wall['peer']:.2f}", f"{disk:.0f}", f"{ours['rss']:.1f}"])
    print("\nKeyword search at scale, ours (KnowledgeService, keyword index on disk) against plain Chroma "
          "($contains any word), keyword-only, one process per first search:")
    table(rows, ["chunks", "lang", "first ms (Chroma open)", "first ms cold", "peer first ms cold",
                 "warm p50/p95 ms", "peer p50/p95 ms", "p50 ratio", "ingest s ours/peer", "ingest ratio",
                 "ingest CPU s ours/peer", "CPU ratio", "index s (of peer)", "ingest ratio w/o index", "index MB disk", "index RSS MB"])
    print(f"  ({SEARCHES} searches per row, ours; * the peer's $contains reads every chunk of the scope, about "
          f"a second a search at {LARGE:,} chunks: it runs {PEER_LARGE} of them there; ingest sums "
          f"{f'{args.ingest_rounds} round(s)' if args.ingest_rounds else f'{MAX_ROUNDS} rounds under {ROUNDS_UNDER:,} chunks'} "
          f"on new stores; "
          f"one run; load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after)")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.probe:
        print(json.dumps(probe(*args.probe)))
        return
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
