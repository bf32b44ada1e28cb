"""The data the editing pages' screenshots show (bench/panel_screenshots.py `seed_more`): a scheduled task
with a run, saved teams, a hook, custom commands and a persona, a running MCP server. Everything goes in
through the same services the panel calls."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable

from services.clock import ClockRun, RunOutcome
from services.teams import make_team
from tests.mcp_servers.harness import DEMO
from tests.panel_helpers import PanelHarness

HOOKS = {"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "./hooks/no-rm.sh",
                                                                 "timeout": 5}]}]}}
COMMANDS = {"commands": {"tr": {"prompt": "Translate into English: $args", "description": "Translate a text"},
                         "joke": "Tell a short joke about $args"}}
PROMPT = {"persona": "You are Ania, the cheerful helper of the Go club.",
          "system_prompt": ["Answer in the language you are asked in.", "Keep answers short."]}


async def clock(p: PanelHarness) -> None:
    service = p.ctx.services.clock
    view = service.create("g:10001", "panel", "0 9 * * 1-5", "Post today's practice schedule.", "morning post")
    service.create("f:42", "42", "@every 2h", "Remind me to drink water.", "water")
    # One finished run in the log (written as a run writes it: the model's queue belongs to the other seeds).
    now = time.time()
    run = ClockRun("3f9a1c2b7d4e", view.id, view.session, "morning post", "running", now - 60, started=now - 60,
                   thread=f"clock:{view.id}:3f9a1c2b7d4e")
    service.db.start_run(run, fired=False)
    service.db.finish_run(run.id, view.id, RunOutcome("success", reply="Practice today: 19:00, room B.",
                                                      delivered=True, usage={"total_tokens": 812}), delete_task=False)


async def teams(p: PanelHarness) -> None:
    limit = p.ctx.services.settings.subagent.max_timeout_sec
    for name, purpose, members, scope in [
        ("reviewers", "Review a plan from two sides.", [("critic", "List the risks."), ("fan", "List the gains.")],
         "global"),
        ("翻译组", "Translate and check each other.", [("translator", "Translate."), ("checker", "Check it.")],
         "g:10001"),
    ]:
        p.ctx.services.teams.save(make_team(name, purpose, members, scope, None, None, limit))


async def hooks(p: PanelHarness) -> None:
    await p.ctx.services.config.write_file("hooks_json", json.dumps(HOOKS, indent=2), session="", actor="panel",
                                           approved_by="")


async def commands(p: PanelHarness) -> None:
    config = p.ctx.services.config
    await config.write_file("commands_json", json.dumps(COMMANDS, indent=2), session="", actor="panel",
                            approved_by="")
    await config.write_file("prompt_json", json.dumps(PROMPT, indent=2), session="", actor="panel", approved_by="")


async def mcp(p: PanelHarness) -> None:
    await p.ctx.services.mcp.control.add_server("demo", {"command": sys.executable, "args": [DEMO, "stdio"]},
                                                actor="panel")


#: Page module → its seed (bench/panel_screenshots.py `seed_more`).
EDIT_SEEDS: dict[str, Callable[[PanelHarness], Awaitable[None]]] = {
    "clock": clock, "teams": teams, "hooks": hooks, "commands": commands, "mcp": mcp}
