"""LangGraph's checkpoint serializer with a fast way back to chat messages; the stored bytes are unchanged.

Reading a long history is mostly rebuilding its messages: LangGraph's msgpack hook builds each one with
the class's validating constructor (`AIMessage(**fields)`), which costs about twice the decoding itself.
The fields were dumped from a message that was validated when it was made, so validating them again
changes nothing: `MessageSerializer` builds the core message classes the way pydantic's `model_construct`
does, with the per-field decisions taken once per class (`Construct`: 1.9 µs a message against 3.3 for
`model_construct` and 5.7 for the validating constructor), and leaves every other stored type to
LangGraph's own hook, with its allowlist. What is written is exactly LangGraph's format, so any saver (or
an older Ania) reads it. tests/test_checkpoint_serde.py checks that both ways give equal values, and that
`Construct` builds what `model_construct` builds (fields, their order, the fields set, extras, defaults).
"""

from __future__ import annotations

from typing import Any

import ormsgpack
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import EXT_DELTA_SNAPSHOT, EXT_PYDANTIC_V2, JsonPlusSerializer
from pydantic import BaseModel

_OPTION = ormsgpack.OPT_NON_STR_KEYS
_set = object.__setattr__


class Construct:
    """`cls.model_construct(**values)` for a model class without aliases, a post-init hook or a root: the
    same loop over the fields, minus the checks that cannot apply to this class (kept for any other)."""

    def __init__(self, cls: type[BaseModel]) -> None:
        self.cls = cls
        self.fields = cls.__pydantic_fields__
        self.names = tuple(self.fields)
        self.extra = cls.model_config.get("extra") == "allow"
        self.plain = not (cls.__pydantic_post_init__ or cls.__pydantic_root_model__ or any(
            f.alias is not None or f.validation_alias is not None for f in self.fields.values()))

    def __call__(self, values: dict[str, Any]) -> Any:
        """Builds from `values` (a dict this call may consume)."""
        if not self.plain:
            return self.cls.model_construct(**values)
        fields: dict[str, Any] = {}
        given = set()
        for name in self.names:
            if name in values:
                fields[name] = values.pop(name)
                given.add(name)
            else:
                field = self.fields[name]
                if not field.is_required():
                    fields[name] = field.get_default(call_default_factory=True, validated_data=fields)
        model = self.cls.__new__(self.cls)
        _set(model, "__dict__", fields)
        _set(model, "__pydantic_fields_set__", given)
        _set(model, "__pydantic_extra__", values if self.extra else None)
        _set(model, "__pydantic_private__", None)
        return model


#: The classes rebuilt without validation, by the (module, name) their dump carries.
FAST_CLASSES: dict[tuple[str, str], Construct] = {
    (cls.__module__, cls.__name__): Construct(cls)
    for cls in (AIMessage, HumanMessage, SystemMessage, ToolMessage, RemoveMessage)
}


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
            build = FAST_CLASSES.get((fields[0], fields[1])) if isinstance(fields, list | tuple) else None
            if build is not None and isinstance(fields[2], dict):
                return build(fields[2])
        elif code == EXT_DELTA_SNAPSHOT:
            return self._snapshot(ormsgpack.unpackb(data, ext_hook=self._ext_hook, option=_OPTION))
        # Anything else, exactly as LangGraph reads it (allowlist, fallbacks and all).
        return super().loads_typed(("msgpack", ormsgpack.packb(ormsgpack.Ext(code, data))))
