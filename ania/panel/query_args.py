"""The data pages' query-string arguments: a text of bounded length, or a time as people type it
(ania/when.py); a bad one is BadInput (400) naming the argument."""

from __future__ import annotations

from starlette.requests import Request

from ania.panel.render import BadInput
from ania.when import parse_when

MAX_ARG = 300


def text_arg(request: Request, name: str, limit: int = MAX_ARG) -> str | None:
    """The argument stripped; None when absent or empty."""
    value = request.query_params.get(name, "").strip()
    if len(value) > limit:
        raise BadInput(f"{name} is longer than {limit} characters")
    return value or None


def time_arg(request: Request, name: str) -> float | None:
    """A duration back from now (`2h`) or a date/time (`2026-11-30T14:00`) as a timestamp."""
    value = text_arg(request, name)
    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError as e:
        raise BadInput(f"{name}: {e}") from None
