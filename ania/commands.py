"""The texts and rights of `/help` and `/cmd` (R2, G8), and the answer to an unknown command; ania/entry.py
dispatches them.

`/cmd list` is for everyone; `/cmd add <name> <template>` and `/cmd del <name>` only for admins. They edit
`config/commands.json` (services/commands.py), which takes effect at once.
"""

from __future__ import annotations

import difflib
import re

from core.errors import ConfigError
from services.commands import BUILTIN_COMMANDS, CommandStore
from services.container import Services

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
#: A first word that reads as a command: a slash and a name. Not a path (`/usr/bin is ...`), not `/5`, not `/ x`.
COMMAND_WORD = re.compile(r"^/[A-Za-z][\w-]*$")
UNKNOWN = ("Unknown command {word}; nothing was sent to the model.{hint} (To ask the model about it, start "
           "your message with a word.)")


async def help_text(commands: CommandStore) -> str:
    lines = ["Commands:", *(f"{name} — {about}" for name, about in BUILTIN_HELP)]
    custom = await commands.commands()
    if custom:
        lines += ["Custom commands:", *(c.line() for c in custom.values())]
    return "\n".join(lines)


def command_word(text: str) -> str | None:
    """The first word when it reads as a command name that is not a built-in (those are answered before)."""
    first = text.split(maxsplit=1)[0] if text.strip() else ""
    return first if COMMAND_WORD.match(first) and first[1:] not in BUILTIN_COMMANDS else None


async def unknown_command(commands: CommandStore, word: str) -> str:
    """Why: a mistyped command (`/stpo`, `/nosuch`) used to go to the model as text, costing a call and
    answering something else. The reply names it, suggests the closest command, and lists them all."""
    names = [name.split()[0] for name, _ in BUILTIN_HELP] + [f"/{n}" for n in await commands.commands()]
    close = difflib.get_close_matches(word.lower(), names, n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    return UNKNOWN.format(word=word, hint=hint) + "\n" + await help_text(commands)


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
