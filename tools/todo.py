"""todo_write (G7): the model keeps a todo list for a multi-step task in the main session.

The shape Claude Code and deepagents use: the whole list is sent on every call and replaces the old
one. The list lives in the app store (services/todos.py); `prepare` shows it again as a
`<todo_reminder>` only when it changed. Not a side-effect tool: plan mode lets it through.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tool import Tool
from services.context import RunContext
from services.todos import TodoItem

MAX_ITEMS = 50
MAX_CONTENT_CHARS = 500

TODO_WRITE_DESCRIPTION = (
    "Create or update your todo list for the current task. Use it for work with three or more steps, "
    "or when the user gives you several things to do; skip it for simple one-step requests. "
    "Send the complete list every time: it replaces the previous one (an empty list clears it). "
    "Mark an item in_progress before you start it (at most one at a time) and completed as soon as "
    "it is done; add items you discover along the way and remove ones that no longer apply. "
    f"At most {MAX_ITEMS} items of at most {MAX_CONTENT_CHARS} characters each."
)
MAIN_ONLY = "todo_write is only available in the main session"
TOO_MANY = "todo_write accepts at most {limit} items; got {count}. Merge or drop some items."
BAD_CONTENT = "todo item {n}: content must be 1 to {limit} characters; got {length}."
TWO_IN_PROGRESS = (
    "at most one todo item may be in_progress; items {numbers} are. "
    "Keep the one you are working on now and mark the others pending or completed."
)


class TodoWriteParams(BaseModel):
    todos: list[TodoItem] = Field(
        description=f"The complete, updated todo list in order (at most {MAX_ITEMS} items). "
        "It replaces the previous list; an empty list clears it."
    )


def validate(items: list[TodoItem]) -> list[TodoItem]:
    """The list with contents trimmed, or a ToolError naming the broken limit."""
    if len(items) > MAX_ITEMS:
        raise ToolError(TOO_MANY.format(limit=MAX_ITEMS, count=len(items)))
    cleaned = [item.model_copy(update={"content": item.content.strip()}) for item in items]
    for n, item in enumerate(cleaned, 1):
        if not 1 <= len(item.content) <= MAX_CONTENT_CHARS:
            raise ToolError(BAD_CONTENT.format(n=n, limit=MAX_CONTENT_CHARS, length=len(item.content)))
    active = [str(n) for n, item in enumerate(cleaned, 1) if item.status == "in_progress"]
    if len(active) > 1:
        raise ToolError(TWO_IN_PROGRESS.format(numbers=", ".join(active)))
    return cleaned


def summary(items: list[TodoItem]) -> str:
    if not items:
        return "Todo list cleared."
    count = {s: sum(1 for i in items if i.status == s) for s in ("in_progress", "pending", "completed")}
    noun = "item" if len(items) == 1 else "items"
    return (
        f"Todo list updated: {len(items)} {noun} ({count['in_progress']} in progress, "
        f"{count['pending']} pending, {count['completed']} completed)."
    )


class TodoWriteTool(Tool[TodoWriteParams, RunContext]):
    name = "todo_write"
    description = TODO_WRITE_DESCRIPTION
    params = TodoWriteParams

    async def execute(self, args: TodoWriteParams, ctx: RunContext) -> str:
        if ctx.agent_kind != "main":
            raise ToolError(MAIN_ONLY)
        items = validate(args.todos)
        await asyncio.to_thread(ctx.services.todos.replace, ctx.session_key, items)
        return summary(items)
