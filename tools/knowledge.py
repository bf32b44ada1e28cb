"""The knowledge-base tools (K1-K4): kb_add, kb_search, kb_list, kb_delete.

A session reads its own base and the global one; it writes its own, and only admins write the global one.
In a group, only an admin deletes a document (`RunContext.admin_in_group`); any member may add one.
Writes are side effects (plan mode blocks them). Results are cut at 8000 characters in total (K4).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from services.errors import ToolError
from services.knowledge import GLOBAL, Added, DocInfo, Hit
from tools.base import Tool

if TYPE_CHECKING:
    from services.context import RunContext

RESULT_RUNES = 8000
CUT = "\n[results cut at {limit} characters; search with more specific words for the rest]"
GLOBAL_ADMINS_ONLY = ("Only an admin can {action} the global knowledge base. "
                      'Use scope "session" for this chat\'s own knowledge base.')

KB_ADD = (
    "Store a document in the knowledge base so it can be found later with kb_search: rules, FAQs, notes, "
    "a text someone pasted or asked you to keep. Long texts are split into passages of about 600 "
    "characters. The same text added twice is stored once. Use it for reference material; for a short "
    "fact about a person or this chat (a preference, a name, a decision) use memory_save instead. "
    'scope "session" (default) is this chat\'s own base; "global" is searched by every chat and only '
    "admins may write it."
)
KB_SEARCH = (
    "Search the knowledge base (this chat's documents and the global ones) for passages that answer a "
    "question. Use it before answering questions about this group's or this chat's own material (rules, "
    "FAQs, documents people added). Each hit has the title, document id, chunk number, score and text. "
    "Search with the key words of the question; if nothing fits, try the words the document would use. "
    "For what users asked you to remember, use memory_search."
)
KB_LIST = "List the documents in the knowledge base: this chat's own (default) or the global one."
KB_DELETE = (
    "Delete a document (all its passages) from this chat's knowledge base by its id (d-...); admins can "
    "also delete from the global one."
)


def plural(n: int, noun: str, nouns: str = "") -> str:
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def scope_label(scope: str) -> str:
    return "the global knowledge base" if scope == GLOBAL else "this chat's knowledge base"


def when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(epoch)) if epoch else "?"


def added_text(added: Added, where: str, keywords_only: bool) -> str:
    d = added.doc
    if added.duplicate:
        return f'Already stored as {d.id} ("{d.title}") in {where}; nothing added.'
    text = f'Stored "{d.title}" as {d.id} in {where}: {plural(d.chunks, "passage")}, {d.runes:,} characters.'
    if keywords_only:
        text += " The embedding service did not answer, so it is found by keywords only for now."
    return text


def hits_text(hits: Sequence[Hit], header: str, entry: str, limit: int = RESULT_RUNES) -> str:
    """The hits as the model reads them, at most `limit` characters in total."""
    out = header
    for n, hit in enumerate(hits, 1):
        c = hit.chunk
        part = "\n\n" + entry.format(n=n, title=c.title, doc=c.doc_id, pos=c.pos + 1, score=hit.score,
                                     scope=scope_label(c.scope)) + "\n" + c.text
        if len(out) + len(part) > limit:
            room = limit - len(out) - len(CUT.format(limit=limit))
            if room > 80:
                out += part[:room] + "…"
            return out + CUT.format(limit=limit)
        out += part
    return out


def docs_text(docs: Sequence[DocInfo], total: int, where: str) -> str:
    if not docs:
        return f"No documents in {where}."
    lines = [f"Documents in {where} ({len(docs)} of {total}, newest first):"]
    for d in docs:
        noun = "passage" if d.chunks == 1 else "passages"
        lines.append(f'- {d.id} "{d.title}": {d.chunks} {noun}, {d.runes:,} characters, added {when(d.added)}')
    return "\n".join(lines)


class KbAddParams(BaseModel):
    title: str = Field(description="A short title that says what the document is", min_length=1, max_length=200)
    content: str = Field(description="The full text of the document (plain text or Markdown)")
    scope: Literal["session", "global"] = Field("session", description='"session" (this chat) or "global"')


class KbAddTool(Tool[KbAddParams]):
    name = "kb_add"
    description = KB_ADD
    params = KbAddParams
    side_effect = True

    async def execute(self, args: KbAddParams, ctx: RunContext) -> str:
        if args.scope == "global" and not ctx.is_admin():
            raise ToolError(GLOBAL_ADMINS_ONLY.format(action="add to"))
        scope = GLOBAL if args.scope == "global" else ctx.session_key
        knowledge = ctx.services.knowledge
        added = await knowledge.add_document(scope, args.title, args.content)
        return added_text(added, scope_label(scope), knowledge.embedder.enabled and not added.vectors)


class KbSearchParams(BaseModel):
    query: str = Field(description="What to look for: the key words of the question", min_length=1, max_length=2000)
    top_k: int = Field(5, ge=1, le=20, description="How many passages to return (1-20)")


class KbSearchTool(Tool[KbSearchParams]):
    name = "kb_search"
    description = KB_SEARCH
    params = KbSearchParams

    async def execute(self, args: KbSearchParams, ctx: RunContext) -> str:
        hits = await ctx.services.knowledge.search(ctx.session_key, args.query, args.top_k)
        if not hits:
            return f"No passage matches {args.query!r} in this chat's knowledge base or the global one."
        return hits_text(hits, f"{plural(len(hits), 'passage')} for {args.query!r}, best first:",
                         '[{n}] "{title}" ({doc}, chunk {pos}, score {score:.3f}, {scope})')


class KbListParams(BaseModel):
    scope: Literal["session", "global"] = Field("session", description='"session" (this chat) or "global"')
    limit: int = Field(20, ge=1, le=100, description="How many documents to list, newest first (1-100)")


class KbListTool(Tool[KbListParams]):
    name = "kb_list"
    description = KB_LIST
    params = KbListParams

    async def execute(self, args: KbListParams, ctx: RunContext) -> str:
        scope = GLOBAL if args.scope == "global" else ctx.session_key
        docs, total = await ctx.services.knowledge.list_documents(scope, args.limit)
        return docs_text(docs, total, scope_label(scope))


class KbDeleteParams(BaseModel):
    doc_id: str = Field(description="The document id, as kb_search or kb_list show it (d-...)", min_length=1,
                        max_length=64)


class KbDeleteTool(Tool[KbDeleteParams]):
    name = "kb_delete"
    description = KB_DELETE
    params = KbDeleteParams
    side_effect = True

    async def execute(self, args: KbDeleteParams, ctx: RunContext) -> str:
        own = {ctx.session_key}
        writable = own | {GLOBAL} if ctx.is_admin() else own
        info = await ctx.services.knowledge.delete_document(
            args.doc_id.strip(), own | {GLOBAL}, writable,
            lambda _doc: ctx.admin_in_group("delete a document of the chat's knowledge base"))
        return f'Deleted "{info.title}" ({info.id}, {plural(info.chunks, "passage")}) from {scope_label(info.scope)}.'


def knowledge_tools() -> list[Tool[Any]]:
    return [KbAddTool(), KbDeleteTool(), KbListTool(), KbSearchTool()]
