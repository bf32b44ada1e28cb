"""Recall into the turn (F3): how often the injected block holds the answer, and what it costs a turn.

    python -m bench.bench_recall [--quick] [--recall-sizes 1000,10000] [--recall-turns 40]

The corpus is bench/recall_corpus.py's, generated (nothing downloaded): club notices in Chinese and
English (many clubs alike but for their names) and other talk to fill the global knowledge base up to N
passages, ten memories in the chat. At each size:

1. Quality, through `services.recall` (what a turn injects, with the default `[recall]` settings):
   recall@k (k = `recall.top_k`) of knowledge and memory questions in each language (a question counts
   when a passage of the block contains its answer), and the false injections of small talk (a message
   that asks nothing the corpus holds, yet gets a block).
2. Speed: whole turns through the real `Engine.run_turn` against the scripted model (one reply, no
   tool call), with recall on (this corpus) and off (the peer: the same engine with `recall.enable =
   false`), interleaved, each turn in a chat of its own (whose empty scopes were searched once before,
   as in a chat that talked before); wall and CPU time, p50 and p95, the time recall adds and the
   ratio. And `Recall.find` alone.

Keyword search only (no embeddings endpoint: the default, and what a download-free run has).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ania.fakes.openai_server import Reply, ScriptedOpenAI
from bench.common import Ours, table
from bench.recall_corpus import MEMORIES, SMALL_TALK, Question, clubs, documents, filler, questions
from services.container import Services

SESSION = "g:bench"


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def fill(services: Services, passages: int, n_clubs: int) -> tuple[int, list[Question]]:
    """The clubs, the filler up to `passages` in all, the memories; (passages stored, the questions)."""
    knowledge = services.knowledge
    all_clubs = clubs(n_clubs)
    docs = documents(all_clubs)
    for title, text in docs:
        await knowledge.add_document("global", title, text)
    stored = sum(d.chunks for d in (await knowledge.list_documents("global", 1_000_000))[0])
    for title, text in filler(max(0, passages - stored)):
        await knowledge.add_document("global", title, text)
    for text, _ in MEMORIES:
        await knowledge.save_memory(SESSION, text)
    total = sum(d.chunks for d in (await knowledge.list_documents("global", 1_000_000))[0])
    return total, questions(all_clubs, 40) + [q for _, q in MEMORIES] + SMALL_TALK


FLOORS = (0.4, 0.5, 0.6, 0.7)
GROUPS = (("knowledge", "zh"), ("knowledge", "en"), ("memory", "zh"), ("memory", "en"), ("smalltalk", "zh"),
          ("smalltalk", "en"))


async def quality(services: Services, qs: list[Question]) -> list[list[object]]:
    """One row per score floor: recall@k per group of questions, false injections of small talk, and the
    mean size of the injected blocks. Passages are sorted by score, so a higher floor keeps a prefix of a
    lower one's: one search per question (floor 0) serves every row."""
    got = [(q, await services.recall.find(SESSION, q.text, min_score=0.0)) for q in qs]
    default = services.settings.recall.min_score
    rows: list[list[object]] = []
    for floor in sorted({*FLOORS, default}):
        cells: list[object] = [f"{floor:.2f}{' (default)' if floor == default else ''}"]
        sizes = []
        for kind, lang in GROUPS:
            hits = []
            for q, passages in got:
                if (q.kind, q.lang) != (kind, lang):
                    continue
                kept = [p for p in passages if p.score >= floor]
                sizes += [sum(len(p.text) for p in kept)] if kept else []
                hits.append(any(q.answer in p.text for p in kept) if kind != "smalltalk" else bool(kept))
            cells.append(f"{statistics.mean(hits):.2f}")
        cells.append(f"{statistics.mean(sizes):.0f}" if sizes else "-")
        rows.append(cells)
    return rows


QUALITY_HEADER = ["floor", "kb zh", "kb en", "memory zh", "memory en", "small talk zh", "small talk en", "runes"]


async def speed(on: Ours, off: Ours, qs: list[Question], turns: int) -> list[list[object]]:
    """Wall and CPU (the process's, all threads: the scripted model's share is the same on both sides, and
    CPU is the steadier figure on a machine shared with other jobs) per turn, recall on and off."""
    texts = [q.text for q in qs if q.kind == "knowledge"][:turns]
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for n in range(10):  # both engines warm (their first turns pay for caches and connections)
        await on.turn(texts[n % len(texts)], f"g:warm{n}")
        await off.turn(texts[n % len(texts)], f"g:warm{n}")
    for n in range(len(texts)):  # each chat's own (empty) scopes are opened once, as in a chat that talked before
        await on.engine.services.recall.find(f"g:t{n}", "warm up")
    for n, text in enumerate(texts):
        for side in (True, False) if n % 2 == 0 else (False, True):
            w0, c0 = time.perf_counter(), time.process_time()
            await (on if side else off).turn(text, f"g:t{n}")
            wall[side].append((time.perf_counter() - w0) * 1000)
            cpu[side].append((time.process_time() - c0) * 1000)
    alone = []
    for text in texts:
        t0 = time.perf_counter()
        await on.engine.services.recall.find(SESSION, text)
        alone.append((time.perf_counter() - t0) * 1000)
    rows: list[list[object]] = []
    for name, got in (("wall", wall), ("CPU", cpu)):
        p50 = {side: percentile(got[side], 50) for side in got}
        p95 = {side: percentile(got[side], 95) for side in got}
        rows += [[f"turn {name}, recall on", f"{p50[True]:.1f}", f"{p95[True]:.1f}", len(got[True])],
                 [f"turn {name}, recall off (peer)", f"{p50[False]:.1f}", f"{p95[False]:.1f}", len(got[False])],
                 [f"{name} added by recall (p50)", f"{p50[True] - p50[False]:.1f}", "", ""],
                 [f"{name} ratio on / off", f"{p50[True] / p50[False]:.2f}", f"{p95[True] / p95[False]:.2f}", ""]]
    rows.append(["Recall.find alone, wall", f"{percentile(alone, 50):.1f}", f"{percentile(alone, 95):.1f}", len(alone)])
    return rows


async def one_size(root: Path, llm: ScriptedOpenAI, passages: int, turns: int) -> None:
    on = await Ours.start(llm, root / f"on-{passages}", knowledge={"max_docs": 100_000})
    off = await Ours.start(llm, root / f"off-{passages}", recall={"enable": False})
    try:
        t0 = time.perf_counter()
        total, qs = await fill(on.engine.services, passages, n_clubs=400)
        ingest = time.perf_counter() - t0
        t0 = time.perf_counter()
        await on.engine.services.recall.find(SESSION, "warm up the keyword index")
        first = time.perf_counter() - t0
        print(f"\n{total} passages in the global base, {len(MEMORIES)} memories (ingest {ingest:.1f} s; the first "
              f"search loaded the keyword index in {first * 1000:.0f} ms)")
        k = on.engine.services.settings.recall.top_k
        counts = {g: sum(1 for q in qs if (q.kind, q.lang) == g) for g in GROUPS}
        print(f"recall@{k} of knowledge and memory questions, false injections of small talk (questions per group: "
              + ", ".join(f"{kind} {lang} {n}" for (kind, lang), n in counts.items())
              + "); runes: mean size of an injected block")
        print(table(QUALITY_HEADER, await quality(on.engine.services, qs)))
        print(table(["", "p50 ms", "p95 ms", "turns"], await speed(on, off, qs, turns)))
    finally:
        await on.close()
        await off.close()


async def run(argv: Sequence[str]) -> None:
    quick = "--quick" in argv
    sizes = ([int(s) for s in argv[argv.index("--recall-sizes") + 1].split(",")] if "--recall-sizes" in argv
             else [1000] if quick else [1000, 10_000])
    turns = int(argv[argv.index("--recall-turns") + 1]) if "--recall-turns" in argv else (20 if quick else 60)
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI() as llm:
        llm.respond_with(lambda body: Reply("ok"))
        for n in sizes:
            await one_size(Path(tmp), llm, n, turns)


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(run(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
