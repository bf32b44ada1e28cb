"""OneBot v11 messages: segment arrays and CQ-code strings in, segments out.

An event's `message` is either an array of segments (`{"type": "text", "data": {"text": "hi"}}`) or a
string with CQ codes (`hi[CQ:at,qq=10001]`); implementations send either, depending on their
`messagePostFormat`. Both become the same list of `Segment`s. Unknown segment types are kept (and shown
to the model by name), malformed ones are dropped: a message never fails as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_CQ = re.compile(r"\[CQ:([A-Za-z0-9_.\-]+)((?:,[^\]]*)?)\]")


@dataclass(frozen=True)
class Segment:
    type: str
    data: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str:
        return self.data.get(key, "")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "data": dict(self.data)}


def text(value: str) -> Segment:
    return Segment("text", {"text": value})


def unescape(value: str, in_code: bool = False) -> str:
    out = value.replace("&#91;", "[").replace("&#93;", "]")
    if in_code:
        out = out.replace("&#44;", ",")
    return out.replace("&amp;", "&")


def escape(value: str, in_code: bool = False) -> str:
    out = value.replace("&", "&amp;").replace("[", "&#91;").replace("]", "&#93;")
    return out.replace(",", "&#44;") if in_code else out


def parse_cq(raw: str) -> list[Segment]:
    """A CQ-code string as segments (spec: message/string.md)."""
    out: list[Segment] = []
    pos = 0
    for m in _CQ.finditer(raw):
        if m.start() > pos:
            out.append(text(unescape(raw[pos:m.start()])))
        data: dict[str, str] = {}
        for part in m.group(2)[1:].split(",") if m.group(2) else []:
            key, eq, value = part.partition("=")
            if key and eq:
                data[key] = unescape(value, in_code=True)
        out.append(Segment(m.group(1), data))
        pos = m.end()
    if pos < len(raw):
        out.append(text(unescape(raw[pos:])))
    return out


def to_cq(segments: Iterable[Segment]) -> str:
    parts = []
    for s in segments:
        if s.type == "text":
            parts.append(escape(s.get("text")))
        else:
            args = "".join(f",{k}={escape(str(v), in_code=True)}" for k, v in s.data.items())
            parts.append(f"[CQ:{s.type}{args}]")
    return "".join(parts)


def parse_message(raw: Any) -> list[Segment]:
    """An event's `message` (array, single segment object or CQ string) as segments; junk is skipped."""
    if isinstance(raw, str):
        return parse_cq(raw)
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            continue
        data = item.get("data") or {}
        if not isinstance(data, dict):
            continue
        out.append(Segment(item["type"], {str(k): _as_text(v) for k, v in data.items() if v is not None}))
    return out


def _as_text(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return v if isinstance(v, str) else str(v)


def plain_text(segments: Iterable[Segment]) -> str:
    return "".join(s.get("text") for s in segments if s.type == "text")


def render(segments: Iterable[Segment], self_id: str = "", names: dict[str, str] | None = None) -> str:
    """The text the model reads: plain text, with a short marker for everything else."""
    names = names or {}
    parts: list[str] = []
    for s in segments:
        if s.type == "text":
            parts.append(s.get("text"))
        elif s.type == "at":
            qq = s.get("qq")
            if qq and qq == self_id:
                continue  # the @ that addressed the bot is not part of what was said
            parts.append("@all" if qq == "all" else f"@{names.get(qq) or qq}")
        elif s.type == "image":
            parts.append("[image]")
        elif s.type == "face":
            parts.append(f"[face {s.get('id')}]")
        elif s.type == "file":
            name = s.get("file") or s.get("name") or "file"
            fid = s.get("file_id")
            parts.append(f"[file {name}" + (f", file_id {fid}" if fid else "") + "]")
        elif s.type == "reply":
            continue  # shown separately (the quoted message)
        else:
            parts.append(f"[{s.type}]")
    return "".join(parts).strip()


def images_of(segments: Iterable[Segment]) -> list[Segment]:
    return [s for s in segments if s.type == "image"]


def reply_id(segments: Iterable[Segment]) -> str:
    for s in segments:
        if s.type == "reply" and s.get("id"):
            return s.get("id")
    return ""


def mentions(segments: Iterable[Segment], self_id: str) -> bool:
    return bool(self_id) and any(s.type == "at" and s.get("qq") == self_id for s in segments)


def split_text(body: str, limit: int) -> list[str]:
    """Split a long reply into messages of at most `limit` runes, on paragraph boundaries when possible,
    then on line ends, then hard."""
    body = body.strip()
    if len(body) <= limit:
        return [body] if body else []
    chunks: list[str] = []
    current = ""
    for para in _pieces(body, limit):
        candidate = f"{current}\n\n{para}" if current else para
        if len(candidate) <= limit:
            current = candidate
        else:
            if current:
                chunks.append(current)
            current = para
    if current:
        chunks.append(current)
    return chunks


def _pieces(body: str, limit: int) -> list[str]:
    out: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        para = para.strip()
        if not para:
            continue
        if len(para) <= limit:
            out.append(para)
            continue
        line_buf = ""
        for line in para.split("\n"):
            while len(line) > limit:
                if line_buf:
                    out.append(line_buf)
                    line_buf = ""
                cut = line.rfind(" ", limit // 2, limit + 1)
                out.append(line[:cut] if cut > 0 else line[:limit])
                line = line[cut + 1:] if cut > 0 else line[limit:]
            candidate = f"{line_buf}\n{line}" if line_buf else line
            if len(candidate) <= limit:
                line_buf = candidate
            else:
                out.append(line_buf)
                line_buf = line
        if line_buf:
            out.append(line_buf)
    return out
