"""todo_write and the todo reminder (G7), over a real SQLite app store in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ToolArgumentError, ToolError
from core.registry import ToolCall
from services.context import RunContext
from services.store import AppStore
from services.todos import TodoItem, TodoStore
from tests.conftest import run_context
from tools.todo import MAX_CONTENT_CHARS, MAX_ITEMS, TodoWriteTool

SESSION = "group:42"


@pytest.fixture
def store(tmp_path: Path):
    s = AppStore(tmp_path / "data" / "ania.db")
    yield s
    s.close()


@pytest.fixture
def make_ctx(make_services):
    """A run context from the composition root; its store is the same file as the `store` fixture's."""
    async def make(agent_kind: str = "main") -> RunContext:
        return run_context(await make_services(), SESSION, agent_kind=agent_kind)

    return make


def items(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"content": c, "status": s} for c, s in pairs]


async def write(ctx: RunContext, todos: list[dict[str, str]]) -> str:
    t = TodoWriteTool()
    return await t.execute(t.parse({"todos": todos}), ctx)


def listed(store: AppStore) -> list[tuple[str, str]]:
    return [(i.content, i.status) for i in TodoStore(store).get(SESSION)]


async def test_full_replacement_and_summary(tmp_path: Path, store: AppStore, make_ctx) -> None:
    ctx = await make_ctx()
    out = await write(ctx, items(("Read spec", "completed"), ("Write code", "in_progress"), ("Test", "pending")))
    assert out == "Todo list updated: 3 items (1 in progress, 1 pending, 1 completed)."
    out = await write(ctx, items(("  Ship it  ", "pending")))
    assert out == "Todo list updated: 1 item (0 in progress, 1 pending, 0 completed)."
    assert listed(store) == [("Ship it", "pending")]


async def test_empty_list_clears(tmp_path: Path, store: AppStore, make_ctx) -> None:
    ctx = await make_ctx()
    await write(ctx, items(("a", "pending")))
    assert await write(ctx, []) == "Todo list cleared."
    assert listed(store) == [] and store.kv_get(f"todo:{SESSION}") is None


def test_invalid_status_rejected_by_parse() -> None:
    with pytest.raises(ToolArgumentError) as e:
        TodoWriteTool().parse({"todos": items(("a", "done"))})
    assert "todos.0.status" in str(e.value) and "in_progress" in str(e.value)


async def test_invalid_status_through_the_executor(tmp_path: Path, store: AppStore, make_ctx) -> None:
    ctx = await make_ctx()
    outcome = await ctx.executor.invoke(ToolCall("c1", "todo_write", {"todos": items(("a", "started"))}), ctx)
    assert outcome.status == "error" and "todos.0.status" in outcome.text
    assert listed(store) == []


async def test_two_in_progress_rejected(tmp_path: Path, store: AppStore, make_ctx) -> None:
    ctx = await make_ctx()
    await write(ctx, items(("keep", "pending")))
    with pytest.raises(ToolError, match=r"at most one todo item may be in_progress; items 1, 3 are"):
        await write(ctx, items(("a", "in_progress"), ("b", "pending"), ("c", "in_progress")))
    assert listed(store) == [("keep", "pending")]


async def test_item_count_limit(tmp_path: Path, store: AppStore, make_ctx) -> None:
    ctx = await make_ctx()
    full = items(*[(f"item {n}", "pending") for n in range(MAX_ITEMS)])
    assert await write(ctx, full) == "Todo list updated: 50 items (0 in progress, 50 pending, 0 completed)."
    with pytest.raises(ToolError, match=r"at most 50 items; got 51"):
        await write(ctx, full + items(("one more", "pending")))
    assert len(listed(store)) == MAX_ITEMS


@pytest.mark.parametrize("content,length", [("", 0), ("   ", 0), ("x" * (MAX_CONTENT_CHARS + 1), 501)])
async def test_content_length_limit(tmp_path: Path, store: AppStore, content: str, length: int, make_ctx) -> None:
    ctx = await make_ctx()
    with pytest.raises(ToolError, match=rf"todo item 2: content must be 1 to 500 characters; got {length}\."):
        await write(ctx, items(("fine", "pending"), (content, "pending")))
    assert listed(store) == []
    await write(ctx, items(("x" * MAX_CONTENT_CHARS, "pending")))
    assert listed(store) == [("x" * MAX_CONTENT_CHARS, "pending")]


@pytest.mark.parametrize("kind", ["subagent", "clock", "team_member"])
async def test_only_in_the_main_session(tmp_path: Path, store: AppStore, kind: str, make_ctx) -> None:
    with pytest.raises(ToolError, match="only available in the main session"):
        await write(await make_ctx(agent_kind=kind), items(("a", "pending")))
    assert listed(store) == []


def test_not_a_side_effect_tool() -> None:
    assert TodoWriteTool.side_effect is False and TodoWriteTool.changes_config is False


def test_reminder_only_when_unfinished_and_changed(store: AppStore) -> None:
    todos = TodoStore(store)
    assert todos.reminder(SESSION) is None  # no list
    todos.replace(SESSION, [TodoItem(content="Plan", status="completed"), TodoItem(content="Build", status="in_progress"),
                            TodoItem(content="Test", status="pending")])
    assert todos.reminder(SESSION) == (
        "<todo_reminder>\n"
        "Your todo list (keep it current with todo_write; mark items completed as soon as they are done):\n"
        "1. [completed] Plan\n2. [in_progress] Build\n3. [pending] Test\n"
        "</todo_reminder>"
    )
    assert todos.reminder(SESSION) is None  # unchanged: no repeat
    todos.replace(SESSION, todos.get(SESSION))  # identical list written again
    assert todos.reminder(SESSION) is None
    todos.replace(SESSION, [TodoItem(content="Plan", status="completed"), TodoItem(content="Build", status="completed"),
                            TodoItem(content="Test", status="in_progress")])
    again = todos.reminder(SESSION)
    assert again is not None and "2. [completed] Build\n3. [in_progress] Test" in again
    assert todos.reminder(SESSION) is None


def test_no_reminder_when_all_completed_and_hash_cleared(store: AppStore) -> None:
    todos = TodoStore(store)
    open_list = [TodoItem(content="a", status="pending")]
    todos.replace(SESSION, open_list)
    assert todos.reminder(SESSION) is not None
    todos.replace(SESSION, [TodoItem(content="a", status="completed")])
    assert todos.reminder(SESSION) is None
    todos.replace(SESSION, open_list)  # the same list as before reminds again
    assert todos.reminder(SESSION) is not None
    todos.replace(SESSION, [])
    assert todos.reminder(SESSION) is None
    todos.replace(SESSION, open_list)
    assert todos.reminder(SESSION) is not None


def test_sessions_are_separate(store: AppStore) -> None:
    todos = TodoStore(store)
    todos.replace(SESSION, [TodoItem(content="a", status="pending")])
    assert todos.get("private:7") == [] and todos.reminder("private:7") is None
    assert todos.reminder(SESSION) is not None


async def test_persists_across_a_new_store_on_the_same_file(tmp_path: Path, make_ctx) -> None:
    path = tmp_path / "data" / "ania.db"
    first = AppStore(path)
    await write(await make_ctx(), items(("a", "in_progress"), ("b", "pending")))
    assert TodoStore(first).reminder(SESSION) is not None
    first.close()
    second = AppStore(path)
    try:
        todos = TodoStore(second)
        assert [(i.content, i.status) for i in todos.get(SESSION)] == [("a", "in_progress"), ("b", "pending")]
        assert todos.reminder(SESSION) is None  # the reminder hash persisted too
        await write(await make_ctx(), items(("a", "completed"), ("b", "in_progress")))
        assert todos.reminder(SESSION) is not None
    finally:
        second.close()
