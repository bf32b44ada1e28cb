"""How a node gets its run context.

Nodes are plain `async def node(state, ctx)`. Graph builders adapt them to LangGraph's signature with
`bind_context`: the chat runtime passes a `RunContext` as `context=`; LangGraph Studio passes none
(or a JSON dict), so a Studio graph is built with a factory that makes one from the run's config.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from core.errors import MissingContext
from services.context import RunContext

ContextFactory = Callable[[RunnableConfig], Awaitable[RunContext]]
NodeFn = Callable[[Any, RunContext], Awaitable[Any]]


async def resolve(runtime: Runtime[Any], config: RunnableConfig, factory: ContextFactory | None) -> RunContext:
    ctx = runtime.context
    if isinstance(ctx, RunContext):
        return ctx
    if factory is None:
        raise MissingContext("run the graph with context=RunContext(...) or build it with a context factory")
    return await factory(config)


def bind_context(fn: NodeFn, factory: ContextFactory | None) -> Callable[..., Awaitable[Any]]:
    async def node(state: Any, runtime: Runtime[Any], config: RunnableConfig) -> Any:
        return await fn(state, await resolve(runtime, config, factory))

    # Not functools.wraps: LangGraph reads the signature, and __wrapped__ would expose `ctx`.
    node.__name__ = node.__qualname__ = fn.__name__
    node.__doc__ = fn.__doc__
    return node
