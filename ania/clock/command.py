"""`/clock` (R2, C6): people manage scheduled tasks from the chat.

The session's users manage the session's tasks; an admin manages any task by id and lists every chat's
with `/clock list all`. It is a human command, so it acts with the sender's rights (the clock tools act
for the model, which never reaches another chat's tasks).
"""

from __future__ import annotations

from core.errors import ToolError
from services.clock import run_line
from services.container import Services

USAGE = ("Usage: /clock list [all] | /clock run <id> | /clock pause <id> | /clock resume <id> | /clock del <id> | "
         "/clock log [<id>]")
NEED_ID = "Give the task's id, e.g. /clock {verb} 3 (/clock list shows the ids)."
ADMINS_ONLY = "Only an admin can list every chat's tasks."
NONE_HERE = "No scheduled tasks in this chat."
NONE_AT_ALL = "No scheduled tasks in any chat."
NO_RUNS = "No runs logged yet."


def _task_id(verb: str, rest: list[str]) -> int:
    if len(rest) != 1 or not rest[0].isdigit():
        raise ToolError(NEED_ID.format(verb=verb))
    return int(rest[0])


async def clock_command(services: Services, session_key: str, user_id: str, arg: str) -> str:
    """The reply to `/clock <arg>`; bad input gets a clear line, never an exception."""
    words = arg.split()
    verb = words[0].lower() if words else "list"
    rest = words[1:]
    admin = services.admins.is_admin(user_id)
    scope = None if admin else session_key  # None: any chat
    clock = services.clock
    try:
        if verb == "list":
            everyone = rest == ["all"]
            if everyone and not admin:
                return ADMINS_ONLY
            if rest and not everyone:
                return USAGE
            views = clock.views(None if everyone else session_key)
            if not views:
                return NONE_AT_ALL if everyone else NONE_HERE
            return "\n".join(v.line(with_session=everyone) for v in views)
        if verb == "run":
            task_id = _task_id(verb, rest)
            run_id = await clock.run_now(scope, task_id, user_id)
            return f"Started task {task_id} now (run {run_id}); its reply goes to its chat."
        if verb in ("pause", "resume"):
            view = clock.update(scope, _task_id(verb, rest), enabled=verb == "resume")
            return f"{'Paused' if verb == 'pause' else 'Resumed'} task {view.line().removeprefix('- ')}"
        if verb in ("del", "delete", "rm"):
            view = clock.delete(scope, _task_id("del", rest))
            name = f' "{view.task.name}"' if view.task is not None else ""
            return f"Deleted task {view.id}{name}."
        if verb == "log":
            one = _task_id(verb, rest) if rest else None
            runs = clock.log(scope if one is not None else session_key, one, 10)
            return "\n".join(run_line(r, clock.tz) for r in runs) if runs else NO_RUNS
    except ToolError as e:
        return str(e)[:1].upper() + str(e)[1:]
    return USAGE
