"""The texts the knowledge tools and `ania kb` share: a stored document, search hits, a document list.

Apart from the tools so that `ania kb` (ania/kb_cli.py) reads them without importing the run context and,
through it, every service: each `ania kb` command is a process start.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from services.knowledge import GLOBAL, Added, DocInfo, Hit

RESULT_RUNES = 8000
CUT = "\n[results cut at {limit} characters; search with more specific words for the rest]"


def plural(n: int, noun: str, nouns: str = "") -> str:
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def scope_label(scope: str) -> str:
    return "the global knowledge base" if scope == GLOBAL else "this chat's knowledge base"


def when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(epoch)) if epoch else "?"


def added_text(added: Added, where: str, keywords_only: bool) -> str:
    d = added.doc
    if added.duplicate:
        return f'Already stored as {d.id} ("{d.title}") in {where}; nothing added.'
    text = f'Stored "{d.title}" as {d.id} in {where}: {plural(d.chunks, "passage")}, {d.runes:,} characters.'
    if keywords_only:
        text += " The embedding service did not answer, so it is found by keywords only for now."
    return text


def hits_text(hits: Sequence[Hit], header: str, entry: str, limit: int = RESULT_RUNES) -> str:
    """The hits as the model reads them, at most `limit` characters in total."""
    out = header
    for n, hit in enumerate(hits, 1):
        c = hit.chunk
        part = "\n\n" + entry.format(n=n, title=c.title, doc=c.doc_id, pos=c.pos + 1, score=hit.score,
                                     scope=scope_label(c.scope)) + "\n" + c.text
        if len(out) + len(part) > limit:
            room = limit - len(out) - len(CUT.format(limit=limit))
            if room > 80:
                out += part[:room] + "…"
            return out + CUT.format(limit=limit)
        out += part
    return out


def docs_text(docs: Sequence[DocInfo], total: int, where: str) -> str:
    if not docs:
        return f"No documents in {where}."
    lines = [f"Documents in {where} ({len(docs)} of {total}, newest first):"]
    for d in docs:
        noun = "passage" if d.chunks == 1 else "passages"
        lines.append(f'- {d.id} "{d.title}": {d.chunks} {noun}, {d.runes:,} characters, added {when(d.added)}')
    return "\n".join(lines)
