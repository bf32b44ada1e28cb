"""One searchable base (the knowledge base `kb`, or long-term memory `memory`): Chroma record, keyword
index and optional vectors kept together.

Adding checks for a duplicate and the scope's limit and writes under one lock, so two adds of the same
text cannot both land. Searching ranks by BM25 over the scopes; with an embedder each candidate's cosine
similarity (clipped at 0) is added to its keyword score scaled to 0..1, and the vector side brings in
candidates of its own. A failing embedder or vector collection leaves the keyword answer standing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from core.errors import ToolError
from services.knowledge.embedder import Embedder
from services.knowledge.index import Chunk, IndexReset, KeywordIndex
from services.knowledge.store import ChromaStore, DocInfo, StoreError
from services.knowledge.text import normalize

T = TypeVar("T")
#: Candidates each side (keyword, vector) brings before the final ranking.
CANDIDATES = 50
NO_TERMS = ("The query has no searchable words (only stop words, punctuation or emoji). "
            "Search with a few content words: a name, a topic, a phrase from the text.")
FULL = ("This {where} already holds {count} {items}, the limit ({setting}). "
        "Delete one first (you can list them).")


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float
    keyword: float
    cosine: float | None


@dataclass(frozen=True)
class Added:
    doc: DocInfo
    duplicate: bool
    #: Whether vectors were stored with the chunks (False: keyword search only for this document).
    vectors: bool


def digest(title: str, content: str) -> str:
    return hashlib.sha256(f"{normalize(title)}\x00{normalize(content)}".encode()).hexdigest()


class ChunkBase:
    def __init__(self, name: str, prefix: str, store: ChromaStore, index: KeywordIndex, embedder: Embedder) -> None:
        self.name = name
        self.prefix = prefix
        self.store = store
        self.index = index
        self.embedder = embedder
        self._write = asyncio.Lock()

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.to_thread(self.store.run, fn)

    async def add(self, scope: str, title: str, texts: Sequence[str], *, size: int, digest_: str,
                  limit: int, limit_text: tuple[str, str, str]) -> Added:
        """Store a document's chunks in `scope` unless the same text is there or the scope is full."""
        async with self._write:
            doc_id = f"{self.prefix}-" + hashlib.sha256(f"{scope}\x00{digest_}".encode()).hexdigest()[:10]
            same, count = await self._run(lambda: self._checks(scope, doc_id, digest_))
            if same is not None:
                return Added(same, duplicate=True, vectors=False)
            if count >= limit:
                where, items, setting = limit_text
                raise ToolError(FULL.format(where=where, count=count, items=items, setting=setting))
            chunks = [Chunk(id=f"{doc_id}#{pos}", doc_id=doc_id, title=title, pos=pos, scope=scope, text=text)
                      for pos, text in enumerate(texts)]
            info = DocInfo(id=doc_id, title=title, scope=scope, chunks=len(chunks), runes=size, added=int(time.time()))
            vectors = await self.embedder.embed([f"{title}\n{c.text}" if title else c.text for c in chunks])
            meta = {"hash": digest_, "chunks": info.chunks, "runes": info.runes, "added": info.added}

            def write() -> bool:
                with contextlib.suppress(IndexReset):  # a replaced file: the scope's next search rebuilds it
                    self._current([scope])  # a scope new to the index enters it now: its first search finds it built
                mark = self.index.begin(scope)
                stamp = self.store.add_chunks(self.name, chunks, meta)
                self.index.add(scope, chunks, mark, stamp)
                return vectors is not None and self._try_vectors(chunks, vectors)

            stored = await self._run(write)
            return Added(info, duplicate=False, vectors=stored)

    def _checks(self, scope: str, doc_id: str, digest_: str) -> tuple[DocInfo | None, int]:
        """The duplicate and limit checks of an add: the same document looked up by its id, with the scope's
        stamp, in one Chroma read; the number of documents from the keyword index, local, once it is current
        (from Chroma when the index file had to be replaced)."""
        stamp, same = self.store.first(self.name, scope, doc_id, digest_)
        if same is not None:
            return same, 0
        try:
            self._current([scope], {scope: stamp})
            return None, self.index.documents(scope)
        except IndexReset:
            return None, self.store.count_docs(self.name, scope)

    def _try_vectors(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> bool:
        try:
            self.store.add_vectors(self.name, self.embedder.key, chunks, vectors)
            return True
        except Exception as e:  # noqa: BLE001 - a model answering another size than the stored vectors: keyword only
            self.embedder.reject(f"the store refused the vectors: {type(e).__name__}: {e}")
            return False

    async def search(self, query: str, terms: Sequence[str], scopes: Sequence[str], top_k: int) -> list[Hit]:
        if not terms:
            raise ToolError(NO_TERMS)
        pending = asyncio.create_task(self.embedder.embed([query])) if self.embedder.available() else None
        # keyword only, the best top_k by BM25 are the answer: asking for fewer rows lets the MaxScore bound
        # (services/knowledge/bm25.py) hold more often; the vector side re-ranks the 50 best
        wanted = CANDIDATES if pending is not None else top_k
        try:
            keyword = await self._run(lambda: self._keyword(scopes, terms, wanted))
        except BaseException:
            if pending is not None:
                pending.cancel()
            raise
        qvec = await pending if pending is not None else None
        cosines: dict[str, float] = {}
        extra: dict[str, Chunk] = {}
        if qvec is not None:
            try:
                cosines, extra = await self._run(lambda: self._cosines(qvec[0], scopes, keyword))
            except StoreError as e:
                self.embedder.reject(str(e))
        return self._rank(keyword, cosines, extra, qvec is not None and bool(cosines), top_k)

    def _keyword(self, scopes: Sequence[str], terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        """BM25 candidates; a scope whose index disagrees with the store's stamp is rebuilt first."""
        try:
            self._current(scopes)
            return self.index.search(scopes, terms, limit)
        except IndexReset:  # the index file was damaged and replaced: rebuild what this search needs, once
            self._current(scopes)
            return self.index.search(scopes, terms, limit)

    def _current(self, scopes: Sequence[str], stamps: Mapping[str, str | None] | None = None) -> None:
        """Rebuild from the store each scope whose stamp in the index is not the store's (in the store's thread;
        `stamps`: the store's, when just read)."""
        stamps = self.store.stamps(self.name, scopes) if stamps is None else stamps
        for scope in scopes:
            if not self.index.is_current(scope, stamps[scope]):
                self.index.load(scope, stamps[scope], self.store.load_scope(self.name, scope))

    def _cosines(self, qvec: np.ndarray, scopes: Sequence[str],
                 keyword: list[tuple[Chunk, float]]) -> tuple[dict[str, float], dict[str, Chunk]]:
        """Cosine of every candidate, and the chunks only the vector side found (read from the index here, in
        the store's thread, not in the event loop)."""
        try:
            near = self.store.nearest(self.name, self.embedder.key, qvec, scopes, CANDIDATES)
        except Exception as e:  # noqa: BLE001 - re-raised as StoreError, which the caller handles
            raise StoreError(f"vector search failed: {type(e).__name__}: {e}") from None
        out = {cid: cos for cid, _, cos in near}
        have = {c.id for c, _ in keyword}
        extra = {cid: found for cid, scope, _ in near
                 if cid not in have and (found := self.index.chunk(scope, cid)) is not None}
        missing: dict[str, list[str]] = {}
        for c, _ in keyword:
            if c.id not in out:
                missing.setdefault(c.scope, []).append(c.id)
        for scope, ids in missing.items():
            for cid, vec in self.store.vectors(self.name, self.embedder.key, scope, ids).items():
                norm = float(np.linalg.norm(vec))
                if norm > 0 and vec.shape == qvec.shape:
                    out[cid] = float(np.dot(qvec, vec) / norm)
        return out, extra

    def _rank(self, keyword: list[tuple[Chunk, float]], cosines: dict[str, float], extra: dict[str, Chunk],
              hybrid: bool, top_k: int) -> list[Hit]:
        top = max((s for _, s in keyword), default=0.0) or 1.0
        scored: dict[str, Hit] = {}
        for chunk, kw in keyword:
            cos = cosines.get(chunk.id) if hybrid else None
            scored[chunk.id] = Hit(chunk, kw / top + max(cos or 0.0, 0.0), kw, cos)
        if hybrid:
            for cid, found in extra.items():
                scored[cid] = Hit(found, max(cosines[cid], 0.0), 0.0, cosines[cid])
        ranked = sorted(scored.values(), key=lambda h: (-h.score, h.chunk.doc_id, h.chunk.pos))
        return [h for h in ranked if h.score > 0][:top_k]

    async def docs(self, scope: str) -> list[DocInfo]:
        return await self._run(lambda: self.store.docs(self.name, scope))

    async def scopes(self) -> dict[str, int]:
        return await self._run(lambda: self.store.scopes(self.name))

    async def texts(self, doc_ids: Sequence[str]) -> dict[str, str]:
        return await self._run(lambda: self.store.texts(self.name, doc_ids))

    async def find(self, doc_id: str) -> tuple[DocInfo, list[str]] | None:
        return await self._run(lambda: self.store.doc(self.name, doc_id))

    async def delete(self, info: DocInfo, ids: Sequence[str]) -> None:
        async with self._write:
            key = self.embedder.key if self.embedder.enabled else None

            def write() -> None:
                mark = self.index.begin(info.scope)
                self.store.delete(self.name, info.scope, ids, key)
                self.index.remove(info.scope, info.id, mark, self.store.new_stamp(self.name, info.scope))

            await self._run(write)
