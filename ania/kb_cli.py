"""`ania kb add|list|search|delete`: the operator's side of the knowledge base (the global base above all).

The operator is an admin: any scope can be written (`--scope global|g:<id>|f:<id>`, default global).
With the embedded store, run it while the bot is stopped (or point both at a Chroma server with
`knowledge.chroma_url`): an embedded Chroma folder is not meant to be written by two processes at once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.errors import ToolError
from core.settings import Paths, load_settings
from services.knowledge import GLOBAL, KnowledgeService, check_scope
from tools.knowledge_text import added_text, docs_text, hits_text, plural

#: Batches above this many bytes (or files) show a progress bar on a terminal.
PROGRESS_BYTES = 256 * 1024
PROGRESS_FILES = 5
SEARCH_ENTRY = '[{n}] "{title}" ({doc}, chunk {pos}, score {score:.3f}, {scope})'


def _say(text: str, err: bool = False) -> None:
    (sys.stderr if err else sys.stdout).write(text + "\n")


async def run(args: argparse.Namespace) -> int:
    paths = Paths.from_env(check=True)
    knowledge = KnowledgeService(load_settings(paths.config_dir), paths.data_dir)  # as compose builds it
    try:
        if args.action == "add":
            return await _add(knowledge, args)
        scope = check_scope(getattr(args, "scope", GLOBAL))
        if args.action == "list":
            docs, total = await knowledge.list_documents(scope, max(1, args.limit))
            _say(docs_text(docs, total, scope))
        elif args.action == "search":
            hits = await knowledge.search(scope, args.query, max(1, min(args.top_k, 50)))
            _say(hits_text(hits, f"{plural(len(hits), 'passage')}, best first:", SEARCH_ENTRY) if hits else "No match.")
        else:
            info = await knowledge.delete_document(args.doc_id, None, None)
            _say(f'Deleted {info.id} "{info.title}" from {info.scope} ({plural(info.chunks, "passage")}).')
        return 0
    except ToolError as e:
        _say(f"ania: {e}", err=True)
        return 1
    finally:
        await knowledge.aclose()


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ToolError(f"cannot read it ({e.strerror or e})") from None
    if b"\x00" in data[:8192]:
        raise ToolError("not a text file (text and Markdown only)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ToolError("not UTF-8 text (text and Markdown only)") from None


async def _add(knowledge: KnowledgeService, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    scope = check_scope(args.scope)
    if args.title is not None and len(args.files) != 1:
        raise ToolError("--title names one document: give exactly one FILE with it")
    files = [Path(f) for f in args.files]
    total = sum(f.stat().st_size for f in files if f.is_file())
    large = total > PROGRESS_BYTES or len(files) > PROGRESS_FILES
    failed = 0
    with tqdm(total=total, unit="B", unit_scale=True, desc="adding", file=sys.stderr,
              disable=not (large and sys.stderr.isatty())) as bar:
        for f in files:
            try:
                added = await knowledge.add_document(scope, args.title or f.name, _read(f))
                line = added_text(added, scope, knowledge.embedder.enabled and not added.vectors)
                bar.write(f"{f}: {line}", file=sys.stdout)
            except ToolError as e:
                failed += 1
                bar.write(f"ania: {f}: {e}", file=sys.stderr)
            bar.update(f.stat().st_size if f.is_file() else 0)
    return 1 if failed else 0
