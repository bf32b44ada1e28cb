"""Schema generation from pydantic params models (T1, T3)."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from core.schema import function_schema, normalize, params_schema


class Color(StrEnum):
    red = "red"
    blue = "blue"


class Point(BaseModel):
    x: float = Field(description="X coordinate")
    y: float = Field(0.0, description="Y coordinate")


class Params(BaseModel):
    zeta: str = Field(description="Required text")
    alpha: int | None = Field(None, description="Optional number")
    color: Color = Field(description="A color")
    mode: Literal["fast", "slow"] = Field("fast", description="Speed")
    points: list[Point] = Field(description="Points to draw")
    origin: Point | None = Field(None, description="Where to start")
    tags: list[str] = Field(default_factory=list, description="Labels")


def test_required_are_fields_without_default_sorted():
    s = params_schema(Params)
    assert s["type"] == "object"
    assert s["required"] == ["color", "points", "zeta"]


def test_descriptions_from_fields_and_no_titles_or_refs():
    s = params_schema(Params)
    text = json.dumps(s)
    assert "title" not in text and "$ref" not in text and "$defs" not in text and "anyOf" not in text
    assert s["properties"]["zeta"] == {"type": "string", "description": "Required text"}
    assert s["properties"]["alpha"] == {"type": "integer", "description": "Optional number"}


def test_enums_and_literals():
    p = params_schema(Params)["properties"]
    assert p["color"]["enum"] == ["red", "blue"] and p["color"]["type"] == "string"
    assert p["color"]["description"] == "A color"
    assert p["mode"]["enum"] == ["fast", "slow"] and p["mode"]["default"] == "fast"


def test_nested_models_and_lists_recurse():
    p = params_schema(Params)["properties"]
    assert p["points"]["type"] == "array"
    item = p["points"]["items"]
    assert item["type"] == "object" and item["required"] == ["x"]
    assert item["properties"]["x"] == {"type": "number", "description": "X coordinate"}
    assert p["origin"]["type"] == "object" and p["origin"]["description"] == "Where to start"
    assert p["tags"] == {"type": "array", "description": "Labels", "items": {"type": "string"}}


def test_stable_key_order_and_bytes():
    a = json.dumps(function_schema("t", "d", params_schema(Params)))
    b = json.dumps(function_schema("t", "d", params_schema(Params)))
    assert a == b
    s = params_schema(Params)["properties"]["points"]
    assert list(s) == ["type", "description", "items"]


def test_normalize_orders_keys_and_sorts_required():
    raw = {"required": ["b", "a"], "properties": {"b": {"title": "B", "type": "string"}}, "type": "object"}
    assert normalize(raw) == {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["a", "b"]}
    assert list(normalize(raw)) == ["type", "properties", "required"]
