"""The checkpoint serializer's fast message loads (checkpoints/serde.py) give exactly LangGraph's values.

Real stored checkpoints, across copies and compactions, are compared in tests/test_checkpoint_replay.py
(its cold saver uses this serializer, as production does); here every message shape, the other stored
types, LangGraph's allowlist and damaged bytes are compared one by one.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.jsonplus import EXT_DELTA_SNAPSHOT, EXT_PYDANTIC_V2, JsonPlusSerializer
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Send
from pydantic import BaseModel

from checkpoints.serde import FAST_CLASSES, MessageSerializer


class Note(BaseModel):
    text: str
    tags: list[str] = []


@dataclass
class Point:
    x: int
    y: int


def messages() -> list[Any]:
    return [
        SystemMessage("You are Ania.", id="s1"),
        HumanMessage("hello", id="h1", name="alice"),
        HumanMessage([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:,"}}],
                     id="h2", additional_kwargs={"ania": {"user": "u1"}}),
        AIMessage("", id="a1", tool_calls=[{"name": "time", "args": {"timezone": "UTC"}, "id": "c1"}],
                  invalid_tool_calls=[{"name": "bash", "args": "{not json", "id": "c2", "error": "bad",
                                       "type": "invalid_tool_call"}],
                  usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
                  response_metadata={"model_name": "m", "finish_reason": "tool_calls"},
                  additional_kwargs={"refusal": None}),
        ToolMessage("12:00", tool_call_id="c1", id="t1", name="time", artifact={"raw": [1, 2, {"k": None}]},
                    response_metadata={"ania_status": "ok"}),
        ToolMessage("failed", tool_call_id="c3", id="t2", status="error", artifact=Note(text="n", tags=["a"])),
        AIMessage("done", id="a2"),
        RemoveMessage(id=REMOVE_ALL_MESSAGES),
        RemoveMessage(id="h1"),
        AIMessageChunk("a chunk", id="k1"),  # not a fast class: LangGraph's own path
    ]


def assert_same(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    assert ours == theirs
    if isinstance(theirs, BaseModel):
        assert ours.model_dump() == theirs.model_dump()
        assert ours.model_fields_set == theirs.model_fields_set


@pytest.mark.parametrize("value", [
    *messages(),
    messages(),
    {"messages": messages(), "turn": "u-1", "rounds": 3, "usage": {"total_tokens": 5}},
    [Send("model", {"messages": messages()[:2]}), datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC),
     {1, 2}, (1, "a"), Point(1, 2), Note(text="x")],
    None, b"bytes", "text", 3.5,
], ids=lambda v: type(v).__name__)
def test_every_shape_loads_as_langgraph_loads_it(value):
    stock, ours = JsonPlusSerializer(), MessageSerializer()
    stored = stock.dumps_typed(value)
    assert ours.dumps_typed(value) == stored  # the bytes written are LangGraph's
    loaded, expected = ours.loads_typed(stored), stock.loads_typed(stored)
    if isinstance(expected, list | tuple):
        assert len(loaded) == len(expected)
        for a, b in zip(loaded, expected, strict=True):
            assert_same(a, b)
    elif isinstance(expected, dict):
        assert loaded.keys() == expected.keys()
        for key in expected:
            if isinstance(expected[key], list):
                for a, b in zip(loaded[key], expected[key], strict=True):
                    assert_same(a, b)
            else:
                assert_same(loaded[key], expected[key])
    else:
        assert_same(loaded, expected)


def test_a_snapshot_copy_loads_as_langgraph_loads_it():
    stock, ours = JsonPlusSerializer(), MessageSerializer()
    blob = ormsgpack.packb(ormsgpack.Ext(EXT_DELTA_SNAPSHOT, stock.dumps_typed(messages())[1]))
    loaded, expected = ours.loads_typed(("msgpack", blob)), stock.loads_typed(("msgpack", blob))
    assert type(loaded) is type(expected)
    assert len(loaded.value) == len(expected.value)
    for a, b in zip(loaded.value, expected.value, strict=True):
        assert_same(a, b)


def test_the_allowlist_still_decides_for_other_types():
    """Strict mode: a class outside LangGraph's allowlist comes back as its fields, as LangGraph does it."""
    stock = JsonPlusSerializer(allowed_msgpack_modules=None)
    ours = MessageSerializer(allowed_msgpack_modules=None)
    stored = stock.dumps_typed([Note(text="x"), HumanMessage("hi", id="h")])
    loaded, expected = ours.loads_typed(stored), stock.loads_typed(stored)
    assert loaded == expected
    assert loaded[0] == {"text": "x", "tags": []}
    assert isinstance(loaded[1], HumanMessage)


@pytest.mark.parametrize("ext", [
    ormsgpack.Ext(EXT_PYDANTIC_V2, ormsgpack.packb("not a tuple")),
    ormsgpack.Ext(EXT_PYDANTIC_V2, ormsgpack.packb(["langchain_core.messages.human", "HumanMessage", "no fields"])),
    ormsgpack.Ext(EXT_PYDANTIC_V2, ormsgpack.packb(["langchain_core.messages.human", "HumanMessage", {"x": 1}])),
    ormsgpack.Ext(EXT_PYDANTIC_V2, ormsgpack.packb(["collections", "OrderedDict", {"a": 1}])),
    ormsgpack.Ext(99, b"\x00"),
], ids=["shape", "fields", "missing-content", "foreign-class", "unknown-code"])
def test_damaged_or_hostile_bytes_load_as_langgraph_loads_them(ext):
    stock, ours = JsonPlusSerializer(), MessageSerializer()
    blob = ormsgpack.packb([ext])
    expected = stock.loads_typed(("msgpack", blob))
    loaded = ours.loads_typed(("msgpack", blob))
    assert type(loaded[0]) is type(expected[0])
    if not isinstance(expected[0], BaseModel):
        assert loaded == expected


@pytest.mark.parametrize("message", [m for m in messages() if (type(m).__module__, type(m).__name__) in FAST_CLASSES],
                         ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("shape", ["whole", "fields-missing", "extra-key"])
def test_construct_builds_what_model_construct_builds(message, shape):
    """Field by field, in order, with the fields set, extras and private state of `model_construct`; a
    default made by a factory is a new object per message (never shared between two)."""
    values = message.model_dump()
    if shape == "fields-missing":  # an older dump without some optional fields
        for key in ("additional_kwargs", "response_metadata", "name", "tool_calls", "artifact"):
            values.pop(key, None)
    elif shape == "extra-key":
        values["from_a_newer_version"] = {"x": 1}
    build = FAST_CLASSES[(type(message).__module__, type(message).__name__)]
    assert build.plain
    ours, expected = build(dict(values)), type(message).model_construct(**dict(values))
    assert type(ours) is type(expected)
    assert list(ours.__dict__.items()) == list(expected.__dict__.items())
    assert ours.model_fields_set == expected.model_fields_set
    assert ours.__pydantic_extra__ == expected.__pydantic_extra__
    assert ours.__pydantic_private__ == expected.__pydantic_private__
    assert ours == expected and ours.model_dump() == expected.model_dump()
    again = build(dict(values))
    for key, value in ours.__dict__.items():
        if isinstance(value, dict | list) and key not in values:
            assert value is not again.__dict__[key], key
