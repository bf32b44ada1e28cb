"""Faults the scripted model can answer with beyond `Fail` and `Stall`: any raw HTTP answer, such as a 429 with
`Retry-After` or a body that is not JSON. Kept apart from `script.py` (the vocabulary of script files): these
are for harnesses that build their steps in code (bench/soak).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Raw:
    """Answer exactly these bytes with this status and these headers."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "application/json"


def rate_limited(retry_after_sec: int = 1) -> Raw:
    """A 429 with `Retry-After`, as a provider sends when a key is over its rate."""
    body = b'{"error": {"message": "rate limited (scripted)", "type": "rate_limit_error"}}'
    return Raw(429, body, {"Retry-After": str(retry_after_sec)})


def malformed() -> Raw:
    """A 200 whose body is cut in the middle of its JSON."""
    return Raw(200, b'{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0, "mess')
