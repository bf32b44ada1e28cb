"""The three error families (layer 0), and which code raises which.

- `ToolError`: a failure the model should read and can act on. It becomes the tool call's result and the
  loop goes on (bad arguments, an MCP server that is down, a refused bash line).
- `RunError`: the run cannot go on as asked. The turn ends with a clear reply, or at start the CLI prints
  one line and exits 2 (`ConfigError`: a missing or invalid setting, a broken config file).
- `DeveloperError`: misuse of the code (a params model that cannot become a schema, a graph run without a
  run context). It is a bug: it fails loudly, at start where possible.
"""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model reads as the tool's result."""


class ToolArgumentError(ToolError):
    """The model's arguments do not fit the tool's parameters."""


class RunError(Exception):
    """The run stops here; the message is what the person reads."""


class ConfigError(RunError):
    """A missing or invalid setting or config file: one line naming the key (and its env variable) or file."""


class DeveloperError(Exception):
    """A bug in how the code is used, not a runtime condition."""


class SchemaError(DeveloperError):
    """A params model or schema that cannot become a provider schema."""


class MissingContext(DeveloperError):
    """A graph was run without a run context and without a context factory."""
