"""LangGraph's checkpoint serializer with a fast way back to chat messages; the stored bytes are unchanged.

Reading a long history is mostly rebuilding its messages: LangGraph's msgpack hook builds each one with
the class's validating constructor (`AIMessage(**fields)`), which costs about twice the decoding itself.
The fields were dumped from a message that was validated when it was made, so validating them again
changes nothing: `MessageSerializer` builds the core message classes with pydantic's `model_construct`
(about 40% less time per message) and leaves every other stored type to LangGraph's own hook, with its
allowlist. What is written is exactly LangGraph's format, so any saver (or an older Ania) reads it.
tests/test_checkpoint_serde.py checks that both ways give equal values on real checkpoints and writes.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import EXT_DELTA_SNAPSHOT, EXT_PYDANTIC_V2, JsonPlusSerializer

#: The classes rebuilt without validation, by the (module, name) their dump carries.
FAST_CLASSES: dict[tuple[str, str], Any] = {
    (cls.__module__, cls.__name__): cls for cls in (AIMessage, HumanMessage, SystemMessage, ToolMessage, RemoveMessage)
}
_OPTION = ormsgpack.OPT_NON_STR_KEYS


class MessageSerializer(JsonPlusSerializer):
    """`JsonPlusSerializer` whose msgpack loads rebuild core messages without validating them again."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The snapshot wrapper's type, as LangGraph's own loader builds it (its class is private there).
        self._snapshot = type(super().loads_typed(("msgpack", ormsgpack.packb(
            ormsgpack.Ext(EXT_DELTA_SNAPSHOT, ormsgpack.packb(None))))))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        if data[0] != "msgpack":
            return super().loads_typed(data)
        return ormsgpack.unpackb(data[1], ext_hook=self._ext_hook, option=_OPTION)

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == EXT_PYDANTIC_V2:
            fields = ormsgpack.unpackb(data, ext_hook=self._ext_hook, option=_OPTION)
            cls = FAST_CLASSES.get((fields[0], fields[1])) if isinstance(fields, list | tuple) else None
            if cls is not None and isinstance(fields[2], dict):
                return cls.model_construct(**fields[2])
        elif code == EXT_DELTA_SNAPSHOT:
            return self._snapshot(ormsgpack.unpackb(data, ext_hook=self._ext_hook, option=_OPTION))
        # Anything else, exactly as LangGraph reads it (allowlist, fallbacks and all).
        return super().loads_typed(("msgpack", ormsgpack.packb(ormsgpack.Ext(code, data))))
