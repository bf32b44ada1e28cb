"""What the model reads: the system prompt (never per-turn), then the stored conversation.

Anything that changes per turn (hook context, todo reminders, injections) is written into the
conversation's tail when the turn starts, so every request starts with the previous request's
messages byte for byte and provider prefix caches keep hitting.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, SystemMessage

from services.container import Services

SUMMARY_TAG = "conversation_summary"


def system_prompt(services: Services) -> str:
    """The persona (config/prompt.json, or bot.system_prompt), read at start, then the skill registry's
    `available_skills` block, which changes only when the skills do (never per turn)."""
    return "\n\n".join(p for p in (services.persona.text, services.skills.prompt_block()) if p)


def request_messages(services: Services, history: Sequence[AnyMessage]) -> list[BaseMessage]:
    return [SystemMessage(system_prompt(services)), *history]


def user_message(session_key: str, user_id: str, text: str, *, named: bool = False) -> HumanMessage:
    """In a group several people talk, so the sender is named in the text the model reads (unless the text
    `named` its senders itself: a batch of several messages, services/flow/batch.py)."""
    content = f"[{user_id}] {text}" if session_key.startswith("g:") and not named else text
    return HumanMessage(content=content, name=None, additional_kwargs={}, response_metadata={"sender": user_id})


def with_tail(message: HumanMessage, blocks: Sequence[str]) -> HumanMessage:
    """The same message (same id) with per-turn blocks appended at its end."""
    extra = "\n\n".join(b for b in blocks if b)
    if not extra:
        return message
    return message.model_copy(update={"content": f"{message.content}\n\n{extra}"})


def text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
