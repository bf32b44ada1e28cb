"""The knowledge-base tools (K1-K4): kb_add, kb_search, kb_list, kb_delete.

A session reads its own base and the global one; it writes its own, and only admins write the global one.
In a group, only an admin deletes a document (`RunContext.admin_in_group`); any member may add one.
Writes are side effects (plan mode blocks them). Results are cut at 8000 characters in total (K4).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tool import AnyTool, Tool
from services.context import RunContext
from services.knowledge import GLOBAL
from tools.knowledge_text import added_text, docs_text, hits_text, plural, scope_label

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


class KbAddParams(BaseModel):
    title: str = Field(description="A short title that says what the document is", min_length=1, max_length=200)
    content: str = Field(description="The full text of the document (plain text or Markdown)")
    scope: Literal["session", "global"] = Field("session", description='"session" (this chat) or "global"')


class KbAddTool(Tool[KbAddParams, RunContext]):
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


class KbSearchTool(Tool[KbSearchParams, RunContext]):
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


class KbListTool(Tool[KbListParams, RunContext]):
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


class KbDeleteTool(Tool[KbDeleteParams, RunContext]):
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


def knowledge_tools() -> list[AnyTool]:
    return [KbAddTool(), KbDeleteTool(), KbListTool(), KbSearchTool()]
