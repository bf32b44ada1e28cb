"""What the editing pages share (scheduled tasks, teams, skills, hooks, MCP servers, commands and persona):
one way to read a JSON body, one way to turn a service's refusal into a 400, and paging of a plain list.

The pages act as the operator, like the `ania` command line: they call the same services the chat's tools
call, so every rule (names, limits, install checks, file validation) is the service's, never a copy. A
refusal (ToolError, ConfigError, a body that does not fit) is a 400 with the service's own sentence; no
traceback reaches the page.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ania.panel.render import api_error, page_args
from core.errors import ConfigError, ToolError

log = logging.getLogger(__name__)

#: Who the operation log names for a change made from the panel.
ACTOR = "panel"
Model = TypeVar("Model", bound=BaseModel)
Endpoint = Callable[[Request], Awaitable[Response]]


class Refused(Exception):
    """Input the panel itself refuses (not JSON, an unknown field); `status` is the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def body(request: Request, model: type[Model]) -> Model:
    """The request's JSON body as `model` (unknown fields are refused by the model's `extra="forbid"`)."""
    try:
        data = await request.json()
    except ValueError:
        raise Refused("the body is not JSON") from None
    if not isinstance(data, dict):
        raise Refused("the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(body)"
        raise Refused(f"{where}: {err['msg']}") from None


def refusals(endpoint: Endpoint) -> Endpoint:
    """Wrap an API endpoint: a refusal of the panel or of a service becomes `{"error": ...}` with its status."""

    @functools.wraps(endpoint)
    async def wrapped(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Refused as e:
            return api_error(e.status, str(e))
        except (ToolError, ConfigError) as e:
            return api_error(400, str(e))

    return wrapped


def paged(request: Request, items: Sequence[dict[str, Any]], **extra: Any) -> JSONResponse:
    """One page of `items` as `{"items", "total", "page", "size"}` (plus `extra`)."""
    page, size = page_args(request)
    start = (page - 1) * size
    return JSONResponse({"items": list(items[start:start + size]), "total": len(items), "page": page, "size": size,
                         **extra})


def int_param(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise Refused(f"{what} must be a number, not {value[:40]!r}") from None
