"""The knowledge service: the knowledge base and long-term memory over one store, one embedder.

Scopes (K1): a session's own base is its key (`g:<group>`, `f:<user>`), and `global` is searched by every
session. Who may write where is decided by the caller (tools, `ania kb`) with `writable_scopes`; this
service enforces the limits (K4) and never lets a delete reach outside the scopes it is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from pathlib import Path

from core.errors import ToolError
from core.settings import Settings
from services.knowledge.base import Added, ChunkBase, Hit, digest
from services.knowledge.embedder import Embedder
from services.knowledge.index import KeywordIndex
from services.knowledge.store import ChromaStore, DocInfo
from services.knowledge.text import Analyzer, Mode, runes, split, splitter

GLOBAL = "global"
#: The keyword indexes' folder in the data directory (one SQLite file per base; a cache of the store).
INDEX_DIR = "keyword-index"
#: A last word before a deletion: raises ToolError to refuse it (tools/knowledge.py: in a group, admins only).
Check = Callable[[DocInfo], None]
SCOPE_RE = re.compile(r"^(global|[gf]:\S{1,128})$")
#: A memory is one fact or preference, not a document: one chunk.
MEMORY_RUNES = 1000

EMPTY = "The {what} is empty: nothing was stored."
TOO_LONG = ("The document is {size:,} characters long; the limit is {limit:,} (knowledge.max_doc_runes). "
            "Nothing was stored: split it and add the parts with their own titles.")
MEMORY_TOO_LONG = ("A memory holds at most {limit:,} characters (got {size:,}); nothing was saved. Save the fact "
                   "itself in a sentence or two, or put documents in the knowledge base with kb_add.")
NOT_FOUND = "No {what} {id} in {where}."
NOT_YOURS = "Only an admin can delete from the global knowledge base; {id} was not deleted."
BAD_SCOPE = "Invalid scope {scope!r}: use global, g:<group id> or f:<user id>."


def check_scope(scope: str) -> str:
    if not SCOPE_RE.match(scope):
        raise ToolError(BAD_SCOPE.format(scope=scope))
    return scope


def where_label(scope: str) -> str:
    return "the global knowledge base" if scope == GLOBAL else f"the knowledge base of {scope}"


class KnowledgeService:
    def __init__(self, settings: Settings, data_dir: Path, *, mode: Mode | None = None) -> None:
        self.settings = settings.knowledge
        mode = mode or settings.knowledge.analyzer
        self.store = ChromaStore(data_dir / "chroma", settings.knowledge.chroma_url)
        self.embedder = Embedder(settings.embedding)
        analyzer = Analyzer(mode)
        index = data_dir / INDEX_DIR
        self.kb = ChunkBase("kb", "d", self.store, KeywordIndex(analyzer, index / "kb.sqlite3"), self.embedder)
        self.memory = ChunkBase("memory", "m", self.store, KeywordIndex(analyzer, index / "memory.sqlite3"),
                                self.embedder)
        self._chunker = splitter()

    # --- knowledge base -------------------------------------------------------------------------
    async def add_document(self, scope: str, title: str, content: str) -> Added:
        check_scope(scope)
        size = runes(content)
        if not content.strip():
            raise ToolError(EMPTY.format(what="document"))
        if size > self.settings.max_doc_runes:
            raise ToolError(TOO_LONG.format(size=size, limit=self.settings.max_doc_runes))
        title = " ".join(title.split())[:200] or "untitled"
        texts = split(content, self._chunker)
        return await self.kb.add(
            scope, title, texts, size=size, digest_=digest(title, content), limit=self.settings.max_docs,
            limit_text=(where_label(scope), "documents", f"knowledge.max_docs = {self.settings.max_docs}"),
        )

    async def search(self, session_key: str, query: str, top_k: int) -> list[Hit]:
        """The session's own base and the global one (never another session's)."""
        scopes = [session_key, GLOBAL] if session_key != GLOBAL else [GLOBAL]
        return await self.kb.search(query, self.kb.index.analyzer.query_terms(query), scopes, top_k)

    async def list_documents(self, scope: str, limit: int, offset: int = 0) -> tuple[list[DocInfo], int]:
        """Newest first: `limit` documents from `offset` on, and how many the scope holds."""
        docs = await self.kb.docs(check_scope(scope))
        return docs[offset:offset + limit], len(docs)

    async def scopes(self) -> dict[str, int]:
        """Every scope of the knowledge base that holds documents, with their number (the operator's view)."""
        return await self.kb.scopes()

    async def clear_scope(self, scope: str) -> list[DocInfo]:
        """Delete every document of one scope (the operator pruning a chat's base); returns what went."""
        gone = []
        for info in await self.kb.docs(check_scope(scope)):
            found = await self.kb.find(info.id)
            if found is not None:
                await self.kb.delete(*found)
                gone.append(found[0])
        return gone

    async def delete_document(self, doc_id: str, readable: Collection[str] | None,
                              writable: Collection[str] | None, check: Check | None = None) -> DocInfo:
        """Delete a document whose scope is readable and writable by the caller (None: any scope, the operator);
        `check` (raising ToolError to refuse) sees the document found before it goes."""
        found = await self.kb.find(doc_id)
        if found is None or (readable is not None and found[0].scope not in readable):
            where = "the knowledge base" if readable is None else " or ".join(where_label(s) for s in sorted(readable))
            raise ToolError(NOT_FOUND.format(what="document", id=doc_id, where=where))
        info, ids = found
        if writable is not None and info.scope not in writable:
            raise ToolError(NOT_YOURS.format(id=doc_id))
        if check is not None:
            check(info)
        await self.kb.delete(info, ids)
        return info

    # --- long-term memory -----------------------------------------------------------------------
    async def save_memory(self, session_key: str, content: str) -> Added:
        text = content.strip()
        if not text:
            raise ToolError(EMPTY.format(what="memory"))
        if runes(text) > MEMORY_RUNES:
            raise ToolError(MEMORY_TOO_LONG.format(limit=MEMORY_RUNES, size=runes(text)))
        limit = self.settings.max_memories
        return await self.memory.add(
            session_key, "", [text], size=runes(text), digest_=digest("", text), limit=limit,
            limit_text=("chat's memory", "memories", f"knowledge.max_memories = {limit}"),
        )

    async def search_memory(self, session_key: str, query: str, top_k: int) -> list[Hit]:
        return await self.memory.search(query, self.memory.index.analyzer.query_terms(query), [session_key], top_k)

    async def list_memories(self, scope: str, limit: int, offset: int = 0) -> tuple[list[tuple[DocInfo, str]], int]:
        """A chat's memories, newest first, each with its text: `limit` from `offset` on, and their number."""
        docs = await self.memory.docs(scope)
        page = docs[offset:offset + limit]
        texts = await self.memory.texts([d.id for d in page])
        return [(d, texts.get(d.id, "")) for d in page], len(docs)

    async def memory_scopes(self) -> dict[str, int]:
        """Every chat that has memories, with their number (the operator's view)."""
        return await self.memory.scopes()

    async def delete_memory(self, session_key: str | None, memory_id: str, check: Check | None = None) -> DocInfo:
        """Delete one of the chat's memories (`session_key` None: of any chat, the operator)."""
        found = await self.memory.find(memory_id)
        if found is None or (session_key is not None and found[0].scope != session_key):
            where = "this chat's memory" if session_key is not None else "any chat's memory"
            raise ToolError(NOT_FOUND.format(what="memory", id=memory_id, where=where))
        if check is not None:
            check(found[0])
        await self.memory.delete(*found)
        return found[0]

    async def aclose(self) -> None:
        await self.embedder.aclose()
        self.kb.index.close()
        self.memory.index.close()
        self.store.close()
