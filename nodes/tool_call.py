"""The tool-call step of the agent loop: one call through the gate graph, in its own concurrent branch.

A call that may wait for an approval (nodes/gates.py `may_pause`) runs the gate graph on the thread's
checkpointer with durability "exit": it is stored only when it pauses, so it can resume there. Any
other call runs the same graph compiled without a checkpointer: there is nothing to resume, and
storing its steps would only cost time.

That second call passes `durability` explicitly, the public way to override the run's inherited "sync":
with no checkpointer, LangGraph 1.2 still honours an inherited "sync" and fails waiting for a write
(`_put_checkpoint_fut`). An explicit value avoids that but makes LangGraph warn that it has no effect; that
one warning, and only it, is silenced here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from nodes.context import ContextFactory, resolve
from nodes.gates import may_pause
from nodes.state import GateInput

warnings.filterwarnings("ignore", message="`durability` has no effect when no checkpointer is present")


def tool_call_node(pausable: CompiledStateGraph[Any, Any, Any, Any], straight: CompiledStateGraph[Any, Any, Any, Any],
                   context_factory: ContextFactory | None) -> Callable[..., Any]:
    """The node for `Send(tool_call, {"call": ...})`; `pausable` has the checkpointer, `straight` none."""

    async def tool_call(state: GateInput, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        ctx = await resolve(runtime, config, context_factory)
        if await may_pause(state["call"], ctx):
            return await pausable.ainvoke(state, config, durability="exit")
        return await straight.ainvoke(state, config, durability="exit")

    return tool_call
