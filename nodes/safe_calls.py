"""What the model says is checked before it enters the state, so no value in it can break a turn or a session.

The checkpoint stores the state with msgpack, and every later turn sends the history back to the provider
as JSON. Some values a model can produce survive neither: an integer beyond 64 bits (msgpack refuses the
whole message: "Type is not msgpack serializable: AIMessage"), a lone surrogate (UTF-8 cannot carry it:
the session's every later turn failed), NaN and Infinity (not JSON), nesting deep enough to overflow a
recursive encoder, and arguments large enough to swamp the store. A tool call carrying one becomes an
invalid call whose result says which argument and why (`UNUSABLE`): it never runs, and the round's other
calls go on. A lone surrogate in the model's text, or in a tool's result, becomes U+FFFD.
"""

from __future__ import annotations

import json
import math
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import invalid_tool_call

from services.unicode_safe import SURROGATE, escaped, has_surrogate, scrub

#: Marks an invalid call made here (a provider's own invalid calls carry another error text).
MARK = "ania-unusable-arguments: "
UNUSABLE = 'Error: the arguments of "{tool}" cannot be used: {why}. Call it again with other values.'
#: No tool's arguments nest deeper; a recursive encoder (msgpack, json) is far from its limit here.
MAX_DEPTH = 32
#: The arguments of one call, as JSON characters (a model's whole answer is rarely a tenth of this).
MAX_ARGS_CHARS = 1_000_000
#: What msgpack stores: signed and unsigned 64-bit integers.
INT_RANGE = (-(2**63), 2**64 - 1)


def safe_reply(reply: AIMessage) -> AIMessage:
    """`reply` with every unusable tool call made invalid (see the module doc) and lone surrogates replaced
    in its text; the same object when there was nothing to change."""
    good, bad = [], []
    for call in reply.tool_calls:
        why = unusable(call.get("args") or {})
        if why is None and not has_surrogate(f"{call.get('name')}{call.get('id')}"):
            good.append(call)
        else:
            bad.append(invalid_tool_call(
                name=scrub(str(call.get("name") or "")), id=scrub(str(call.get("id") or "")),
                args=_shown(call.get("args")), error=MARK + (why or "a lone surrogate in the tool's name or id")))
    invalid = [scrub(dict(c)) for c in reply.invalid_tool_calls]
    content, extra = scrub(reply.content), scrub(reply.additional_kwargs)
    if not bad and invalid == reply.invalid_tool_calls and content == reply.content \
            and extra == reply.additional_kwargs:
        return reply
    return reply.model_copy(update={"content": content, "additional_kwargs": extra, "tool_calls": good,
                                    "invalid_tool_calls": [*invalid, *bad]})


def unusable_error(call_name: str, args_error: str | None) -> str | None:
    """The tool result for a call `safe_reply` made invalid, else None (a provider's invalid JSON)."""
    if args_error is None or not args_error.startswith(MARK):
        return None
    return UNUSABLE.format(tool=call_name, why=args_error[len(MARK):])


def unusable(args: dict[str, Any]) -> str | None:
    """Why these arguments cannot be stored and sent back, or None."""
    why = _problem(args, "", 0)
    if why is not None:
        return why
    size = len(json.dumps(args, ensure_ascii=False))
    return f"the arguments are {size} characters long (at most {MAX_ARGS_CHARS})" if size > MAX_ARGS_CHARS else None


def _problem(value: Any, path: str, depth: int) -> str | None:
    where = f'argument "{path}": ' if path else ""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if INT_RANGE[0] <= value <= INT_RANGE[1] else f"{where}integer too large (beyond 64 bits)"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where}not a finite number"
    if isinstance(value, str):
        if (m := SURROGATE.search(value)) is not None:
            return f"{where}text with a lone surrogate (\\u{ord(m.group()):04x}), not valid Unicode"
        return None
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        top = path.split("[", 1)[0].split(".", 1)[0]  # the argument it is in: the full path is as deep
        where = f'argument "{top}": ' if top else ""
        return f"{where}nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, dict):
        return _dict_problem(value, path, depth)
    if isinstance(value, list | tuple):
        return _list_problem(value, path, depth)
    return f"{where}a value of type {type(value).__name__}"


def _dict_problem(value: dict[Any, Any], path: str, depth: int) -> str | None:
    for key, item in value.items():
        sub = f"{path}.{escaped(str(key))}" if path else escaped(str(key))
        if has_surrogate(str(key)):
            return f'argument "{sub}": text with a lone surrogate ({escaped(str(key))}), not valid Unicode'
        if (why := _problem(item, sub, depth + 1)) is not None:
            return why
    return None


def _list_problem(value: list[Any] | tuple[Any, ...], path: str, depth: int) -> str | None:
    for n, item in enumerate(value):
        if (why := _problem(item, f"{path}[{n}]", depth + 1)) is not None:
            return why
    return None


def _shown(args: Any) -> str:
    """The arguments as stored with the invalid call: short, storable JSON-like text (never sent to a tool)."""
    try:
        text = json.dumps(args, ensure_ascii=True, allow_nan=True)
    except (ValueError, RecursionError):
        text = "(unusable arguments)"
    return text if len(text) <= 2000 else text[:2000] + "…(cut)"
