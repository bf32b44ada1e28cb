"""Long-term memory tools (K5): memory_save, memory_search, memory_delete, scoped to the session.

Memories share the knowledge service's store and embedder; each is one short fact, kept across restarts.
Saving and deleting are side effects (plan mode blocks them); in a group only an admin deletes one.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from core.tool import AnyTool, Tool
from services.context import RunContext
from tools.knowledge_text import hits_text, plural

MEMORY_SAVE = (
    "Remember a lasting fact about this chat or its people for future conversations, also after a "
    "restart: a preference, a name, a birthday, a decision, anything a user asks you to remember. One "
    "fact per call, as a short sentence that stands on its own (say who). Not for documents, rules or "
    "long texts: put those in the knowledge base with kb_add."
)
MEMORY_SEARCH = (
    "Recall long-term memories of this chat that fit the query: what users told you to remember, their "
    "preferences, earlier decisions. Use it when the answer may depend on something said in an earlier "
    "conversation. For documents and reference material use kb_search."
)
MEMORY_HIT = "[{n}] {doc} (score {score:.3f})"
MEMORY_DELETE = "Forget a long-term memory of this chat by its id (m-...), e.g. when it is wrong or outdated."


class MemorySaveParams(BaseModel):
    content: str = Field(description="The fact to remember, in a short self-contained sentence")


class MemorySaveTool(Tool[MemorySaveParams, RunContext]):
    name = "memory_save"
    description = MEMORY_SAVE
    params = MemorySaveParams
    side_effect = True

    async def execute(self, args: MemorySaveParams, ctx: RunContext) -> str:
        added = await ctx.services.knowledge.save_memory(ctx.session_key, args.content)
        if added.duplicate:
            return f"Already remembered as {added.doc.id}; nothing added."
        return f"Remembered as {added.doc.id}."


class MemorySearchParams(BaseModel):
    query: str = Field(description="What to recall: the key words", min_length=1, max_length=2000)
    top_k: int = Field(5, ge=1, le=20, description="How many memories to return (1-20)")


class MemorySearchTool(Tool[MemorySearchParams, RunContext]):
    name = "memory_search"
    description = MEMORY_SEARCH
    params = MemorySearchParams

    async def execute(self, args: MemorySearchParams, ctx: RunContext) -> str:
        hits = await ctx.services.knowledge.search_memory(ctx.session_key, args.query, args.top_k)
        if not hits:
            return f"No memory of this chat matches {args.query!r}."
        return hits_text(hits, f"{plural(len(hits), 'memory', 'memories')} for {args.query!r}, best first:", MEMORY_HIT)


class MemoryDeleteParams(BaseModel):
    memory_id: str = Field(description="The memory id, as memory_search shows it (m-...)", min_length=1,
                           max_length=64)


class MemoryDeleteTool(Tool[MemoryDeleteParams, RunContext]):
    name = "memory_delete"
    description = MEMORY_DELETE
    params = MemoryDeleteParams
    side_effect = True

    async def execute(self, args: MemoryDeleteParams, ctx: RunContext) -> str:
        info = await ctx.services.knowledge.delete_memory(
            ctx.session_key, args.memory_id.strip(),
            lambda _memory: ctx.admin_in_group("delete one of the chat's memories"))
        return f"Forgot {info.id}."


def memory_tools() -> list[AnyTool]:
    return [MemoryDeleteTool(), MemorySaveTool(), MemorySearchTool()]
