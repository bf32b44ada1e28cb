"""The tool abstraction (T1): a name, a description, a pydantic params model and an async execute.

Errors (core/errors.py): `ToolError` is told to the model as the tool's result; anything else a tool
raises is also caught by the registry and reported as an error result; `SchemaError` is developer misuse
and fails at start.

The base is generic over its parameters and over the run context it needs: the built-in tools are
`Tool[Params, RunContext]` (`services.context.RunContext`, a layer up with the services it carries); the
bottom layer knows the context only as the `ToolContext` protocol (core/context.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any, ClassVar, Generic, TypeAlias, cast

from pydantic import BaseModel, ValidationError
from typing_extensions import TypeVar  # a default for C (PEP 696) before Python 3.13

from core.context import ToolContext
from core.errors import ToolArgumentError
from core.schema import function_schema, params_schema

P = TypeVar("P", bound=BaseModel)
#: The run context a tool needs; the registry passes it through untouched. `Tool[Params]` is a tool over the
#: bare protocol (a test's tool); the built-ins name theirs: `Tool[Params, RunContext]`.
C = TypeVar("C", bound=ToolContext, default=ToolContext)


class NoParams(BaseModel):
    """For tools without parameters."""


class Tool(ABC, Generic[P, C]):
    """Subclasses set `name`, `description`, `params` and implement `execute`."""

    # Class attributes for built-ins; a tool made at run time (an MCP tool) sets them per instance.
    name: str
    description: str
    params: ClassVar[type[BaseModel]] = NoParams
    #: Plan mode blocks side-effect tools (G2).
    side_effect: bool = False
    #: Configuration changes always need an admin other than the requester (G3).
    changes_config: bool = False

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The tools-array entry; computed once, so its bytes never change."""
        return function_schema(self.name, self.description, self.parameters())

    def parameters(self) -> dict[str, Any]:
        return params_schema(self.params)

    def parse(self, raw: dict[str, Any]) -> P:
        """Validate the model's arguments; every problem is reported at once, in a stable order."""
        try:
            return cast(P, self.params.model_validate(raw))  # `params` is the model P stands for
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
                for err in e.errors(include_url=False)
            )
            raise ToolArgumentError(problems) from None

    def has_side_effect(self, args: P, ctx: C) -> bool:
        """Whether plan mode blocks this call; a proxy tool (mcp_call) decides per target."""
        return self.side_effect

    def shown_args(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The arguments as an approval prompt and the operation log show them; a tool that takes
        secrets (config_set of a sensitive key) masks them here."""
        return raw

    def approval_reason(self, args: P, ctx: C) -> str | None:
        """Why this particular call needs a human's approval, or None. bash overrides this (G6)."""
        return None

    @abstractmethod
    async def execute(self, args: P, ctx: C) -> str:
        """Run the call and return the text the model reads."""


#: A tool of any parameters and context, as the tables hold them.
AnyTool: TypeAlias = Tool[Any, Any]
