"""Skills (`/skills`): the skills and what did not load; upload (a zip archive or a SKILL.md), install from
a URL or SKILL.md text, remove, reload.

Installing is the skill installer's (services/skills/install.py), the same code `skill_install` runs: an
upload meets the download's size cap (skills.max_download_mb) and every archive check (zip-slip, links,
entry count, unpacked size) before anything is visible. The installer writes the operation-log row
(`skill_manage`) with the actor `panel`, failed attempts too.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.editing import Refused, paged_list, refusals
from ania.panel.oplog import ACTOR
from ania.panel.render import render
from services.skills import Skill, SkillRegistry

CHUNK = 1 << 16
#: What a multipart body may carry besides the file itself (boundaries, headers, a source field).
FORM_SLACK = 64 * 1024


def skill_dict(skill: Skill) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "origin": skill.origin,
            "files": SkillRegistry.files(skill)}


async def page(request: Request) -> HTMLResponse:
    return render(request, "skills.html", {"title_key": "skills.title"})


@refusals
async def list_skills(request: Request) -> Response:
    current = panel_context(request).engine.services.skills.current
    return paged_list(request, [skill_dict(s) for s in current.skills.values()], problems=list(current.problems))


async def _upload(upload: UploadFile, cap: int) -> bytes:
    """The upload's bytes, reading no more than one byte past the cap (the installer refuses it then)."""
    data = bytearray()
    while len(data) <= cap and (chunk := await upload.read(CHUNK)):
        data += chunk
    return bytes(data)


@refusals
async def install(request: Request) -> Response:
    """multipart: `file` (a zip archive or a SKILL.md), or `source` (a URL or SKILL.md text, as skill_install)."""
    services = panel_context(request).engine.services
    installer = services.skill_installer
    cap = int(services.settings.skills.max_download_mb * 2**20)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap + FORM_SLACK:  # refused before it is spooled to disk
        raise Refused(f"the upload is larger than {services.settings.skills.max_download_mb:g} MB "
                      "(skills.max_download_mb)", 413)
    async with request.form(max_files=1, max_fields=4) as form:
        upload, source = form.get("file"), form.get("source")
        if isinstance(upload, UploadFile):
            data = await _upload(upload, cap)
            text = await installer.install_upload(data, upload.filename or "upload", actor=ACTOR)
        elif isinstance(source, str) and source.strip():
            text = await installer.install(source, actor=ACTOR)
        else:
            raise Refused("send a file (a zip archive or a SKILL.md) or a source (a URL or SKILL.md text)")
    return JSONResponse({"message": text, "skills": list(services.skills.current.skills)}, status_code=201)


@refusals
async def remove(request: Request) -> Response:
    services = panel_context(request).engine.services
    text = await services.skill_installer.remove(request.path_params["name"], actor=ACTOR)
    return JSONResponse({"message": text})


@refusals
async def reload(request: Request) -> Response:
    current = await panel_context(request).engine.services.skills.reload()
    return JSONResponse({"skills": list(current.skills), "problems": list(current.problems)})


def routes() -> list[BaseRoute]:
    return [
        Route("/skills", page, methods=["GET"]),
        Route("/api/skills", list_skills, methods=["GET"]),
        Route("/api/skills", install, methods=["POST"]),
        Route("/api/skills/reload", reload, methods=["POST"]),
        Route("/api/skills/{name}", remove, methods=["DELETE"]),
    ]
