"""MCP tool definitions as Ania sees them: exposed names, OpenAI schemas (T2), argument checks, result text (M3).

An MCP tool `get_time` of server `clock` is exposed as `mcp__clock__get_time`. Its `inputSchema` goes
through the same `normalize()` as built-in tools (refs inlined, titles dropped, keys in a fixed order,
`required` sorted), then missing `type`/`properties` are filled in and enum values are spelled out in
the description. Results become text, cut to 8000 runes with a marker.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.validators import validator_for
from mcp import types

from core.errors import SchemaError
from core.schema import normalize

PREFIX = "mcp__"
MAX_NAME = 64  # OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$
MAX_RESULT_RUNES = 8000
#: A server's text goes into every later request once a tool is loaded: descriptions are capped,
#: and a tool whose parameters are still too large after that is not offered at all.
MAX_DESCRIPTION_RUNES = 1024
MAX_PARAM_DESCRIPTION_RUNES = 300
MAX_PARAMETERS_BYTES = 16_384
TRUNCATED = "\n…[truncated: the result had {total} characters; the first {shown} are shown]"
NO_OUTPUT = "(the tool returned no output)"
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def exposed_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`; characters a function name cannot hold become `_`, long names get a hash."""
    name = f"{PREFIX}{server}__{_BAD.sub('_', tool)}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(tool.encode(), usedforsecurity=False).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    return name


def split_name(name: str) -> tuple[str, str] | None:
    """`mcp__server__tool` → (server, tool part); None for anything else."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition("__")
    return (server, tool) if sep and server and tool else None


def one_line(description: str, limit: int = 120) -> str:
    for line in (description or "").splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return "(no description)"


@dataclass(frozen=True)
class RemoteDef:
    """One MCP tool as listed by its server (after the server's filter)."""

    server: str
    tool: str  # the server's own name for it
    name: str  # exposed name
    description: str
    parameters: dict[str, Any]  # OpenAI parameters object
    input_schema: dict[str, Any] = field(default_factory=dict, compare=False)
    read_only: bool = False

    @classmethod
    def from_mcp(cls, server: str, tool: types.Tool, name: str | None = None) -> RemoteDef:
        ann = tool.annotations
        return cls(
            server=server, tool=tool.name, name=name or exposed_name(server, tool.name),
            description=cap(inspect.cleandoc(tool.description or ""), MAX_DESCRIPTION_RUNES)
            or f"MCP tool {tool.name} of server {server}",
            parameters=_capped_descriptions(convert_schema(tool.inputSchema)),
            input_schema=dict(tool.inputSchema or {}),
            read_only=bool(ann and ann.readOnlyHint),
        )

    def to_json(self) -> dict[str, Any]:
        """For the store. The parameters are kept as JSON text: the store sorts keys, and the schema's
        key order is part of the bytes the provider caches."""
        return {"server": self.server, "tool": self.tool, "description": self.description,
                "parameters": json.dumps(self.parameters, ensure_ascii=False), "read_only": self.read_only}

    @classmethod
    def from_json(cls, name: str, d: dict[str, Any]) -> RemoteDef:
        params = d["parameters"]
        params = json.loads(params) if isinstance(params, str) else params
        return cls(server=d["server"], tool=d["tool"], name=name, description=d["description"],
                   parameters=params, input_schema=params, read_only=bool(d.get("read_only")))


def offerable(tool: types.Tool) -> str | None:
    """None when the client can call this tool, else why it is left out (logged by the caller)."""
    execution = getattr(tool, "execution", None)
    if execution is not None and getattr(execution, "taskSupport", None) == "required":
        return "it requires MCP task augmentation, which this client does not support"
    size = len(json.dumps(_capped_descriptions(convert_schema(tool.inputSchema)), ensure_ascii=False))
    if size > MAX_PARAMETERS_BYTES:
        return f"its parameter schema is {size} bytes (more than {MAX_PARAMETERS_BYTES})"
    return None


def cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _capped_descriptions(node: Any) -> Any:
    if isinstance(node, list):
        return [_capped_descriptions(x) for x in node]
    if not isinstance(node, dict):
        return node
    return {k: (cap(v, MAX_PARAM_DESCRIPTION_RUNES) if k == "description" and isinstance(v, str)
                else _capped_descriptions(v)) for k, v in node.items()}


def unique_names(server: str, tools: list[types.Tool]) -> dict[str, types.Tool]:
    """Exposed name → tool, with a hash suffix for the rare names that collide after sanitizing."""
    out: dict[str, types.Tool] = {}
    for tool in sorted(tools, key=lambda t: t.name):
        name = exposed_name(server, tool.name)
        if name in out:
            digest = hashlib.sha1(tool.name.encode(), usedforsecurity=False).hexdigest()[:8]
            name = f"{name[:MAX_NAME - 9]}_{digest}"
        out[name] = tool
    return out


# --- schemas (T2) -----------------------------------------------------------------------------

def convert_schema(raw: dict[str, Any] | None) -> dict[str, Any]:
    schema = {k: v for k, v in (raw or {}).items() if k != "$schema"}
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    try:
        out: dict[str, Any] = _fill(normalize(schema, defs))
    except SchemaError:  # a recursive schema keeps its local refs and $defs (providers resolve them)
        out = _fill(_untitled(schema))
        out["type"] = "object"
        out.setdefault("properties", {})
        return out
    out["type"] = "object"
    out.setdefault("properties", {})
    ordered: dict[str, Any] = normalize(out)
    return ordered  # no refs are left: this only puts the keys in the fixed order


def _untitled(node: Any) -> Any:
    if isinstance(node, list):
        return [_untitled(x) for x in node]
    if not isinstance(node, dict):
        return node
    return {k: (sorted(v) if k == "required" and isinstance(v, list) else
                {p: _untitled(s) for p, s in v.items()} if k in ("properties", "$defs") and isinstance(v, dict)
                else _untitled(v))
            for k, v in node.items() if k != "title"}


def _fill(node: Any) -> Any:
    if isinstance(node, list):
        return [_fill(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = {name: _fill(p) for name, p in v.items()}
        elif k in ("items", "anyOf", "oneOf", "allOf", "additionalProperties", "$defs"):
            out[k] = {n: _fill(s) for n, s in v.items()} if k == "$defs" and isinstance(v, dict) else _fill(v)
        else:
            out[k] = v
    if "type" not in out:
        _infer_type(out)
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out["properties"] = {}
    _note_enum(out)
    return out


def _infer_type(out: dict[str, Any]) -> None:
    """A `type` for a schema without one, from its enum, properties or items (when one of them tells)."""
    if isinstance(out.get("enum"), list) and out["enum"]:
        inferred = _enum_type(out["enum"])
        if inferred:
            out["type"] = inferred
    elif "properties" in out:
        out["type"] = "object"
    elif "items" in out:
        out["type"] = "array"


def _note_enum(out: dict[str, Any]) -> None:
    """An enum's values, also listed in its description ("One of: ...")."""
    enum = out.get("enum")
    if isinstance(enum, list) and enum:
        values = ", ".join(json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v for v in enum)
        note = f"One of: {values}."
        desc = str(out.get("description") or "").strip()
        if note not in desc:
            out["description"] = f"{desc} {note}".strip() if desc else note


def _enum_type(values: list[Any]) -> str | None:
    kinds = {("boolean" if isinstance(v, bool) else "integer" if isinstance(v, int)
              else "number" if isinstance(v, float) else "string" if isinstance(v, str) else "?") for v in values}
    if kinds == {"integer", "number"}:
        return "number"
    return kinds.pop() if len(kinds) == 1 and "?" not in kinds else None


# --- arguments ----------------------------------------------------------------------------------

def make_validator(schema: dict[str, Any]) -> Any | None:
    """A jsonschema validator for a tool's input schema, or None when the schema itself is invalid."""
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)


def arg_problems(validator: Any | None, args: Any) -> list[str]:
    """Every problem with `args`, in a stable order (path, then message)."""
    if not isinstance(args, dict):
        return [f"(arguments): expected a JSON object, got {type(args).__name__}"]
    if validator is None:
        return []
    errors = sorted(validator.iter_errors(args), key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}" for e in errors]


# --- results (M3) -------------------------------------------------------------------------------

def result_text(result: types.CallToolResult) -> str:
    parts = [_block_text(b) for b in result.content]
    text = "\n".join(p for p in parts if p)
    if not text and result.structuredContent is not None:
        text = json.dumps(result.structuredContent, ensure_ascii=False, sort_keys=True)
    return truncate(text or NO_OUTPUT)


def result_images(result: types.CallToolResult) -> list[str]:
    """The images of a result (base64), in order: the caller shows them to the model and keeps them
    sendable; the text keeps a placeholder for each."""
    return [b.data for b in result.content if isinstance(b, types.ImageContent) and b.data]


def truncate(text: str, limit: int = MAX_RESULT_RUNES) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED.format(total=len(text), shown=limit)


def _block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image {block.mimeType}, {len(block.data)} base64 characters]"
    if isinstance(block, types.AudioContent):
        return f"[audio {block.mimeType}, {len(block.data)} base64 characters]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return res.text
        return f"[resource {res.uri}, {res.mimeType or 'binary'}, {len(res.blob)} base64 characters]"
    return f"[{type(block).__name__}]"
