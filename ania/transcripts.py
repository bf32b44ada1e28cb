"""A session as a document: the JSON and Markdown of `ania sessions export` and the panel's transcript.

One place for what may leave the machine: `secret_values` lists the values to mask (sensitive settings and
secret-looking environment variables) and `redact` masks them; the panel and the command line both export
through `export_text`. `--full` (and the panel) walk the checkpoints for the whole conversation with each
compaction where it happened (checkpoints/transcript.py); without it, the latest history.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)

from checkpoints.transcript import Entry

if TYPE_CHECKING:
    from core.settings import Paths, Settings

SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
REDACTED = "[redacted]"
SUMMARY = re.compile(r"^\s*<conversation_summary>\s*(.*?)\s*</conversation_summary>\s*$", re.S)


def secret_values(paths: Paths, settings: Settings | None = None) -> list[str]:
    """Values that must never appear in an export: sensitive settings (the running ones when given, else the
    config files') and secret-looking environment variables."""
    from core.settings import load_settings, registry
    from core.settings.cluster import password_of

    values = {v for k, v in os.environ.items() if SECRET_ENV.search(k) and len(v) >= 8}
    if settings is None:
        try:
            settings = load_settings(paths.config_dir)
        except Exception:  # noqa: BLE001 - a broken config still exports, masking the environment's secrets
            settings = None
    for info in registry():
        if info.sensitive and settings is not None:
            section, _, key = info.key.partition(".")
            value = getattr(getattr(settings, section), key, "")
            if isinstance(value, str) and len(value) >= 4:
                values.add(value)
                if len(password := password_of(value)) >= 4:  # a URL's password (cluster.postgres_url) alone too
                    values.add(password)
    return sorted(values, key=len, reverse=True)


def redact(text: str, values: list[str]) -> str:
    for v in values:
        text = text.replace(v, REDACTED)
    return text


def masked(value: Any, paths: Paths, settings: Settings | None = None) -> Any:
    """A JSON-able value with every secret value masked (the panel's answers: a model may echo a key)."""
    return json.loads(redact(json.dumps(value, ensure_ascii=False), secret_values(paths, settings)))


def content_text(content: Any) -> str:
    """A message's text, an attachment as `[image]` (and so on)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            parts.append(f"[{block.get('type', 'attachment').replace('_url', '')}]")
    return "\n".join(parts)


def summary_text(message: BaseMessage) -> str:
    """A compaction summary without its tags."""
    text = content_text(message.content)
    found = SUMMARY.match(text)
    return found.group(1) if found else text


def _message_md(m: BaseMessage) -> list[str]:
    text = content_text(m.content)
    if isinstance(m, HumanMessage):
        return [f"**{m.response_metadata.get('sender') or 'user'}**:", "", text, ""]
    if isinstance(m, AIMessage):
        out = ["**assistant**:", "", text] if text else ["**assistant**:"]
        out += [f"- calls `{c['name']}` {json.dumps(c['args'], ensure_ascii=False, sort_keys=True)}"
                for c in m.tool_calls]
        return [*out, ""]
    if isinstance(m, ToolMessage):
        status = m.response_metadata.get("ania_status") or m.status
        return [f"**tool {m.name}** ({status}):", "", *(f"> {line}" for line in text.splitlines() or [""]), ""]
    if isinstance(m, SystemMessage):
        return ["**summary of earlier turns**:", "", text, ""]
    return []


def markdown(key: str, messages: list[AnyMessage]) -> str:
    out = [f"# Session {key}", ""]
    for m in messages:
        out += _message_md(m)
    return "\n".join(out)


def markdown_full(key: str, entries: list[Entry]) -> str:
    out = [f"# Session {key} (the whole conversation)", ""]
    for e in entries:
        if e.kind == "compaction":
            out += ["---", "", f"**compacted here: {e.summarized} earlier message(s) summarized as**:", "",
                    summary_text(e.message), "", "---", ""]
        else:
            out += _message_md(e.message)
    return "\n".join(out)


def entry_dict(e: Entry) -> dict[str, Any]:
    """An entry as JSON: the message as LangChain's dict, where and when it was written."""
    out: dict[str, Any] = {"kind": e.kind, "checkpoint": e.checkpoint,
                           "at": e.at.isoformat(timespec="seconds") if e.at else None,
                           "message": message_to_dict(e.message)}
    if e.kind == "compaction":
        out.update(summarized=e.summarized, summary=summary_text(e.message))
    return out


def export_text(key: str, fmt: str, paths: Paths, *, messages: list[AnyMessage] | None = None,
                entries: list[Entry] | None = None, settings: Settings | None = None) -> str:
    """The export document (`fmt` json or md) of the latest history, or with `entries` of the whole
    conversation; secrets redacted."""
    if entries is not None:
        text = (markdown_full(key, entries) if fmt == "md" else json.dumps(
            {"session": key, "exported_at": _now(), "full": True, "entries": [entry_dict(e) for e in entries]},
            ensure_ascii=False, indent=1))
    else:
        from langchain_core.messages import messages_to_dict

        text = (markdown(key, messages or []) if fmt == "md" else json.dumps(
            {"session": key, "exported_at": _now(), "messages": messages_to_dict(messages or [])},
            ensure_ascii=False, indent=1))
    return redact(text, secret_values(paths, settings))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
