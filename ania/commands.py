"""The texts and rights of `/help` and `/cmd` (R2, G8); ania/entry.py dispatches them.

`/cmd list` is for everyone; `/cmd add <name> <template>` and `/cmd del <name>` only for admins. They edit
`config/commands.json` (services/commands.py), which takes effect at once.
"""

from __future__ import annotations

from services.commands import CommandStore
from services.container import Services
from services.errors import ConfigError

#: The built-in commands, as /help lists them (names in services.commands.BUILTIN_COMMANDS).
BUILTIN_HELP = (
    ("/help", "this list"),
    ("/stop", "stop the running message (yours; an admin stops everyone's)"),
    ("/plan on|off", "plan mode: tools with side effects are blocked (admins)"),
    ("/cmd list | add <name> <template> | del <name>", "custom commands ($args in a template takes the "
     "arguments; add and del: admins)"),
    ("/reboot", "restart the engine with the settings and files as they are now (admins)"),
    ("/clock list [all] | run|pause|resume|del <id> | log [<id>]", "this chat's scheduled tasks (admins: any)"),
    ("/usage", "tokens this chat and all chats used today, against the daily quotas"),
)
CMD_USAGE = "Usage: /cmd list | /cmd add <name> <template> | /cmd del <name>"


async def help_text(commands: CommandStore) -> str:
    lines = ["Commands:", *(f"{name} — {about}" for name, about in BUILTIN_HELP)]
    custom = await commands.commands()
    if custom:
        lines += ["Custom commands:", *(c.line() for c in custom.values())]
    return "\n".join(lines)


async def cmd_command(services: Services, session_key: str, user_id: str, arg: str) -> str:
    action, _, rest = arg.strip().partition(" ")
    commands = services.commands
    if action in ("", "list"):
        return await commands.listing()
    if action not in ("add", "del"):
        return CMD_USAGE
    if not services.admins.is_admin(user_id):
        return "Only an admin can add or delete custom commands."
    name, _, template = rest.strip().partition(" ")
    name = name.removeprefix("/")
    if not name or (action == "add" and not template.strip()):
        return CMD_USAGE
    try:
        if action == "add":
            return await commands.add(name, template, session=session_key, actor=user_id)
        return await commands.delete(name, session=session_key, actor=user_id)
    except ConfigError as e:
        return f"Not changed: {e}"
    except OSError as e:
        return f"Not changed: could not write {commands.path.name} ({e.strerror or e})"
