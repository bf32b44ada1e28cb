"""What the editing pages share (scheduled tasks, teams, skills, hooks, MCP servers, commands and persona):
a JSON body read into a model, a service's refusal turned into an answer, and paging of a plain list.

The pages act as the operator, like the `ania` command line: they call the same services the chat's tools
call, so every rule (names, limits, install checks, file validation) is the service's, never a copy. A
refusal (ToolError, ConfigError, a body that does not fit) is `{"error": ...}` with the service's own
sentence: 400, or 404 / 409 where the panel says so. No traceback reaches the page.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ania.panel.context import panel_context
from ania.panel.oplog import ACTOR
from ania.panel.render import api_error, json_body, page_args, paged
from core.errors import ConfigError, ToolError

Model = TypeVar("Model", bound=BaseModel)
Endpoint = Callable[[Request], Awaitable[Response]]


class Refused(Exception):
    """Input the panel refuses itself (a field that does not fit, a name that is not there); `status` is the
    HTTP status. Nothing was changed."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def body(request: Request, model: type[Model]) -> Model:
    """The request's JSON object as `model`; unknown fields are refused (the models say `extra="forbid"`)."""
    data = await json_body(request)
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


def paged_list(request: Request, items: Sequence[dict[str, Any]], **extra: Any) -> JSONResponse:
    """One page of `items` (`?page=&size=`) as `{"items", "total", "page", "size"}`, plus `extra`."""
    page, size = page_args(request)
    start = (page - 1) * size
    return JSONResponse({**paged(items[start:start + size], len(items), page, size), **extra})


def int_param(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise Refused(f"{what} must be a whole number, not {value[:40]!r}") from None


class FileBody(BaseModel):
    """A whole config file, as the page's editor holds it."""

    model_config = ConfigDict(extra="forbid")

    content: str


def file_answer(request: Request, name: str, **extra: Any) -> JSONResponse:
    """A config file (hooks.json, commands.json, prompt.json) as saved, for its editor; "" when not there yet."""
    text = panel_context(request).services.config.raw_file(name)
    return JSONResponse({"content": text or "", "exists": text is not None, **extra})


async def save_file(request: Request, name: str) -> JSONResponse:
    """Save a whole config file through the config editor: validated by the code that reads it (refused and the
    old one kept when it does not validate), written atomically, an operation-log row with the actor `panel`."""
    args = await body(request, FileBody)
    config = panel_context(request).services.config
    return JSONResponse({"message": await config.write_file(name, args.content, session="", actor=ACTOR,
                                                            approved_by="")})
