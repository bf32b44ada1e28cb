"""Recall (F3): the passages of a chat's knowledge base and memory that a new message is about.

It uses the knowledge service's public search (the chat's own base and the global one; the chat's
memory), then scores each hit on an absolute scale, so that a floor means the same in a base of one
document and in one of ten thousand (the search's own score is relative to its best hit: its top hit
always scores 1). The score is the share of one sentence's search terms found in the passage, for the
message's best sentence (a batch of messages, or a message of several questions, is not diluted by its
other sentences); a one-character term counts half (a Chinese character alone says little, a pair says
more), a pair across a stop word not at all, and a sentence counts as at least MIN_WEIGHT terms (a
one-word "thanks" does not match everything that says thanks). With embeddings the cosine similarity
counts when it is higher. Passages at or above `recall.min_score` are kept, best first, at most
`recall.top_k`, within `recall.max_runes` (the last one cut). nodes/recall.py quotes them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import Stemmer

from core.errors import ToolError
from core.settings import Settings
from services.knowledge import GLOBAL, Hit, KnowledgeService
from services.knowledge.text import STOP_WORDS, Analyzer

log = logging.getLogger(__name__)

Source = Literal["knowledge", "memory"]
#: Candidates each source brings before the floor and the merge (a few more than kept: the floor drops some).
CANDIDATES = 8
#: A passage cut to fit the budget keeps at least this much, or is left out.
MIN_CUT = 80
CUT_MARK = " …"
#: What of the message (newest sentences first) the search gets: its terms and, with embeddings, its vector.
QUERY_RUNES = 2000
#: A sentence weighs at least this many terms in its score's denominator.
MIN_WEIGHT = 2.0
_SENTENCES = re.compile(r"[\n。！？；!?;]+|\.\s+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Passage:
    """One recalled passage: where it comes from, how well it matched, its text (cut to the budget)."""

    source: Source
    #: The chunk id (`d-…#n`) of a document's passage, the memory id (`m-…`) of a memory.
    id: str
    doc_id: str
    title: str
    scope: str
    #: 0-based position of the passage in its document.
    pos: int
    score: float
    text: str
    #: Its place in its own search's ranking (ties of score go to the better ranked).
    rank: int = 0
    cut: bool = False

    def record(self) -> dict[str, object]:
        """What the query log keeps of it (not the text: the checkpoint has that)."""
        return {"source": self.source, "id": self.id, "title": self.title, "scope": self.scope,
                "score": round(self.score, 3), "runes": len(self.text)}


def term_weight(term: str) -> float:
    """A one-character term counts half; a CJK pair with a stop character in it (发广告会被怎么处理 gives
    告会, 被怎, 么处) is an accident of the gram analyzer and does not count."""
    if len(term) == 1:
        return 0.5
    if len(term) == 2 and not term.isascii() and (term[0] in STOP_WORDS or term[1] in STOP_WORDS):
        return 0.0
    return 1.0


class Recall:
    """Built once by the composition root on the knowledge service; stateless per call."""

    def __init__(self, settings: Settings, knowledge: KnowledgeService) -> None:
        self.settings = settings.recall
        self.enabled = settings.recall.enable and settings.knowledge.enable and (
            settings.recall.knowledge or settings.recall.memory)
        self.knowledge = knowledge
        self.analyzer = Analyzer(settings.knowledge.analyzer)
        self._stemmer = Stemmer.Stemmer("english")

    def nothing_stored(self) -> bool:
        """An embedded store never written has no folder yet: nothing to recall, and no reason to open
        Chroma (a second on the first turn of a bot that has no knowledge base)."""
        store = self.knowledge.store
        return not store.url and not (store.path / "chroma.sqlite3").exists()

    async def find(self, session_key: str, query: str, *, min_score: float | None = None) -> list[Passage]:
        """The passages for `query` in the session's bases, best first; [] when none reaches the floor
        (`recall.min_score`, or `min_score`), recall is off, or the store fails (logged: a turn never fails
        for want of recall)."""
        if not self.enabled:
            return []
        parts = newest(query)
        sentences = self.sentences(parts)
        if not sentences or self.nothing_stored():
            return []
        s = self.settings
        newest_first = "\n".join(parts)
        try:
            kb, memory = await asyncio.gather(
                self.knowledge.search(session_key, newest_first, CANDIDATES) if s.knowledge else _none(),
                self.knowledge.search_memory(session_key, newest_first, CANDIDATES) if s.memory else _none())
        except ToolError as e:  # the store is broken or gone: the message goes on without recall
            log.warning("recall for %s failed: %s", session_key, e)
            return []
        except Exception:  # recall only adds to a message: whatever failed, the turn goes on
            log.exception("recall for %s failed", session_key)
            return []
        found: tuple[tuple[Source, list[Hit]], ...] = (("knowledge", kb), ("memory", memory))
        scored = [self._passage(src, h, sentences, n) for src, hits in found for n, h in enumerate(hits)]
        floor = s.min_score if min_score is None else min_score
        kept = sorted((p for p in scored if p.score >= floor and p.score > 0),
                      key=lambda p: (-p.score, p.rank, p.source, p.id))
        return budgeted(kept[: s.top_k], s.max_runes)

    def sentences(self, parts: Sequence[str]) -> list[list[str]]:
        """The search terms of each sentence (or line) of the query that has any."""
        out = [self.analyzer.query_terms(part) for part in parts]
        return [terms for terms in out if sum(term_weight(t) for t in terms) > 0]

    def score(self, sentences: Sequence[Sequence[str]], passage: str, cosine: float | None) -> float:
        """The best sentence's share of terms (weighted) found in `passage`, or `cosine` when higher."""
        folded = unicodedata.normalize("NFKC", passage).casefold()
        words = set(_ASCII_WORD.findall(folded))
        words |= set(self._stemmer.stemWords([w for w in words if w.isalpha()]))
        best = 0.0
        for terms in sentences:
            total = max(sum(term_weight(t) for t in terms), MIN_WEIGHT)
            best = max(best, sum(term_weight(t) for t in terms if _has(t, words, folded)) / total)
        return max(best, cosine or 0.0)

    def _passage(self, source: Source, hit: Hit, sentences: Sequence[Sequence[str]], rank: int) -> Passage:
        c = hit.chunk
        text = f"{c.title}\n{c.text}" if c.title else c.text
        return Passage(source=source, id=c.id if source == "knowledge" else c.doc_id, doc_id=c.doc_id,
                       title=c.title, scope=c.scope, pos=c.pos, score=self.score(sentences, text, hit.cosine),
                       text=c.text, rank=rank)


def newest(query: str) -> list[str]:
    """The query's sentences (or lines), newest first, as many as fit QUERY_RUNES (at least one, cut): a
    search reads the first 64 terms of its query, and the last sentences of a batch (or the task at the
    end of a subagent's brief) are what the turn is about; a pasted page costs no more than its end."""
    out: list[str] = []
    left = QUERY_RUNES
    for part in reversed(_SENTENCES.split(query)):
        part = part.strip()
        if not part:
            continue
        if len(part) > left:
            if not out:
                out.append(part[-left:])
            break
        out.append(part)
        left -= len(part)
    return out


def _has(term: str, words: set[str], folded: str) -> bool:
    """Whether the passage holds the term: an English word (stemmed) among its words, anything else (a
    CJK character or pair, a word of another script) in its text; cheaper than the passage's own terms."""
    return term in words if term.isascii() else term in folded


async def _none() -> list[Hit]:
    return []


def budgeted(passages: Sequence[Passage], max_runes: int) -> list[Passage]:
    """Passages in order while their texts fit `max_runes`; the one that does not fit is cut to what is
    left (when at least MIN_CUT is), and nothing after it is taken."""
    out: list[Passage] = []
    left = max_runes
    for p in passages:
        if len(p.text) <= left:
            out.append(p)
            left -= len(p.text)
            continue
        if left >= MIN_CUT:
            out.append(dataclasses.replace(p, text=p.text[: left - len(CUT_MARK)] + CUT_MARK, cut=True))
        break
    return out


def where(scope: str, session_key: str) -> str:
    """A passage's base as the block names it."""
    if scope == GLOBAL:
        return "the global knowledge base"
    return "this chat's knowledge base" if scope == session_key else f"the knowledge base of {scope}"
