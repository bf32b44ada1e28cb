"""Lone surrogates: code points a Python string can hold but UTF-8 cannot carry (issue 22, item 11).

A JSON text may spell one (`"\\ud800"`), so a model's answer, an MCP server's result or a member's
message can bring one in; stored or sent on as it is, it fails every later encode (the session's history,
the model request). `scrub` replaces each with U+FFFD where text is kept.
"""

from __future__ import annotations

import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    return SURROGATE.search(text) is not None


def scrub(value: Any) -> Any:
    """Strings with every lone surrogate replaced by U+FFFD, through dicts and lists (other values as they are)."""
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value) if has_surrogate(value) else value
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def escaped(text: str, limit: int = 40) -> str:
    """`text` for a message: each lone surrogate as its `\\uXXXX` escape, cut at `limit` characters."""
    shown = SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
