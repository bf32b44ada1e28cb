"""The bot's persona and system prompt: `config/prompt.json`, read once at start (and at /reboot).

    {"persona": "You are Ania, the cheerful helper of the Go club.",
     "system_prompt": ["Answer in the language you are asked in.", "Keep answers short."]}

Each field is a string or a list of lines; the prompt is the persona, a blank line, then the system
prompt. Without the file (or when it is broken: reported, never fatal) `bot.system_prompt` is used. It is
never read per turn: the system prompt must stay byte-stable for the provider's prefix cache.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from core.errors import ConfigError
from core.settings import Settings

log = logging.getLogger(__name__)

PROMPT_FILE = "prompt.json"
MAX_PROMPT = 64 * 1024


class PromptFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    persona: str | list[str] = ""
    system_prompt: str | list[str] = ""

    def text(self) -> str:
        parts = ["\n".join(v) if isinstance(v, list) else v for v in (self.persona, self.system_prompt)]
        return "\n\n".join(p.strip() for p in parts if p.strip())


def parse_prompt(text: str) -> str:
    """The system prompt a prompt.json text gives; ConfigError names the problem."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"prompt.json is not valid JSON: {e}") from None
    try:
        prompt = PromptFile.model_validate(data).text()
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise ConfigError(f"prompt.json: {where}: {err['msg']}") from None
    if not prompt:
        raise ConfigError('prompt.json sets neither "persona" nor "system_prompt" (remove the file to use '
                          "bot.system_prompt)")
    if len(prompt) > MAX_PROMPT:
        raise ConfigError(f"prompt.json gives a prompt longer than {MAX_PROMPT} characters")
    return prompt


@dataclass(frozen=True)
class Persona:
    """The base of the system prompt, as read at start."""

    text: str
    #: Where it came from: "prompt.json" or "bot.system_prompt".
    source: str
    #: Why prompt.json was not used although it exists ("" when fine or absent).
    problem: str = ""


def load_persona(config_dir: Path, settings: Settings) -> Persona:
    path = config_dir / PROMPT_FILE
    if not path.exists():
        return Persona(settings.bot.system_prompt, "bot.system_prompt")
    try:
        return Persona(parse_prompt(path.read_text(encoding="utf-8-sig")), PROMPT_FILE)
    except (OSError, UnicodeDecodeError, ConfigError) as e:
        problem = str(e) if isinstance(e, ConfigError) else f"cannot read prompt.json ({e})"
        log.warning("%s: %s; using bot.system_prompt", path, problem)
        return Persona(settings.bot.system_prompt, "bot.system_prompt", problem)
