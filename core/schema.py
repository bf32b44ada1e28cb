"""OpenAI function schemas generated from pydantic params models, never written by hand (T1, T3).

Pydantic's JSON schema is close but not what a provider should see: it has `$ref`/`$defs` for
nested models and enums, `title` on every node and `anyOf: [X, null]` for optionals. We inline
references, strip titles, collapse optionals to `X`, and emit keys in one fixed order so the
bytes of the tools array never change between turns.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from core.errors import SchemaError

# Keys come out in this order; anything else follows, sorted.
_KEY_ORDER = (
    "type", "description", "enum", "const", "format", "items", "properties", "required",
    "additionalProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "pattern", "default",
)
_DROP = {"title", "$defs", "definitions", "discriminator"}


def params_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The `parameters` object of a function schema for a pydantic model."""
    raw = model.model_json_schema()
    defs = raw.get("$defs", {})
    out: dict[str, Any] = normalize(raw, defs)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def normalize(node: Any, defs: dict[str, Any] | None = None, _seen: tuple[str, ...] = ()) -> Any:
    """Inline refs, drop titles, collapse nullable unions, order keys. Also used for MCP schemas."""
    defs = defs or {}
    if isinstance(node, list):
        return [normalize(x, defs, _seen) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in _seen:
            raise SchemaError(f"recursive schema reference {name!r} cannot be inlined")
        target = dict(defs.get(name, {}))
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return normalize({**target, **extra}, defs, (*_seen, name))
    node = _collapse_nullable(node)
    if "$ref" in node:
        return normalize(node, defs, _seen)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties" and isinstance(value, dict):
            result[key] = {k: normalize(v, defs, _seen) for k, v in value.items()}
        elif key == "required" and isinstance(value, list):
            result[key] = sorted(value)
        else:
            result[key] = normalize(value, defs, _seen)
    return _ordered(result)


def _collapse_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {"type": "null"}]` becomes X (with the outer description/default kept)."""
    variants = node.get("anyOf")
    if not isinstance(variants, list):
        return node
    non_null = [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")]
    if len(non_null) != 1 or len(non_null) == len(variants):
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    out = dict(non_null[0])
    out.update(merged)
    if out.get("default", 0) is None:
        out.pop("default")
    return out


def _ordered(d: dict[str, Any]) -> dict[str, Any]:
    known = [k for k in _KEY_ORDER if k in d]
    rest = sorted(k for k in d if k not in _KEY_ORDER)
    return {k: d[k] for k in known + rest}


def function_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The tools-array entry sent to an OpenAI-compatible endpoint."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }
