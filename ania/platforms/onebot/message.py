"""OneBot v11 messages: segment arrays and CQ-code strings in, segments out.

An event's `message` is either an array of segments (`{"type": "text", "data": {"text": "hi"}}`) or a
string with CQ codes (`hi[CQ:at,qq=10001]`); implementations send either, depending on their
`messagePostFormat`. Both become the same list of `Segment`s. Unknown segment types are kept (and shown
to the model by name), malformed ones are dropped: a message never fails as a whole. `read` walks the
segments once into a `Content`, which the adapter, the bridge and the history read from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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


@dataclass(frozen=True)
class Mention:
    """An @ in the text the model reads; left out when it is the bot's own (the @ that addressed the bot)."""

    qq: str


@dataclass(frozen=True)
class Content:
    """A message's segments read once (`read`), for every reader: the text the model reads (`text`), the
    typed text that commands, approval replies and group prefixes are matched on (`plain`), who is
    @-mentioned, the images `load_images` loads, the id of the quoted message and the file ids whose URL
    the model may ask for. What depends on the bot's own id (learned at login, not part of the message) is
    a method over the parsed fields: `text(self_id)`, `mentions(self_id)`."""

    segments: tuple[Segment, ...] = ()
    plain: str = ""
    #: The `qq` of every @, in order ("all" for @all).
    mentioned: tuple[str, ...] = ()
    images: tuple[Segment, ...] = ()
    #: The first reply segment's message id ("" when the message quotes nothing).
    reply_id: str = ""
    file_ids: tuple[str, ...] = ()
    #: The model's text before the bot's id is known: text, markers, and the @s.
    pieces: tuple[str | Mention, ...] = ()

    def text(self, self_id: str = "", names: Mapping[str, str] | None = None) -> str:
        """The text the model reads: plain text, with a short marker for everything else."""
        names = names or {}
        parts: list[str] = []
        for p in self.pieces:
            if isinstance(p, str):
                parts.append(p)
            elif not (p.qq and p.qq == self_id):
                parts.append("@all" if p.qq == "all" else f"@{names.get(p.qq) or p.qq}")
        return "".join(parts).strip()

    def mentions(self, self_id: str) -> bool:
        """Whether the message @-mentions the bot (never while its id is unknown)."""
        return bool(self_id) and self_id in self.mentioned


def read(segments: Iterable[Segment]) -> Content:
    """Every field of `Content` in one walk. A segment that lacks what its type needs adds no id (an @
    without qq, a reply or a file without an id) but still shows its marker; nothing here raises."""
    segs = tuple(segments)
    plain: list[str] = []
    mentioned: list[str] = []
    images: list[Segment] = []
    files: list[str] = []
    reply = ""
    pieces: list[str | Mention] = []
    for s in segs:
        piece = _piece(s)
        if piece is not None:
            pieces.append(piece)
        if s.type == "text":
            plain.append(s.get("text"))
        elif s.type == "at":
            mentioned.append(s.get("qq"))
        elif s.type == "image":
            images.append(s)
        elif s.type == "file" and s.get("file_id"):
            files.append(s.get("file_id"))
        elif s.type == "reply" and not reply:
            reply = s.get("id")
    return Content(segs, "".join(plain).strip(), tuple(mentioned), tuple(images), reply, tuple(files), tuple(pieces))


def _piece(s: Segment) -> str | Mention | None:
    """A segment's part of the model's text; None for a reply (the quoted message is shown separately)."""
    if s.type == "text":
        return s.get("text")
    if s.type == "at":
        return Mention(s.get("qq"))
    if s.type == "image":
        return "[image]"
    if s.type == "face":
        return f"[face {s.get('id')}]"
    if s.type == "file":
        name = s.get("file") or s.get("name") or "file"
        fid = s.get("file_id")
        return f"[file {name}" + (f", file_id {fid}" if fid else "") + "]"
    return None if s.type == "reply" else f"[{s.type}]"


def parse_content(raw: Any) -> Content:
    """An event's `message` (array, single segment object or CQ string) read into one `Content`."""
    return read(parse_message(raw))


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
